// A dial-out computer for the end-to-end tests: a WebSocket client on its own thread that
// attaches to GET /vm/attach with its secret and serves MCP the way a daemon would, with
// behaviour scripted per test. It records every frame it receives and how its socket
// ended, and every wait on it is bounded.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness {

// What the fake does with one tools/call.
struct CallAction {
  enum class Kind {
    kEcho,   // result: one text item holding the compact JSON of params.arguments
    kReply,  // `reply` (an object with "result" or "error"; the id is added)
    kHold,   // never answer on its own (answer() may answer it later)
    kClose,  // send a WebSocket close frame with `close_code`
    kDrop,   // drop the TCP connection without a close frame
    // send `progress_count` notifications/progress with the call's own progressToken, one
    // every `delay`, then echo (or, with `hold_after`, never answer)
    kProgress,
  };
  Kind kind = Kind::kEcho;
  nlohmann::json reply;
  std::chrono::milliseconds delay{0};  // before echoing/replying/closing/dropping
  std::uint16_t close_code = 1000;
  int progress_count = 0;   // kProgress
  bool hold_after = false;  // kProgress

  static CallAction echo(std::chrono::milliseconds delay = {}) { return {Kind::kEcho, {}, delay}; }
  static CallAction hold() { return {Kind::kHold}; }
  static CallAction close(std::uint16_t code) { return {Kind::kClose, {}, {}, code}; }
  static CallAction drop() { return {Kind::kDrop}; }
  static CallAction result(nlohmann::json result) {
    return {Kind::kReply, nlohmann::json{{"result", std::move(result)}}};
  }
  static CallAction progress(std::chrono::milliseconds every, int count, bool hold_after = false) {
    return {Kind::kProgress, {}, every, 1000, count, hold_after};
  }
  static CallAction error(int code, std::string message) {
    return {Kind::kReply,
            nlohmann::json{{"error", {{"code", code}, {"message", std::move(message)}}}}};
  }
};

// Decides per tools/call, from its params ({"name", "arguments", ...}).
using CallHandler = std::function<CallAction(const nlohmann::json& params)>;

// The default handler, scripted by the call's arguments so that one fake serves many
// kinds of call: {"mode":"hold"}, {"mode":"delay","ms":N}, {"mode":"close","code":C},
// {"mode":"drop"}, {"mode":"error","code":C}, {"mode":"tool_error"},
// {"mode":"progress","every_ms":N,"count":K,"then":"echo"|"hold"} (K progress
// notifications with the token the call carried, one every N ms, then an echo or nothing);
// anything else echoes.
CallAction scripted_by_arguments(const nlohmann::json& params);

// How the fake answers the switchboard's initialize.
enum class InitMode { kAnswer, kError, kNever };

struct CloseInfo {
  bool close_frame = false;  // a WebSocket close frame arrived (else the TCP stream ended)
  std::uint16_t code = 0;    // its code (0 without a frame)
  std::string reason;
};

struct FakeComputerOptions {
  std::string secret;  // presented as "Authorization: Bearer <secret>" (empty: no header)
  InitMode init = InitMode::kAnswer;
  nlohmann::json server_info = {{"name", "fake-computer"}, {"version", "9.9.9"}};
  nlohmann::json tools;  // tools/list result entries; default: echo, slow, secret_tool
  CallHandler on_call = scripted_by_arguments;
  std::vector<std::pair<std::string, std::string>> headers;  // extra upgrade headers
  bool hold_tools_list = false;  // never answer tools/list (answer() still can)
  // The reply (an object with "result" or "error") to tools/list instead of `tools`.
  std::optional<nlohmann::json> tools_list_reply;
  // The reply (an object with "result" or "error") to requests of other methods, by method;
  // a method not listed is answered -32601.
  std::map<std::string, nlohmann::json> replies;
  // Whether its initialize result offers the `logging` capability.
  bool offers_logging = false;
  // More members of its initialize result's capabilities, e.g. {"prompts": {}}.
  nlohmann::json more_capabilities = nlohmann::json::object();
  // Stops reading once the handshake is done (after notifications/initialized): it then
  // answers no ping, as a computer that froze would.
  bool deaf_after_initialized = false;
};

// Tool definitions the default fake offers.
nlohmann::json default_tools();
nlohmann::json tool_definition(const std::string& name);

class FakeComputer {
 public:
  FakeComputer(int port, FakeComputerOptions options);
  ~FakeComputer();
  FakeComputer(const FakeComputer&) = delete;
  FakeComputer& operator=(const FakeComputer&) = delete;

  // Dials /vm/attach. Returns the HTTP status of the upgrade: 101 when attached, else the
  // refusal (its body and headers are in refusal()).
  int attach(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  struct Refusal {
    int status = 0;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    std::optional<std::string> header(const std::string& name) const;
  };
  Refusal refusal() const;

  // ---- what it received ----
  std::vector<nlohmann::json> frames() const;    // every text frame, parsed (or a string)
  std::vector<std::string> frame_texts() const;  // every text frame, as it arrived
  std::vector<nlohmann::json> requests(const std::string& method) const;
  std::vector<nlohmann::json> calls() const { return requests("tools/call"); }
  // Waits until at least `count` requests of `method` have arrived.
  bool wait_for_requests(const std::string& method, std::size_t count,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  bool wait_for_calls(std::size_t count,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) const {
    return wait_for_requests("tools/call", count, timeout);
  }
  // Waits until some received frame satisfies `predicate`; returns it (null if none).
  nlohmann::json wait_for_frame(std::function<bool(const nlohmann::json&)> predicate,
                                std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  // Whether it has answered the switchboard's initialize (the handshake done on its side).
  bool wait_initialized(std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  // Waits until the switchboard has pinged it at least `count` times (each answered).
  bool wait_for_pings(std::size_t count,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

  // ---- how it ended ----
  bool closed() const;
  std::optional<CloseInfo> close_info() const;
  std::optional<CloseInfo> wait_closed(
      std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

  // ---- acting ----
  // Answers a held request (by the id the switchboard gave it).
  void answer(std::uint64_t id, nlohmann::json reply_without_id);
  void answer_echo(const nlohmann::json& request);  // echo of the request's arguments
  void send_text(std::string text);                 // one text frame, as given
  // The first fragment of a text message whose rest never comes: the computer stays
  // mid-message (nothing else may be sent after it).
  void send_first_fragment(std::string text);
  void close(std::uint16_t code);  // sends a close frame
  void drop();                     // drops TCP
  int local_port() const;          // of its connection to the switchboard
  // Messages it was asked to send (answer(), send_text(), its own replies) and has not yet
  // written, counted from the call on: more than a few only while the switchboard does
  // not read its socket.
  std::size_t unwritten() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace harness
