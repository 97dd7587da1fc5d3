#include "connect/http_upstream.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <nlohmann/json.hpp>
#include <set>

#include "base/asio_names.hpp"
#include "connect/link.hpp"
#include "shared/jsonrpc.hpp"
#include "shared/log.hpp"

namespace sb::connect {

using namespace sb::asio_names;
using json = nlohmann::json;

namespace {

constexpr std::chrono::seconds kUpstreamConnectTimeout{10};
constexpr std::chrono::seconds kSendTimeout{30};
constexpr std::chrono::seconds kGetRetry{1};
constexpr std::chrono::seconds kDeleteTimeout{2};
constexpr std::size_t kInboxMessages = 256;  // read but not yet taken by the link

using Response = http::response_parser<http::string_body>;

// The data of one server-sent event ("data:" lines joined), or "" for one without data.
std::string event_data(std::string_view event) {
  std::string data;
  bool first = true;
  while (!event.empty()) {
    const auto newline = event.find('\n');
    std::string_view line = event.substr(0, newline);
    event = newline == std::string_view::npos ? std::string_view() : event.substr(newline + 1);
    if (!line.starts_with("data:")) continue;  // id:, event:, retry:, comments
    line.remove_prefix(5);
    if (line.starts_with(' ')) line.remove_prefix(1);
    if (!first) data.push_back('\n');
    data.append(line);
    first = false;
  }
  return data;
}

}  // namespace

struct HttpUpstream::State : std::enable_shared_from_this<State> {
  State(net::io_context& io, DialTarget endpoint, std::string name)
      : io(io),
        endpoint(std::move(endpoint)),
        name(std::move(name)),
        inbox_signal(io),
        space_signal(io) {}

  net::io_context& io;
  const DialTarget endpoint;
  const std::string name;
  // Each logged at most once a minute, with a count: the server, or the callers through
  // it, can make them repeat at will.
  LogThrottle junk_messages;
  LogThrottle oversized_events;
  LogThrottle unreachable;
  std::deque<std::string> inbox;
  net::steady_timer inbox_signal;  // wakes the reader
  net::steady_timer space_signal;  // wakes the streams waiting for room in the inbox
  std::string session_id;
  std::string protocol_version;
  std::set<beast::tcp_stream*> open;  // cut at stop()
  bool ended = false;
  bool get_stream_started = false;

  std::string url() const { return "http://" + endpoint.host_header + endpoint.target; }

  void end(const std::string& why) {
    if (ended) return;
    ended = true;
    log_warn(why, {{"computer", name}, {"upstream", url()}});
    inbox_signal.cancel();
    space_signal.cancel();
  }

  void cut_connections() {
    for (beast::tcp_stream* stream : open) {
      boost::system::error_code ignored;
      stream->socket().close(ignored);
    }
  }

  // Waits for room, then queues `message` for the link (dropped once ended).
  net::awaitable<void> deliver(std::string message) {
    while (!ended && inbox.size() >= kInboxMessages) {
      space_signal.expires_at(net::steady_timer::time_point::max());
      co_await space_signal.async_wait(kAwait);
    }
    if (ended) co_return;
    inbox.push_back(std::move(message));
    inbox_signal.cancel();
  }

  // What the server sent, if it is one JSON-RPC message.
  net::awaitable<void> deliver_checked(std::string message) {
    if (one_message(message)) {
      co_await deliver(std::move(message));
    } else if (!message.empty()) {
      if (const auto count = junk_messages.due()) {
        log_warn("the MCP server sent something that is not one JSON-RPC message; not sent",
                 {{"computer", name},
                  {"bytes", std::to_string(message.size())},
                  {"count", std::to_string(*count)}});
      }
    }
  }

  // A request the server could not take is answered for it, so that its caller hears.
  net::awaitable<void> answer_failed(const json& id, const std::string& why) {
    if (id.is_null()) co_return;
    // Built before the co_await: g++ 12 cannot keep a braced list across a suspension.
    json answer = json::object();
    answer["jsonrpc"] = "2.0";
    answer["id"] = id;
    answer["error"] = json{{"code", jsonrpc::kInternalError}, {"message", why}};
    co_await deliver(answer.dump());
  }

