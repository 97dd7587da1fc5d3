// What the full-fidelity tests share (docs/protocol.md): requests with and without event
// streams, progress and cancellation messages, the frames a computer received, a call read
// as it arrives, and the Fidelity fixture (alpha, owner, alice and bob).
#pragma once

#include <gtest/gtest.h>

#include <strings.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {

inline constexpr int kRequestCancelled = -32800;
inline constexpr int kInvalidParams = -32602;
inline const std::string kPath = "/mcp/alpha";

inline const Headers kAcceptBoth{{"Content-Type", "application/json"},
                                 {"Accept", "application/json, text/event-stream"}};
inline const Headers kAcceptJsonOnly{{"Content-Type", "application/json"},
                                     {"Accept", "application/json"}};

inline Headers with(Headers headers, std::string name, std::string value) {
  headers.emplace_back(std::move(name), std::move(value));
  return headers;
}

// A POST of `body` to `path` with the token and exactly `headers` besides.
inline HttpRequest post(const std::string& path, const std::string& token, const json& body,
                        const Headers& headers = kAcceptBoth) {
  return HttpRequest{
      .method = "POST", .target = path, .body = body.dump(), .token = token, .headers = headers};
}

inline const json kStatelessMeta{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                                 {"io.modelcontextprotocol/clientCapabilities", json::object()}};

// A 2026-07-28 request as the revision has it: `_meta` in its params, its method (and
// what it names) repeated in headers.
inline HttpRequest stateless(const std::string& token, const json& id, const std::string& method,
                             json params = json::object(), std::optional<std::string> name = {}) {
  if (!params.contains("_meta")) params["_meta"] = kStatelessMeta;
  Headers headers =
      with(with(kAcceptBoth, "MCP-Protocol-Version", "2026-07-28"), "Mcp-Method", method);
  if (name) headers = with(headers, "Mcp-Name", *name);
  return post(kPath, token, rpc(id, method, params), headers);
}

// A tools/call whose params carry `_meta.progressToken`.
inline json call_with_token(const json& id, const std::string& tool, const json& arguments,
                            const json& progress_token) {
  return rpc(id, "tools/call",
             json{{"name", tool},
                  {"arguments", arguments},
                  {"_meta", {{"progressToken", progress_token}}}});
}

inline json progress_arguments(int every_ms, int count, bool then_hold = false) {
  json arguments{{"mode", "progress"}, {"every_ms", every_ms}, {"count", count}};
  if (then_hold) arguments["then"] = "hold";
  return arguments;
}

inline json progress_notification(const json& token, int progress, const std::string& message) {
  return json{
      {"jsonrpc", "2.0"},
      {"method", "notifications/progress"},
      {"params",
       {{"progressToken", token}, {"progress", progress}, {"total", 3}, {"message", message}}}};
}

inline json cancel_notification(const json& request_id, std::optional<std::string> reason = {}) {
  json params{{"requestId", request_id}};
  if (reason) params["reason"] = *reason;
  return json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", params}};
}

inline json initialize_request(const json& id, std::optional<std::string> version = "2025-06-18") {
  json params{{"capabilities", json::object()},
              {"clientInfo", {{"name", "fidelity-test"}, {"version", "0.0.0"}}}};
  if (version) params["protocolVersion"] = *version;
  return rpc(id, "initialize", params);
}

