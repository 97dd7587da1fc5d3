// switchboard-demo-computer: a small computer that dials out to a switchboard.
//
// A computer behind NAT cannot be called, so it calls: it opens one WebSocket to the
// switchboard's `GET /vm/attach` with `Authorization: Bearer <secret>`, and then serves MCP
// JSON-RPC on that socket, one message per text frame. The switchboard is the MCP client;
// this program is the MCP server. It follows docs/protocol.md, "Daemons":
//
//   - the secret (file or environment) is read again before every dial;
//   - 401 means only an operator can help: wait 300 s, leave the backoff alone;
//   - close 4002 (a newer daemon attached with the same secret) and 4003 (the secret was
//     rotated or revoked) mean stop for good: two daemons must never fight over one slot;
//   - anything else: redial after 1 s doubling to 60 s, ±20 % jitter, reset once an
//     attempt has lasted 60 s;
//   - WebSocket ping every 20 s; 60 s without hearing anything means the link is dead;
//     messages up to 16 MiB.
//
// It offers three harmless tools: `sys_info` (the shape OpenAB Connect reads), `echo` and
// `clock`. Plain ws:// only: run it beside the switchboard, not across a network.
//
// Layout: (1) the MCP server — pure functions from a request to its reply; (2) the command
// line and the secret; (3) Session — one attached WebSocket; (4) Daemon — the dial loop.
#include <sys/utsname.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "base/asio_names.hpp"
#include "shared/backoff.hpp"
#include "shared/dial_target.hpp"
#include "shared/text.hpp"

namespace {

using namespace sb::asio_names;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr std::string_view kProgram = "switchboard-demo-computer";
constexpr std::string_view kVersion = SWITCHBOARD_VERSION;  // defined by CMake
constexpr std::string_view kProtocolVersion = "2025-06-18";

// The contract's numbers.
constexpr std::chrono::milliseconds kFirstBackoff = 1s;
constexpr std::chrono::milliseconds kMaxBackoff = 60s;
constexpr std::chrono::milliseconds kStableAttempt = 60s;  // resets the backoff
constexpr Clock::duration kUnauthorizedWait = 300s;
constexpr Clock::duration kPingInterval = 20s;
constexpr Clock::duration kDeadAfterSilence = 60s;
constexpr std::size_t kMaxMessageBytes = 16 * 1024 * 1024;
constexpr std::uint16_t kCloseReplaced = 4002;
constexpr std::uint16_t kCloseRevoked = 4003;
constexpr std::uint16_t kCloseAbnormal = 1006;  // no close frame: the connection dropped

// Ours: how long one dial may take before it counts as failed.
constexpr auto kConnectTimeout = 15s;
constexpr auto kUpgradeTimeout = 15s;
// Tools run off the socket's thread; two threads are plenty for three quick tools.
constexpr int kToolThreads = 2;

constexpr std::string_view kUsage =
    R"(switchboard-demo-computer — a demo computer that dials out to a switchboard

Usage:
  switchboard-demo-computer --url ws://HOST:PORT/vm/attach --secret-file FILE
  switchboard-demo-computer --help | --version

  --url URL           the switchboard's attach URL (plain ws:// only)      env SB_URL
  --secret-file FILE  file holding this computer's secret (from            env SB_SECRET_FILE
                      `switchboard gen-secret`); re-read before every dial
  The secret may instead be given in env SB_SECRET (used only when no secret file is set).

Tools offered: sys_info, echo, clock. Exits on close 4002 (replaced by a newer attach)
or 4003 (secret rotated or revoked); redials with backoff on anything else.
)";

// One line per event on stderr, "HH:MM:SS message". Tool threads log too, hence the lock.
void log_line(const std::string& message) {
  static std::mutex mutex;
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[16];
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", &local);
  const std::lock_guard lock(mutex);
  std::cerr << stamp << ' ' << message << std::endl;
}

std::string seconds_text(Clock::duration duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fs", std::chrono::duration<double>(duration).count());
  return text;
}

// ---------------------------------------------------------------------------------------
// (1) The MCP server. Pure functions of the request, safe to run on any thread.

// Thrown for arguments of the wrong shape; becomes JSON-RPC -32602.
struct InvalidParams : std::runtime_error {
  using std::runtime_error::runtime_error;
};

