// The MCP server that switchboard-connect attaches: a child speaking stdio
// (stdio_server.hpp) or a local Streamable HTTP endpoint (http_upstream.hpp). One object
// is one MCP session, kept across attaches (kept_session.hpp) until the server ends it.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace sb::connect {

class McpServer {
 public:
  virtual ~McpServer() = default;

  // Gets it going. What failed, or "".
  virtual std::string start() = 0;
  // Whether it has gone (exited, or its session ended) and cannot serve another message.
  virtual bool ended() const = 0;
  // Hands one message to it; false once it cannot take more.
  virtual boost::asio::awaitable<bool> write(std::string_view message) = 0;
  // The next message from it; nullopt once it has ended.
  virtual boost::asio::awaitable<std::optional<std::string>> read() = 0;
  // Ends it, within `grace`; returns once it is over.
  virtual boost::asio::awaitable<void> stop(std::chrono::milliseconds grace) = 0;
};

// Whether `line` is one JSON-RPC message as a transport carries it: one JSON object (or
// a batch array), nothing else.
bool one_message(std::string_view line);

}  // namespace sb::connect
