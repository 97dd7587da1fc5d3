#include "supervisor/control/control_client.hpp"

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "base/asio_names.hpp"

namespace sb::supervisor {

using namespace sb::asio_names;
using local = net::local::stream_protocol;

net::awaitable<ControlAnswer> ask_control(std::filesystem::path path, std::string config_path,
                                          std::string request, std::chrono::milliseconds deadline) {
  auto executor = co_await net::this_coro::executor;
  local::socket socket(executor);
  net::steady_timer timer(executor, deadline);
  timer.async_wait([&socket](const boost::system::error_code& error) {
    if (error) return;
    boost::system::error_code ignored;
    socket.close(ignored);
  });
  auto [connect_error] = co_await socket.async_connect(local::endpoint(path.string()), kAwait);
  if (connect_error) {
    timer.cancel();
    co_return ControlAnswer{.failure = "no switchboard answers on " + path.string() + " (" +
                                       connect_error.message() + "); is `switchboard serve -c " +
                                       config_path + "` running?"};
  }
  const std::string line = request + "\n";
  auto [write_error, written] = co_await net::async_write(socket, net::buffer(line), kAwait);
  std::string reply;
  auto [read_error, read] = co_await net::async_read(socket, net::dynamic_buffer(reply), kAwait);
  timer.cancel();
  if (write_error || read_error != net::error::eof) {
    const auto& error = write_error ? write_error : read_error;
    const std::string why =
        error == net::error::operation_aborted ? std::string("timed out") : error.message();
    co_return ControlAnswer{.failure = "no answer on " + path.string() + " (" + why + ")"};
  }
  co_return ControlAnswer{.reply = std::move(reply)};
}

}  // namespace sb::supervisor