json rpc_result(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json rpc_error(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json tool_result(const std::string& text, std::optional<json> structured = std::nullopt) {
  json result = {{"content", json::array({{{"type", "text"}, {"text", text}}})},
                 {"isError", false}};
  if (structured) result["structuredContent"] = std::move(*structured);
  return result;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// PRETTY_NAME from /etc/os-release with its quotes stripped, else "<sysname> <release>".
std::string os_name() {
  std::ifstream os_release("/etc/os-release");
  for (std::string line; std::getline(os_release, line);) {
    constexpr std::string_view kKey = "PRETTY_NAME=";
    if (!line.starts_with(kKey)) continue;
    std::string value = line.substr(kKey.size());
    const bool quoted = value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
                        value.back() == value.front();
    if (quoted) value = value.substr(1, value.size() - 2);
    if (!value.empty()) return value;
  }
  utsname system{};
  if (uname(&system) == 0) return std::string(system.sysname) + " " + system.release;
  return "Linux";
}

json sys_info_tool(const json& /*arguments: none*/) {
  const std::string host = host_name();
  const std::string os = os_name();
  // This shape is what OpenAB Connect reads. No screen here, so no permissions and no
  // displays: Connect then shows no screen.
  json structured = {
      {"host", host},
      {"os", os},
      {"agent",
       {{"name", std::string(kProgram)},
        {"version", std::string(kVersion)},
        {"platform", "linux"}}},
      {"permissions", {{"screen_recording", false}, {"accessibility", false}}},
      {"displays", json::array()},
  };
  return tool_result(host + " · " + os + " · 0 display(s)", std::move(structured));
}

json echo_tool(const json& arguments) {
  const auto text = arguments.find("text");
  if (text == arguments.end() || !text->is_string())
    throw InvalidParams("`text` is required and must be a string");
  return tool_result(text->get<std::string>());
}

json clock_tool(const json& /*arguments: none*/) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return tool_result(text, json{{"utc", text}});
}

struct Tool {
  std::string name;
  std::string description;
  json input_schema;
  json (*run)(const json& arguments);
};

const std::vector<Tool>& tools() {
  static const std::vector<Tool> all = {
      {"sys_info",
       "Host name, operating system and agent of this computer (it has no display).",
       {{"type", "object"}, {"properties", json::object()}},
       sys_info_tool},
      {"echo",
       "Returns `text` unchanged.",
       {{"type", "object"},
        {"properties", {{"text", {{"type", "string"}, {"description", "Text to return"}}}}},
        {"required", json::array({"text"})}},
       echo_tool},
      {"clock",
       "The current UTC time (RFC 3339).",
       {{"type", "object"}, {"properties", json::object()}},
       clock_tool},
  };
  return all;
}

std::string tool_names() {
  std::string names;
  for (const Tool& tool : tools()) names += (names.empty() ? "" : ", ") + tool.name;
  return names;
}

json list_tools() {
  json listed = json::array();
  for (const Tool& tool : tools())
    listed.push_back({{"name", tool.name},
                      {"description", tool.description},
                      {"inputSchema", tool.input_schema}});
  return {{"tools", std::move(listed)}};
}

json call_tool(const json& id, const json& params) {
  if (!params.is_object()) throw InvalidParams("`params` must be an object");
  const auto name = params.find("name");
  if (name == params.end() || !name->is_string())
    throw InvalidParams("`name` is required and must be a string");
  const auto tool = std::find_if(tools().begin(), tools().end(),
                                 [&](const Tool& t) { return t.name == name->get<std::string>(); });
  if (tool == tools().end())
    return rpc_error(id, -32601, "unknown tool '" + name->get<std::string>() + "'");

  json arguments = json::object();  // absent or null: no arguments
  if (const auto given = params.find("arguments"); given != params.end() && !given->is_null()) {
    if (!given->is_object()) throw InvalidParams("`arguments` must be an object");
    arguments = *given;
  }
  try {
    return rpc_result(id, tool->run(arguments));
  } catch (const InvalidParams&) {
    throw;
  } catch (const std::exception& error) {
    // The caller is always answered, never left to time out.
    log_line("tool " + tool->name + " crashed: " + error.what());
    return rpc_error(id, -32603, "internal error in " + tool->name);
  }
}

// The reply to one request (a message with a string `method` and a non-null `id`).
json reply_to(const json& request) {
  const json& id = request.at("id");  // echoed exactly as received
  const std::string method = request.at("method").get<std::string>();
  const json params = request.contains("params") ? request.at("params") : json::object();
  try {
    if (method == "initialize")
      // Always our own protocol version and identity, whatever the client offered.
      return rpc_result(
          id,
          {{"protocolVersion", std::string(kProtocolVersion)},
           {"capabilities", {{"tools", json::object()}}},
           {"serverInfo", {{"name", std::string(kProgram)}, {"version", std::string(kVersion)}}}});
    if (method == "ping") return rpc_result(id, json::object());
    if (method == "tools/list") return rpc_result(id, list_tools());
    if (method == "tools/call") return call_tool(id, params);
    return rpc_error(id, -32601, "method '" + method + "' not found");
  } catch (const InvalidParams& error) {
    return rpc_error(id, -32602, std::string("invalid params: ") + error.what());
  } catch (const std::exception& error) {
    log_line("request " + method + " failed: " + error.what());
    return rpc_error(id, -32603, "internal error");
  }
}

// ---------------------------------------------------------------------------------------
// (2) Command line, URL and secret.

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The switchboard's attach URL, parsed by the project's one URL parser.
sb::DialTarget parse_ws_url(const std::string& url) {
  auto parsed = sb::parse_dial_target(url);
  if (auto* problem = std::get_if<std::string>(&parsed)) throw UsageError("--url " + *problem);
  const sb::DialTarget target = std::get<sb::DialTarget>(parsed);
  if (target.tls)
    throw UsageError(
        "wss:// is not supported: this demo speaks plain ws:// only. Run it on the "
        "switchboard's machine (e.g. ws://127.0.0.1:8790/vm/attach); to attach across a "
        "network, use a daemon that speaks TLS");
  return target;
}

struct Options {
  std::string url;
  sb::DialTarget endpoint;
  std::optional<std::string> secret_file;  // else the secret comes from SB_SECRET
  bool help = false;
  bool version = false;
};

std::string getenv_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

Options parse_options(int argc, char** argv) {
  Options options;
  options.url = getenv_or_empty("SB_URL");
  if (const std::string file = getenv_or_empty("SB_SECRET_FILE"); !file.empty())
    options.secret_file = file;

  const std::vector<std::string> words(argv + 1, argv + argc);
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    auto value = [&]() -> std::string {
      if (i + 1 == words.size()) throw UsageError(word + " needs a value");
      return words[++i];
    };
    if (word == "--help" || word == "-h") {
      options.help = true;
    } else if (word == "--version" || word == "-V") {
      options.version = true;
    } else if (word == "--url") {
      options.url = value();
    } else if (word == "--secret-file") {
      options.secret_file = value();
    } else {
      throw UsageError("unexpected argument `" + word + "`");
    }
  }
  if (options.help || options.version) return options;

  if (options.url.empty()) throw UsageError("--url (or env SB_URL) is required");
  options.endpoint = parse_ws_url(options.url);
  if (options.secret_file) {
    options.secret_file = sb::expand_home(*options.secret_file, getenv_or_empty("HOME")).string();
  } else if (std::getenv("SB_SECRET") == nullptr) {
    throw UsageError("--secret-file (or env SB_SECRET_FILE or SB_SECRET) is required");
  }
  return options;
}

// Read before every dial, so replacing the file takes effect at the next attempt.
std::string read_secret(const Options& options) {
  if (!options.secret_file) {
    const std::string secret(sb::trim(getenv_or_empty("SB_SECRET")));
    if (secret.empty()) throw std::runtime_error("SB_SECRET is empty");
    return secret;
  }
  std::ifstream file(*options.secret_file);
  if (!file) throw std::runtime_error("cannot read secret file " + *options.secret_file);
  std::stringstream content;
  content << file.rdbuf();
  const std::string secret(sb::trim(content.str()));
  if (secret.empty()) throw std::runtime_error("secret file " + *options.secret_file + " is empty");
  return secret;
}

// ---------------------------------------------------------------------------------------
// (3) Session: one WebSocket to the switchboard, from dial to close.
//
// Everything here runs on the io_context's single thread except the tools, which run on a
// small pool and post their reply back; so the socket keeps reading (and answering pings)
// while a call is worked on, and replies may leave in any order, as the contract allows.

enum class DialOutcome { kAttached, kUnauthorized, kFailed };

struct DialResult {
  DialOutcome outcome;
  std::string detail;  // why a dial failed
};

struct SessionEnd {
  std::uint16_t code;  // the close code the switchboard sent; 1006 if none came
  std::string reason;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(net::any_io_executor executor, net::thread_pool& tool_pool)
      : executor_(executor),
        ws_(executor),
        tool_pool_(tool_pool),
        wake_writer_(executor),
        ping_timer_(executor) {}

  net::awaitable<DialResult> dial(const sb::DialTarget& endpoint, const std::string& secret) {
    tcp::resolver resolver(executor_);
    auto& tcp_layer = beast::get_lowest_layer(ws_);
    tcp_layer.expires_after(kConnectTimeout);
    const auto [resolve_error, addresses] =
        co_await resolver.async_resolve(endpoint.host, endpoint.port, kAwait);
    if (resolve_error)
      co_return DialResult{DialOutcome::kFailed, endpoint.host + ": " + resolve_error.message()};
    const auto [connect_error, peer] = co_await tcp_layer.async_connect(addresses, kAwait);
    if (connect_error)
      co_return DialResult{DialOutcome::kFailed,
                           "connect to " + endpoint.host_header + ": " + connect_error.message()};

    // From here the WebSocket layer keeps its own timers; Beast wants the TCP layer's off.
    tcp_layer.expires_never();
    ws_.set_option(websocket::stream_base::timeout{
        .handshake_timeout = kUpgradeTimeout,            // also bounds our own close handshake
        .idle_timeout = websocket::stream_base::none(),  // liveness is ping_loop's job
        .keep_alive_pings = false,
    });
    ws_.set_option(websocket::stream_base::decorator([secret](websocket::request_type& request) {
      request.set(http::field::authorization, "Bearer " + secret);
      request.set(http::field::user_agent, std::string(kProgram) + "/" + std::string(kVersion));
    }));
    ws_.read_message_max(kMaxMessageBytes);

    websocket::response_type response;
    const auto [upgrade_error] =
        co_await ws_.async_handshake(response, endpoint.host_header, endpoint.target, kAwait);
    if (!upgrade_error) co_return DialResult{DialOutcome::kAttached, {}};
    if (response.result() == http::status::unauthorized)
      co_return DialResult{DialOutcome::kUnauthorized, {}};
    if (upgrade_error == websocket::error::upgrade_declined)
      co_return DialResult{DialOutcome::kFailed, "upgrade refused: HTTP " +
                                                     std::to_string(response.result_int()) + " " +
                                                     std::string(response.reason())};
    co_return DialResult{DialOutcome::kFailed, "upgrade: " + upgrade_error.message()};
  }

  // Serves MCP until the socket ends.
  net::awaitable<SessionEnd> serve() {
    attached_ = true;
    last_heard_ = Clock::now();
    ws_.text(true);
    // Pings, pongs and close frames count as hearing from the switchboard.
    ws_.control_callback(
        [this](websocket::frame_type, beast::string_view) { last_heard_ = Clock::now(); });
    auto self = shared_from_this();
    net::co_spawn(
        executor_, [self] { return self->write_loop(); }, net::detached);
    net::co_spawn(
        executor_, [self] { return self->ping_loop(); }, net::detached);

    beast::error_code read_error;
    for (;;) {
      beast::flat_buffer buffer;
      const auto [error, size] = co_await ws_.async_read(buffer, kAwait);
      if (error) {
        read_error = error;
        break;
      }
      last_heard_ = Clock::now();
      on_message(beast::buffers_to_string(buffer.data()));
    }

    finished_ = true;
    wake_writer_.cancel();
    ping_timer_.cancel();
    beast::get_lowest_layer(ws_).close();  // no-op after a completed close handshake
    if (read_error == websocket::error::closed)
      co_return SessionEnd{ws_.reason().code,
                           std::string(ws_.reason().reason.data(), ws_.reason().reason.size())};
    co_return SessionEnd{kCloseAbnormal,
                         dropped_because_.empty() ? read_error.message() : dropped_because_};
  }

  bool attached() const { return attached_ && !finished_; }

  // Our own orderly goodbye (SIGINT/SIGTERM): close 1000; serve() returns once the
  // switchboard answers the close.
  void close_normally() {
    if (!attached() || closing_) return;
    closing_ = true;
    ws_.async_close(websocket::close_code::normal,
                    [self = shared_from_this()](beast::error_code) {});
  }

 private:
  struct Outgoing {
    bool ping = false;
    std::string text;
  };

  void on_message(const std::string& text) {
    json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded() || !message.is_object()) return;  // not JSON-RPC: ignore
    const auto method = message.find("method");
    if (method == message.end() || !method->is_string()) return;  // a response or junk
    const auto id = message.find("id");
    if (id == message.end() || id->is_null()) return;  // a notification: nothing to answer

    // `initialize` is answered before the next frame is even read, so it always comes
    // first; everything else goes to the tool pool.
    if (*method == "initialize") {
      send(reply_to(message));
      return;
    }
    net::post(tool_pool_, [self = shared_from_this(), request = std::move(message)]() mutable {
      json reply = reply_to(request);
      const auto executor = self->executor_;
      // Hand our reference over too, so the session is only ever destroyed on its thread.
      net::post(executor,
                [self = std::move(self), reply = std::move(reply)] { self->send(reply); });
    });
  }

  // Queues one reply for the writer. Runs on the io thread only.
  void send(const json& reply) {
    if (finished_) return;  // the switchboard already failed this call when the socket went
    std::string text = reply.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > kMaxMessageBytes)  // a bigger frame would close the whole socket
      text = rpc_error(reply.at("id"), -32603, "reply larger than 16 MiB").dump();
    outbox_.push_back({.text = std::move(text)});
    wake_writer_.cancel();
  }

  // The only writer: Beast allows one write at a time, so replies and our pings queue here.
  net::awaitable<void> write_loop() {
    while (!finished_) {
      if (outbox_.empty()) {
        wake_writer_.expires_at(Clock::time_point::max());
        co_await wake_writer_.async_wait(kAwait);  // cancelled by send() or at the end
        continue;
      }
      const Outgoing next = std::move(outbox_.front());
      outbox_.pop_front();
      beast::error_code error;
      if (next.ping) {
        std::tie(error) = co_await ws_.async_ping({}, kAwait);
      } else {
        std::tie(error, std::ignore) = co_await ws_.async_write(net::buffer(next.text), kAwait);
      }
      if (error) co_return;  // the reader sees the same broken socket and ends the session
    }
  }

  // Ping every 20 s. Silence for 60 s (no pong to our pings, nor anything else) means the
  // path is dead even if TCP has not noticed: drop the socket so the dial loop takes over.
  net::awaitable<void> ping_loop() {
    auto next_ping = Clock::now() + kPingInterval;
    for (;;) {
      // Wake for the next ping or for the silence deadline, whichever is first; a frame
      // heard meanwhile moves the deadline, which the next round sees.
      ping_timer_.expires_at(std::min(next_ping, last_heard_ + kDeadAfterSilence));
      const auto [error] = co_await ping_timer_.async_wait(kAwait);
      if (error || finished_) co_return;
      const auto now = Clock::now();
      if (now - last_heard_ >= kDeadAfterSilence) {
        dropped_because_ = "nothing heard from the switchboard for 60 s";
        beast::get_lowest_layer(ws_).close();  // the pending read fails; serve() returns
        co_return;
      }
      if (now >= next_ping) {
        outbox_.push_back({.ping = true});
        wake_writer_.cancel();
        next_ping = now + kPingInterval;
      }
    }
  }

  const net::any_io_executor executor_;  // read from tool threads to post replies back
  websocket::stream<beast::tcp_stream> ws_;
  net::thread_pool& tool_pool_;
  net::steady_timer wake_writer_;
  net::steady_timer ping_timer_;
  std::deque<Outgoing> outbox_;
  Clock::time_point last_heard_;
  std::string dropped_because_;  // set when we drop a silent connection ourselves
  bool attached_ = false;
  bool finished_ = false;
  bool closing_ = false;
};