  http::request<http::string_body> request(http::verb verb, std::string body) const {
    http::request<http::string_body> out{verb, endpoint.target, 11};
    out.set(http::field::host, endpoint.host_header);
    out.set(http::field::user_agent, std::string("switchboard-connect/") + SWITCHBOARD_VERSION);
    out.set(http::field::accept,
            verb == http::verb::get ? "text/event-stream" : "application/json, text/event-stream");
    if (!session_id.empty()) out.set("Mcp-Session-Id", session_id);
    if (!protocol_version.empty()) out.set("MCP-Protocol-Version", protocol_version);
    if (verb == http::verb::post) {
      out.set(http::field::content_type, "application/json");
      out.body() = std::move(body);
    }
    out.keep_alive(false);
    out.prepare_payload();
    return out;
  }

  // Connects and sends; the error, if any.
  net::awaitable<beast::error_code> send(beast::tcp_stream& stream,
                                         const http::request<http::string_body>& message) {
    tcp::resolver resolver(io);
    const auto [resolve_error, addresses] =
        co_await resolver.async_resolve(endpoint.host, endpoint.port, kAwait);
    if (resolve_error) co_return resolve_error;
    stream.expires_after(kUpstreamConnectTimeout);
    const auto [connect_error, peer] = co_await stream.async_connect(addresses, kAwait);
    if (connect_error) co_return connect_error;
    stream.expires_after(kSendTimeout);
    const auto [write_error, written] = co_await http::async_write(stream, message, kAwait);
    // A tool may take long: reading its answer has no deadline of ours (the switchboard
    // keeps the call's), and stop() cuts it.
    stream.expires_never();
    co_return write_error;
  }

  // Relays the messages of an event stream as they come, until it ends.
  net::awaitable<void> relay_events(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                    Response& response) {
    std::string& body = response.get().body();
    for (;;) {
      // A carriage return never occurs inside JSON text; dropping it leaves "\n\n" events.
      std::erase(body, '\r');
      std::size_t taken = 0;
      for (auto end = body.find("\n\n"); end != std::string::npos; end = body.find("\n\n", taken)) {
        std::string data = event_data(std::string_view(body).substr(taken, end - taken));
        taken = end + 2;
        co_await deliver_checked(std::move(data));
      }
      body.erase(0, taken);
      if (body.size() > kMaxMessageBytes) {
        if (const auto count = oversized_events.due()) {
          log_warn("the MCP server sent an event over 16 MiB; dropping its stream",
                   {{"computer", name}, {"count", std::to_string(*count)}});
        }
        co_return;
      }
      if (response.is_done() || ended) co_return;
      const auto [error, size] = co_await http::async_read_some(stream, buffer, response, kAwait);
      if (error) co_return;
    }
  }

  // The answer to one POST: nothing (202), a JSON body, or an event stream.
  net::awaitable<void> receive(std::shared_ptr<beast::tcp_stream> stream, json id,
                               bool initialize) {
    beast::flat_buffer buffer;
    Response response;
    response.body_limit(boost::none);  // an event stream is unbounded; each event is not
    const auto [header_error, header_size] =
        co_await http::async_read_header(*stream, buffer, response, kAwait);
    if (header_error) {
      if (!ended)
        co_await answer_failed(id, "the MCP server did not answer: " + header_error.message());
      co_return;
    }
    const unsigned status = response.get().result_int();
    if (initialize) {
      if (const auto given = response.get().find("Mcp-Session-Id"); given != response.get().end())
        session_id = std::string(given->value());
    }
    if (status == 202 || status == 204) co_return;
    if (status == 404 && !session_id.empty() && !initialize) {
      end("the MCP server ended its session (404)");
      co_return;
    }
    if (status < 200 || status > 299) {
      co_await answer_failed(id, "the MCP server answered HTTP " + std::to_string(status));
      co_return;
    }
    const auto type = response.get()[http::field::content_type];
    if (type.starts_with("text/event-stream")) {
      co_await relay_events(*stream, buffer, response);
      co_return;
    }
    response.body_limit(kMaxMessageBytes);
    const auto [body_error, body_size] =
        co_await http::async_read(*stream, buffer, response, kAwait);
    if (body_error) {
      co_await answer_failed(id, "the MCP server's answer broke off: " + body_error.message());
      co_return;
    }
    std::string body = std::move(response.get().body());
    if (initialize) {
      const json answer = json::parse(body, nullptr, false);
      if (answer.is_object() && answer.contains("result") && answer["result"].is_object())
        protocol_version = answer["result"].value("protocolVersion", "");
    }
    co_await deliver_checked(std::move(body));
  }

