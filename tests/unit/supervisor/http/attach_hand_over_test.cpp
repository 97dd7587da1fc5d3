// A computer's GET /vm/attach: a request that is no WebSocket upgrade is answered without
// asking the door; otherwise the door decides, and the socket leaves the connection only
// when it was handed over (or is refused as a WebSocket with 4003).
#include "supervisor/http/attach_hand_over.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "tests/unit/supervisor/http/loopback.hpp"

namespace sb::supervisor {
namespace {

namespace http = boost::beast::http;

Request upgrade(std::string_view version = "13", bool key = true) {
  Request request{http::verb::get, "/vm/attach", 11};
  request.set(http::field::host, "switchboard");
  request.set(http::field::connection, "Upgrade");
  request.set(http::field::upgrade, "websocket");
  request.set(http::field::sec_websocket_version, version);
  if (key) request.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
  request.set(http::field::authorization, "Bearer s3cret");
  return request;
}

struct Door {
  bool admits = false;
  HandOver verdict = HandOver::kWorkerUnavailable;
  int asked = 0;
  int entered = 0;
  std::optional<std::string> token;
  std::string bytes;
  base::UniqueFd taken;

  ComputerDoor door() {
    return ComputerDoor{
        .admits =
            [this](const std::optional<std::string>& presented, const std::string&) {
              ++asked;
              token = presented;
              return admits;
            },
        .enter =
            [this](const std::string&, base::UniqueFd& socket, std::string upgrade_bytes,
                   const std::string&) {
              ++entered;
              bytes = std::move(upgrade_bytes);
              if (verdict == HandOver::kDone) taken = std::move(socket);
              return verdict;
            }};
  }
};

TEST(AttachHandOver, ARequestThatIsNoUpgradeNeverReachesTheDoor) {
  Loopback loop;
  Door door;
  const boost::beast::flat_buffer nothing;
  Request plain{http::verb::get, "/vm/attach", 11};
  EXPECT_EQ(attach_computer(loop.server(), plain, nothing, "p", door.door())->status, 400);
  const auto old_version = attach_computer(loop.server(), upgrade("12"), nothing, "p", door.door());
  EXPECT_EQ(old_version->status, 426);
  EXPECT_EQ(old_version->headers.back(),
            (std::pair<std::string, std::string>{"Sec-WebSocket-Version", "13"}));
  EXPECT_EQ(attach_computer(loop.server(), upgrade("13", false), nothing, "p", door.door())->body,
            "missing Sec-WebSocket-Key");
  EXPECT_EQ(door.asked, 0);
}

TEST(AttachHandOver, AnUnknownSecretOrAWorkerRestartingKeepsTheSocketForTheAnswer) {
  Loopback loop;
  Door door;
  const boost::beast::flat_buffer nothing;
  EXPECT_EQ(attach_computer(loop.server(), upgrade(), nothing, "p", door.door())->status, 401);
  EXPECT_EQ(door.token, "s3cret");
  EXPECT_EQ(door.entered, 0) << "an unknown secret never reaches the hand-over";
  EXPECT_TRUE(loop.server().socket().is_open());
  door.admits = true;
  EXPECT_EQ(attach_computer(loop.server(), upgrade(), nothing, "p", door.door())->status, 503);
  EXPECT_TRUE(loop.server().socket().is_open());
}

TEST(AttachHandOver, HandsOverTheSocketWithTheRequestAndWhatFollowedIt) {
  Loopback loop;
  Door door{.admits = true, .verdict = HandOver::kDone};
  boost::beast::flat_buffer read_past;
  const std::string early = "\x81\x05hello";
  boost::asio::buffer_copy(read_past.prepare(early.size()), boost::asio::buffer(early));
  read_past.commit(early.size());
  EXPECT_FALSE(attach_computer(loop.server(), upgrade(), read_past, "p", door.door()));
  EXPECT_FALSE(loop.server().socket().is_open());
  EXPECT_TRUE(door.bytes.starts_with("GET /vm/attach HTTP/1.1\r\n"));
  EXPECT_TRUE(door.bytes.ends_with("\r\n\r\n" + early));
  ASSERT_TRUE(door.taken.valid());
  ASSERT_EQ(::write(door.taken.get(), "x", 1), 1);
  ASSERT_TRUE(loop.run_until([&] { return loop.received() == "x"; }));
}

TEST(AttachHandOver, ARevokedSecretIsClosedAsAWebSocketWith4003) {
  Loopback loop;
  Door door{.admits = true, .verdict = HandOver::kRevoked};
  const boost::beast::flat_buffer nothing;
  EXPECT_FALSE(attach_computer(loop.server(), upgrade(), nothing, "p", door.door()));
  // 101, then a close frame: opcode 8, FIN, the code 4003 (0x0fa3) first in its payload.
  ASSERT_TRUE(loop.run_until([&] { return loop.received_contains("\x0f\xa3"); }));
  EXPECT_TRUE(loop.received().starts_with("HTTP/1.1 101 Switching Protocols\r\n"));
  EXPECT_NE(body_of(loop.received()).find('\x88'), std::string_view::npos);
}

}  // namespace
}  // namespace sb::supervisor