// ---------------------------------------------------------------------------------------
// (4) Daemon: dial, serve, decide, sleep, repeat.

class Daemon {
 public:
  Daemon(net::io_context& io, Options options)
      : io_(io), options_(std::move(options)), sleep_timer_(io) {}

  // Returns the exit code: 0 when told to stop (close 4002/4003 or a signal).
  net::awaitable<int> run() {
    if (!options_.endpoint.loopback)
      log_line("warning: " + options_.url +
               " is not loopback; plain ws:// sends the secret in clear on that network");
    sb::Backoff backoff(kFirstBackoff, kMaxBackoff, kStableAttempt);
    while (!stopping_) {
      const auto started = Clock::now();
      std::string why_redial;  // the first half of this attempt's last log line

      std::string secret;
      try {
        secret = read_secret(options_);
      } catch (const std::exception& error) {
        why_redial = std::string("dial failed: ") + error.what();
      }

      if (!secret.empty()) {
        log_line("dialling " + options_.url);
        auto session = std::make_shared<Session>(io_.get_executor(), tool_pool_);
        current_ = session;
        const DialResult dial = co_await session->dial(options_.endpoint, secret);
        if (stopping_) break;
        if (dial.outcome == DialOutcome::kUnauthorized) {
          // Only an operator can fix a wrong secret: try again rarely, backoff untouched.
          log_line("401: wrong secret; retrying in 300 s");
          co_await sleep(kUnauthorizedWait);
          continue;
        }
        if (dial.outcome == DialOutcome::kFailed) {
          why_redial = "dial failed: " + dial.detail;
        } else {
          log_line("attached " + options_.url + " tools: " + tool_names());
          const SessionEnd end = co_await session->serve();
          if (stopping_) break;
          const std::string closed = "code " + std::to_string(end.code) +
                                     (end.reason.empty() ? "" : " (" + end.reason + ")");
          if (end.code == kCloseReplaced || end.code == kCloseRevoked) {
            log_line("closed with " + closed + " — stopping: " +
                     (end.code == kCloseReplaced
                          ? "a newer daemon attached with this secret"
                          : "this secret is no longer accepted; restart once it is updated"));
            co_return 0;
          }
          why_redial = "detached, " + closed;
        }
      }

      const auto lasted =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
      const Clock::duration delay = sb::jittered(backoff.next(lasted), unit_(random_));
      log_line(why_redial + " — redial in " + seconds_text(delay));
      co_await sleep(delay);
    }
    co_return 0;
  }

