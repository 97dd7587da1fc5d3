// An MCP server on this machine that speaks Streamable HTTP (docs/connect.md, "An HTTP
// server"). Each message from the switchboard is POSTed to the endpoint, in order; what
// comes back (a JSON body, or the messages of an event stream) is relayed as it is. The
// session id of the initialize answer goes on every later request, and once the session
// is initialized a GET stream carries the server's own messages. A request the server
// cannot take (unreachable, an HTTP error) gets a JSON-RPC error back; a session the
// server has ended (404) ends this object, and with it the attach. stop() ends the
// session with DELETE.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "connect/mcp_server.hpp"
#include "shared/dial_target.hpp"

namespace sb::connect {

class HttpUpstream : public McpServer {
 public:
  HttpUpstream(boost::asio::io_context& io, DialTarget endpoint, std::string name);
  ~HttpUpstream() override;

  std::string start() override;
  bool ended() const override;
  boost::asio::awaitable<bool> write(std::string_view message) override;
  boost::asio::awaitable<std::optional<std::string>> read() override;
  boost::asio::awaitable<void> stop(std::chrono::milliseconds grace) override;

 private:
  struct State;  // shared with the requests still running
  std::shared_ptr<State> state_;
};

}  // namespace sb::connect
