// A synchronous HTTP/1.1 client for the end-to-end tests (Beast stays in the .cpp). Every
// operation has a deadline; a connection can be kept alive across requests, or a request
// can be sent and the connection closed before the answer arrives (a caller hanging up
// mid-call). An answer can also be read as it arrives: its head, then the events of a
// text/event-stream body one at a time (chunked or not), then the rest.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace harness {

using Headers = std::vector<std::pair<std::string, std::string>>;

// One event of a text/event-stream body (the WHATWG "server-sent events" format).
struct SseEvent {
  std::string event;  // the `event:` field ("" when absent)
  std::string data;   // the `data:` lines, joined by "\n"
  std::string id;     // the `id:` field ("" when absent)
  std::string retry;  // the `retry:` field ("" when absent)
  std::string raw;    // the event's lines as sent (CRLF kept), without the blank line ending it
  // The data parsed as JSON; a discarded value when it is not JSON.
  nlohmann::json json() const;
};

// Every complete event of an event-stream body, in order. Comment lines (":...") and
// events without a data line are skipped (a resumable stream's priming event has an empty
// one: it is an event, whose data is empty); an unterminated last event is not an event.
std::vector<SseEvent> parse_sse(std::string_view body);
// The JSON messages those events carry (each event's data parsed), in order.
std::vector<nlohmann::json> sse_messages(std::string_view body);

struct HttpRequest {
  std::string method = "GET";
  std::string target = "/";
  std::string body;
  std::optional<std::string> token;  // sent as "Authorization: Bearer <token>"
  Headers headers;                   // extra headers, sent as given
};

struct HttpResponse {
  int status = 0;
  Headers headers;  // in wire order, names as sent by the server
  std::string body;

  // The first header of that name (case-insensitive), or nullopt.
  std::optional<std::string> header(std::string_view name) const;
  bool has_header(std::string_view name) const { return header(name).has_value(); }
  // The body parsed as JSON; a discarded value when it is not JSON.
  nlohmann::json json() const;
  // Whether Content-Type is text/event-stream (parameters ignored).
  bool is_event_stream() const;
  // The JSON-RPC answer a POST got, whatever its form: the body of a JSON reply, or the
  // last message of an event stream (a discarded value when there is none).
  nlohmann::json final_message() const;
};

inline constexpr std::chrono::milliseconds kHttpTimeout{30'000};

// One TCP connection to the switchboard.
class HttpConnection {
 public:
  explicit HttpConnection(int port, std::chrono::milliseconds connect_timeout = kHttpTimeout);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Sends the request (keep-alive unless `keep_alive` is false) and reads the answer.
  HttpResponse request(const HttpRequest& request, bool keep_alive = true,
                       std::chrono::milliseconds timeout = kHttpTimeout);
  // Sends only; read_response() collects the answer later.
  void send(const HttpRequest& request, bool keep_alive = true,
            std::chrono::milliseconds timeout = kHttpTimeout);
  HttpResponse read_response(std::chrono::milliseconds timeout = kHttpTimeout,
                             bool head_request = false);

  // ---- an answer read as it arrives ----
  // After send(): reads the head of the answer (status and headers; `body` stays empty).
  // Its body is then read with next_event() and read_rest(), in any mix.
  HttpResponse read_head(std::chrono::milliseconds timeout = kHttpTimeout);
  // The next complete event of that body (an event stream); nullopt once the body has
  // ended with no further event. Throws when neither comes within `timeout` (the
  // connection is closed then).
  std::optional<SseEvent> next_event(std::chrono::milliseconds timeout = kHttpTimeout);
  // Reads that body to its end and returns the whole answer: the head and the entire body,
  // events already taken by next_event() included. The connection is then ready for the
  // next request (when the server keeps it alive).
  HttpResponse read_rest(std::chrono::milliseconds timeout = kHttpTimeout);
  // Whether that body has been read to its end.
  bool body_complete() const;

  // Whether the server has closed its side (EOF within `timeout`, no bytes pending).
  bool wait_for_server_close(std::chrono::milliseconds timeout);
  // Closes the socket now (a caller hanging up).
  void close();
  int local_port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One request on a fresh connection, closed afterwards.
HttpResponse http(int port, const HttpRequest& request,
                  std::chrono::milliseconds timeout = kHttpTimeout);
HttpResponse http_get(int port, std::string target, std::optional<std::string> token = {});

// ---- MCP over HTTP ----

nlohmann::json rpc(const nlohmann::json& id, std::string_view method,
                   std::optional<nlohmann::json> params = {});
nlohmann::json tool_call(const nlohmann::json& id, std::string_view tool,
                         std::optional<nlohmann::json> arguments = {});

HttpRequest mcp_request(std::string path, const std::string& token, const nlohmann::json& body);
// The head of such a POST as a raw client writes it (raw_socket.hpp): `extra` header lines,
// each ending in "\r\n", go before the body's length.
std::string mcp_post_head(const std::string& path, const std::string& token,
                          std::size_t content_length, const std::string& extra = "");
// POST `body` to `path` (e.g. "/mcp" or "/mcp/alpha") with `token`; returns the response.
HttpResponse post_mcp(int port, std::string path, const std::string& token,
                      const nlohmann::json& body, std::chrono::milliseconds timeout = kHttpTimeout);
// tools/call through `path`; returns the parsed JSON-RPC reply (HTTP status must be 200).
nlohmann::json call_tool(int port, std::string path, const std::string& token,
                         std::string_view tool, std::optional<nlohmann::json> arguments = {},
                         const nlohmann::json& id = 1);
// tools/list through `path`; returns the parsed JSON-RPC reply.
nlohmann::json list_tools(int port, std::string path, const std::string& token,
                          const nlohmann::json& id = 1);
// The names in a tools/list reply, in order.
std::vector<std::string> tool_names(const nlohmann::json& list_reply);
// The text of the first content item of a tool result reply.
std::string result_text(const nlohmann::json& reply);

}  // namespace harness