  // SIGINT/SIGTERM: say goodbye with close 1000 when attached, then run() returns.
  // Returns false when there is nothing to finish and the caller may stop at once.
  bool stop() {
    stopping_ = true;
    sleep_timer_.cancel();
    const auto session = current_.lock();
    if (!session || !session->attached()) return false;
    log_line("signal: closing with 1000 and exiting");
    session->close_normally();
    return true;
  }

 private:
  net::awaitable<void> sleep(Clock::duration duration) {
    sleep_timer_.expires_after(duration);
    co_await sleep_timer_.async_wait(kAwait);  // cancelled by stop()
  }

  net::io_context& io_;
  Options options_;
  net::thread_pool tool_pool_{kToolThreads};
  net::steady_timer sleep_timer_;
  std::weak_ptr<Session> current_;
  std::mt19937 random_{std::random_device{}()};
  std::uniform_real_distribution<double> unit_{0.0, 1.0};  // for the backoff's jitter
  bool stopping_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const UsageError& error) {
    std::cerr << "error: " << error.what() << "\n\n" << kUsage;
    return 2;
  }
  if (options.help) {
    std::cout << kUsage;
    return 0;
  }
  if (options.version) {
    std::cout << kProgram << ' ' << kVersion << '\n';
    return 0;
  }

  net::io_context io;
  Daemon daemon(io, std::move(options));
  int exit_code = 0;

  net::signal_set signals(io, SIGINT, SIGTERM);
  net::steady_timer give_up(io);
  signals.async_wait([&](beast::error_code error, int) {
    if (error) return;
    if (!daemon.stop()) {
      io.stop();  // nothing to finish: a dial or a sleep
      return;
    }
    // Leave the close handshake a moment, not forever.
    give_up.expires_after(3s);
    give_up.async_wait([&](beast::error_code) { io.stop(); });
  });

  net::co_spawn(io, daemon.run(), [&](std::exception_ptr failure, int code) {
    exit_code = code;
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& error) {
        log_line(std::string("fatal: ") + error.what());
      }
      exit_code = 1;
    }
    io.stop();
  });
  io.run();
  return exit_code;
}