  // The server's own messages, on a GET stream, for as long as the session lasts. A
  // server that offers none answers 405.
  net::awaitable<void> server_stream() {
    while (!ended) {
      auto stream = std::make_shared<beast::tcp_stream>(io);
      open.insert(stream.get());
      const beast::error_code error = co_await send(*stream, request(http::verb::get, ""));
      if (!error) {
        beast::flat_buffer buffer;
        Response response;
        response.body_limit(boost::none);
        const auto [header_error, size] =
            co_await http::async_read_header(*stream, buffer, response, kAwait);
        const bool events =
            !header_error && response.get().result_int() == 200 &&
            response.get()[http::field::content_type].starts_with("text/event-stream");
        if (events) {
          co_await relay_events(*stream, buffer, response);
        } else if (!header_error) {
          open.erase(stream.get());
          co_return;  // 405, or no stream: the server sends everything on POST answers
        }
      }
      open.erase(stream.get());
      if (ended) co_return;
      net::steady_timer pause(io, kGetRetry);
      co_await pause.async_wait(kAwait);
    }
  }
};

HttpUpstream::HttpUpstream(net::io_context& io, DialTarget endpoint, std::string name)
    : state_(std::make_shared<State>(io, std::move(endpoint), std::move(name))) {}

HttpUpstream::~HttpUpstream() {
  state_->ended = true;
  state_->cut_connections();
}

std::string HttpUpstream::start() {
  log_info("relaying to the MCP server at " + state_->url(), {{"computer", state_->name}});
  return "";
}

bool HttpUpstream::ended() const {
  return state_->ended;
}

// Sent here, in order; each answer is read on its own.
net::awaitable<bool> HttpUpstream::write(std::string_view message) {
  const auto state = state_;
  if (state->ended) co_return false;
  const json parsed = json::parse(message, nullptr, false);
  const bool is_request = parsed.is_object() && parsed.contains("method") && parsed.contains("id");
  const std::string method = parsed.is_object() ? parsed.value("method", "") : "";
  const json id = is_request ? parsed["id"] : json();

  auto stream = std::make_shared<beast::tcp_stream>(state->io);
  state->open.insert(stream.get());
  const beast::error_code error =
      co_await state->send(*stream, state->request(http::verb::post, std::string(message)));
  if (error) {
    // Answered here, and the session goes on: the switchboard fails a handshake that gets
    // an error (4005), and a server that comes back without this session says 404.
    state->open.erase(stream.get());
    if (state->ended) co_return false;
    if (const auto count = state->unreachable.due()) {
      log_warn("the MCP server cannot be reached", {{"computer", state->name},
                                                    {"upstream", state->url()},
                                                    {"error", error.message()},
                                                    {"count", std::to_string(*count)}});
    }
    co_await state->answer_failed(id, "the MCP server cannot be reached: " + error.message());
    co_return true;
  }
  net::co_spawn(
      state->io,
      [state, stream, id, initialize = method == "initialize"]() -> net::awaitable<void> {
        co_await state->receive(stream, id, initialize);
        state->open.erase(stream.get());
      },
      net::detached);
  if (method == "notifications/initialized" && !state->get_stream_started) {
    state->get_stream_started = true;
    net::co_spawn(
        state->io, [state] { return state->server_stream(); }, net::detached);
  }
  co_return true;
}

net::awaitable<std::optional<std::string>> HttpUpstream::read() {
  const auto state = state_;
  for (;;) {
    if (!state->inbox.empty()) {
      std::string message = std::move(state->inbox.front());
      state->inbox.pop_front();
      state->space_signal.cancel();
      co_return message;
    }
    if (state->ended) co_return std::nullopt;
    state->inbox_signal.expires_at(net::steady_timer::time_point::max());
    co_await state->inbox_signal.async_wait(kAwait);
  }
}

// Ends the session with DELETE (a courtesy, bounded), then cuts what is still open.
net::awaitable<void> HttpUpstream::stop(std::chrono::milliseconds grace) {
  const auto state = state_;
  if (state->ended && state->open.empty()) co_return;
  if (!state->session_id.empty() && !state->ended) {
    beast::tcp_stream stream(state->io);
    state->open.insert(&stream);
    if (!co_await state->send(stream, state->request(http::verb::delete_, ""))) {
      beast::flat_buffer buffer;
      http::response<http::string_body> answer;
      stream.expires_after(std::min<std::chrono::milliseconds>(grace, kDeleteTimeout));
      co_await http::async_read(stream, buffer, answer, kAwait);
    }
    state->open.erase(&stream);
  }
  state->ended = true;
  state->inbox_signal.cancel();
  state->space_signal.cancel();
  state->cut_connections();
}

}  // namespace sb::connect