inline json text_result(const std::string& text) {
  return json{
      {"result",
       {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", false}}}};
}

inline bool has_id(const json& frame, const json& id) {
  return frame.is_object() && frame.contains("id") && frame["id"] == id;
}

inline bool is_cancel(const json& frame) {
  return frame.is_object() && frame.value("method", "") == "notifications/cancelled";
}

// Every notifications/cancelled the computer has received.
inline std::vector<json> cancels(const FakeComputer& fake) {
  std::vector<json> out;
  for (const auto& frame : fake.frames()) {
    if (is_cancel(frame)) out.push_back(frame);
  }
  return out;
}

// The notifications/cancelled the computer received for its request `id` (null if none
// came in time).
inline json wait_cancel(const FakeComputer& fake, const json& id) {
  return fake.wait_for_frame([&](const json& frame) {
    return is_cancel(frame) && frame.contains("params") && frame["params"].is_object() &&
           frame["params"].value("requestId", json()) == id;
  });
}

// The cancellation the contract prescribes for the computer's request `id`.
inline json expected_cancel(const json& id, const std::string& reason) {
  return json{{"jsonrpc", "2.0"},
              {"method", "notifications/cancelled"},
              {"params", {{"requestId", id}, {"reason", reason}}}};
}

// The tools/call the computer received with these arguments; fails the test if none came.
inline json computer_call(const FakeComputer& fake, const json& arguments) {
  const json found = fake.wait_for_frame([&](const json& frame) {
    return frame.is_object() && frame.value("method", "") == "tools/call" &&
           frame.contains("params") && frame["params"].is_object() &&
           frame["params"].value("arguments", json()) == arguments;
  });
  EXPECT_FALSE(found.is_null()) << "the computer never received a call with " << arguments;
  return found;
}

inline std::uint64_t id_of(const json& request) {
  return request.at("id").get<std::uint64_t>();
}

inline json token_of(const json& request) {
  return request.at("params").at("_meta").at("progressToken");
}

inline bool same_text(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// Whether a comma-separated header (any line of that name) lists `item`, ignoring case.
inline bool header_lists(const HttpResponse& response, std::string_view name,
                         std::string_view item) {
  for (const auto& [key, value] : response.headers) {
    if (!same_text(key, name)) continue;
    std::size_t start = 0;
    while (start <= value.size()) {
      std::size_t end = value.find(',', start);
      if (end == std::string::npos) end = value.size();
      std::string_view entry = std::string_view(value).substr(start, end - start);
      while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
      while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
      if (same_text(entry, item)) return true;
      start = end + 1;
    }
  }
  return false;
}

inline void expect_event_stream_head(const HttpResponse& head) {
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.is_event_stream()) << head.header("Content-Type").value_or("(no Content-Type)");
  EXPECT_EQ(head.header("Cache-Control"), "no-cache");
  EXPECT_EQ(head.header("X-Accel-Buffering"), "no");
  EXPECT_EQ(head.header("Transfer-Encoding"), "chunked");
  EXPECT_FALSE(head.has_header("Content-Length"));
}

inline void expect_plain_json(const HttpResponse& response) {
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.header("Content-Type"), "application/json") << response.body;
  EXPECT_FALSE(response.json().is_discarded()) << response.body;
}

// A request sent on its own kept-alive connection, whose answer the test reads as it
// arrives (the head, then message by message) while it does other things meanwhile.
class OpenCall {
 public:
  OpenCall(int port, const HttpRequest& request) : connection_(port) { connection_.send(request); }
  HttpConnection& connection() { return connection_; }
  // The head of the answer (read on first use).
  const HttpResponse& head() {
    if (!head_) head_ = connection_.read_head(kDefaultWait);
    return *head_;
  }
  // The next message of the event stream; null once the stream has ended.
  json next() {
    head();
    auto event = connection_.next_event(kDefaultWait);
    if (!event) return nullptr;
    events_.push_back(*event);
    return event->json();
  }
  // The next event of the event stream, as sent; none once the stream has ended.
  std::optional<SseEvent> next_event() {
    head();
    auto event = connection_.next_event(kDefaultWait);
    if (event) events_.push_back(*event);
    return event;
  }
  // The whole answer, reading what is left of it.
  HttpResponse rest() {
    head();
    return connection_.read_rest(kDefaultWait);
  }
  const std::vector<SseEvent>& events() const { return events_; }

 private:
  HttpConnection connection_;
  std::optional<HttpResponse> head_;
  std::vector<SseEvent> events_;
};

class Fidelity : public AlphaTest {
 protected:
  Secret bob_ = new_secret();

  // AlphaTest's, and bob (echo).
  ConfigBuilder config(std::optional<int> alpha_max = {}) const {
    return AlphaTest::config(alpha_max).client("bob", bob_, R"({ alpha = ["echo"] })");
  }

  struct HeldEchoOptions {
    json id = 1;  // of alice's call
    Headers headers = kAcceptBoth;
    std::optional<int> alpha_max;
  };

  // A switchboard, computer alpha ready, and alice's `echo` call with arguments hold(1) in
  // flight: seen by the computer, not answered yet.
  struct HeldEcho {
    explicit HeldEcho(const Fidelity& test) : HeldEcho(test, HeldEchoOptions{}) {}
    HeldEcho(const Fidelity& test, const HeldEchoOptions& options)
        : sb(test.config(options.alpha_max)),
          fake(test.attach_alpha(sb)),
          call(sb.port(), post(kPath, test.alice_.secret, tool_call(options.id, "echo", hold(1)),
                               options.headers)),
          seen(fake ? computer_call(*fake, hold(1)) : json()) {}
    bool ready() const { return fake && !seen.is_null(); }

    // The computer echoes; alice's reply is that echo, as plain JSON.
    void answer_and_expect_plain_echo() {
      fake->answer_echo(seen);
      const HttpResponse reply = call.rest();
      expect_plain_json(reply);
      EXPECT_EQ(echoed(reply.json()), hold(1));
    }

    SwitchboardProcess sb;
    std::unique_ptr<FakeComputer> fake;
    OpenCall call;
    json seen;  // the call as the computer received it
  };

  // After a call ended early on a computer with max_inflight = 1 (and so a one-call share
  // for each caller): the next call goes through at once and is answered by the computer.
  void expect_shares_free(const SwitchboardProcess& sb, const FakeComputer& fake) {
    const std::size_t before = fake.calls().size();
    const json next = call_tool(sb.port(), kPath, alice_.secret, "echo", json{{"next", true}}, 99);
    EXPECT_EQ(error_code(next), 0) << "the share was not given back: " << next;
    EXPECT_EQ(echoed(next), (json{{"next", true}})) << next;
    EXPECT_EQ(fake.calls().size(), before + 1);
  }
};

}  // namespace sbtest
