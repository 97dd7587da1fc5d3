// While a call is pending: a caller that hangs up is noticed at once, one that only
// half-closed is asked with a 100 Continue and keeps its call, and one that sends its next
// request early is neither.
#include "supervisor/http/hang_up_watch.hpp"

#include <sys/socket.h>

#include <boost/asio/write.hpp>

#include "tests/unit/supervisor/http/loopback.hpp"

namespace sb::supervisor {
namespace {

TEST(HangUpWatch, NoticesACallerThatHungUp) {
  Loopback loop;
  HangUpWatch watch(loop.wire());
  bool hung_up = false;
  watch.start([&] { hung_up = true; });
  loop.settle();
  EXPECT_FALSE(hung_up);
  loop.client().close();
  ASSERT_TRUE(loop.run_until([&] { return hung_up; }));
}

TEST(HangUpWatch, AsksACallerThatHalfClosedAndKeepsItsCall) {
  Loopback loop;
  HangUpWatch watch(loop.wire());
  bool hung_up = false;
  watch.start([&] { hung_up = true; });
  loop.client().shutdown(boost::asio::ip::tcp::socket::shutdown_send);
  ASSERT_TRUE(loop.run_until([&] { return loop.received() == "HTTP/1.1 100 Continue\r\n\r\n"; }));
  loop.settle();
  EXPECT_FALSE(hung_up);
  watch.stop();
}

TEST(HangUpWatch, LeavesAPipelinedRequestForLater) {
  Loopback loop;
  HangUpWatch watch(loop.wire());
  bool hung_up = false;
  watch.start([&] { hung_up = true; });
  boost::asio::write(loop.client(), boost::asio::buffer(std::string_view("GET / HTTP/1.1\r\n")));
  loop.settle();
  EXPECT_FALSE(hung_up);
  char byte;
  EXPECT_EQ(::recv(loop.server().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT), 1)
      << "the request is still there to be read";
}

TEST(HangUpWatch, IsQuietOnceStopped) {
  Loopback loop;
  HangUpWatch watch(loop.wire());
  bool hung_up = false;
  watch.start([&] { hung_up = true; });
  watch.stop();
  loop.client().close();
  loop.settle();
  EXPECT_FALSE(hung_up);
}

}  // namespace
}  // namespace sb::supervisor
