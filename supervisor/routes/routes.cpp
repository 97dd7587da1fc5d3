#include "supervisor/routes/routes.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <nlohmann/json.hpp>
#include <variant>

#include "shared/jsonrpc.hpp"
#include "shared/text.hpp"
#include "supervisor/http/origin_policy.hpp"
#include "supervisor/http/resumable_streams.hpp"
#include "supervisor/mcp/call_scan.hpp"
#include "supervisor/mcp/caller_message.hpp"
#include "supervisor/mcp/handler.hpp"
#include "supervisor/mcp/lifecycle.hpp"
#include "supervisor/mcp/request_span.hpp"
#include "supervisor/mcp/subscriptions.hpp"
#include "supervisor/metrics/metrics.hpp"
#include "supervisor/routes/computer_door.hpp"
#include "supervisor/routes/revision_gate.hpp"
#include "supervisor/routes/sign_in_gate.hpp"
#include "supervisor/workers/status_json.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxSessionIdChars = 128;

// 32 hex characters from the system's random source. An MCP session id is no secret (it scopes
// an authenticated client's own calls), so a failed draw is not worth failing initialize.
std::string new_mcp_session_id() {
  std::array<unsigned char, 16> bytes{};
  (void)RAND_bytes(bytes.data(), static_cast<int>(bytes.size()));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (const unsigned char byte : bytes) {
    id.push_back(kHex[byte >> 4]);
    id.push_back(kHex[byte & 0x0f]);
  }
  return id;
}

bool is_get(const HttpRequest& request) {
  return request.method == "GET" || request.method == "HEAD";
}

// A caller and the computer it named, both checked.
struct Resolved {
  const Caller* caller = nullptr;
  std::string computer;
  const config::NameList* tools = nullptr;
};

class Routes {
 public:
  Routes(SupervisorState& state, const HttpRequest& request, Respond respond, SendEvent send_event)
      : state_(state),
        request_(request),
        respond_(std::move(respond)),
        send_event_(std::move(send_event)),
        gate_(state, request) {}

  Underway run() {
    if (request_.origin && !origin_allowed(*state_.config, *request_.origin))
      return reply(forbidden_origin_response());
    const std::string_view path = request_path(request_.target);
    if (path == "/healthz") return get_only([&] { return text_response(200, "ok"); });
    if (path.starts_with(oauth::kMetadataPath) && state_.sign_in) {
      // The switchboard's, or a computer's URL's, existing or not (RFC 9728 §3.1, §3.3).
      const std::string_view suffix = path.substr(oauth::kMetadataPath.size());
      if (suffix.empty() || oauth::is_resource_path(suffix))
        return get_only([&] { return json_response(200, state_.sign_in->metadata(suffix)); });
    }
    if (path == "/readyz")
      return get_only([&] { return readiness(state_.services.workers.any_ready()); });
    if (path == "/computers")
      return get_only(
          [&] { return with_caller([&](const Caller& caller) { return computers(caller); }); });
    if (path == "/status")
      return get_only(
          [&] { return with_caller([&](const Caller& caller) { return status(caller); }); });
    if (path.starts_with("/readyz/")) return readyz_for(path.substr(8));
    if (path == "/mcp") return mcp(std::nullopt);
    if (path.starts_with("/mcp/")) return mcp(path.substr(5));
    if (path == "/vm/attach") return reply(method_not_allowed_response("GET"));
    return reply(empty_response(404));
  }

 private:
  Underway reply(HttpResponse response) {
    respond_(std::move(response));
    return {};
  }

  template <typename Make>
  Underway get_only(Make make) {
    if (!is_get(request_)) return reply(method_not_allowed_response("GET,HEAD"));
    return reply(make());
  }

  static HttpResponse readiness(bool ready) {
    return ready ? text_response(200, "ok") : text_response(503, "vm offline");
  }

  template <typename Make>
  HttpResponse with_caller(Make make) {
    const Caller* caller = gate_.authenticate();
    if (!caller) return gate_.refused();
    return make(*caller);
  }

  // The computer must be both in the caller's grant and configured now; otherwise the
  // answer is the same 404 whichever it was.
  std::optional<Resolved> resolve(const Caller& caller, std::string_view computer) const {
    const config::NameList* tools = caller.grant.tools_for(computer);
    if (!tools || !state_.services.workers.has(computer)) return std::nullopt;
    return Resolved{&caller, std::string(computer), tools};
  }

  HttpResponse computers(const Caller& caller) const {
    json list = json::array();
    for (const auto& name : state_.services.workers.names()) {
      if (!caller.grant.tools_for(name)) continue;
      const auto view = state_.services.workers.view(name);
      list.push_back({{"attached", view->attached},
                      {"default", name == caller.default_computer},
                      {"name", name},
                      {"ready", view->ready}});
    }
    return json_response(200, list.dump());
  }

  json status_of(const Caller& caller, const std::string& name) const {
    const auto view = state_.services.workers.view(name);
    if (!view) return json{{"attached", false}, {"computer", name}, {"ready", false}};
    return computer_status_json(*view, caller.wildcard());
  }

  HttpResponse status(const Caller& caller) const {
    json computers = json::array();
    for (const auto& name : state_.services.workers.names()) {
      if (caller.grant.tools_for(name)) computers.push_back(status_of(caller, name));
    }
    const json body{
        {"computers", std::move(computers)},
        {"switchboard", {{"name", jsonrpc::kProductName}, {"version", SWITCHBOARD_VERSION}}},
        {"vm", status_of(caller, caller.default_computer)}};
    return json_response(200, body.dump());
  }

  Underway readyz_for(std::string_view segment) {
    if (segment.empty() || segment.find('/') != std::string_view::npos)
      return reply(empty_response(404));
    if (!is_get(request_)) return reply(method_not_allowed_response("GET,HEAD"));
    const Caller* caller = gate_.authenticate();
    if (!caller) return reply(gate_.refused());
    const auto computer = percent_decode(segment);
    if (!computer) return reply(text_response(400, "invalid path segment"));
    const auto resolved = resolve(*caller, *computer);
    if (!resolved) return reply(no_such_computer_response());
    const auto view = state_.services.workers.view(*computer);
    return reply(readiness(view && view->ready));
  }

  Underway mcp(std::optional<std::string_view> segment) {
    if (segment && (segment->empty() || segment->find('/') != std::string_view::npos)) {
      return reply(empty_response(404));
    }
    // A browser asks before it sends Authorization; the preflight carries no token.
    if (request_.method == "OPTIONS" && request_.origin)
      return reply(preflight_response(*request_.origin));
    const bool probe =
        request_.method == "GET" || request_.method == "HEAD" || request_.method == "DELETE";
    if (!probe && request_.method != "POST") return reply(method_not_allowed_response("POST"));
    // The token first: without one, nothing about the path is answered.
    const Caller* caller = gate_.authenticate();
    if (!caller) return reply(gate_.refused());
    std::optional<std::string> computer;
    if (segment) {
      computer = percent_decode(*segment);
      if (!computer) return reply(text_response(400, "invalid path segment"));
    }
    // A caller of the older revisions opens an event stream with GET for the messages
    // that belong to no call; 2026-07-28 has none, and a probe without
    // `Accept: text/event-stream` is told with 405 that there is nothing else here.
    const bool stream = request_.method == "GET" && request_.accepts_event_stream &&
                        request_.protocol_version != kStatelessRevision;
    if (probe && !stream) return reply(post_only_response());
    const auto resolved = resolve(*caller, computer.value_or(caller->default_computer));
    if (!resolved) return reply(no_such_computer_response());
    if (stream) {
      if (auto resumed = resume_stream(*resolved)) return std::move(*resumed);
      return notification_stream(*resolved);
    }
    return post_mcp(*resolved);
  }

  // A GET that names an event of a call's stream takes that stream up (docs/protocol.md,
  // "Resumable streams"). One that names nothing this caller may resume opens the stream
  // of messages that belong to no call, as a GET without Last-Event-ID does.
  std::optional<Underway> resume_stream(const Resolved& resolved) {
    if (!request_.last_event_id) return std::nullopt;
    const auto from = parse_event_id(*request_.last_event_id);
    if (!from) return std::nullopt;
    auto hang_up = state_.resumable.resume(stream_owner(resolved), *from, respond_, send_event_);
    if (!hang_up) return std::nullopt;
    return Underway{.abandon = std::move(*hang_up)};
  }

  // Who may resume a stream: the caller, on the computer and in the MCP session it had.
  std::string stream_owner(const Resolved& resolved) const {
    std::string owner = resolved.computer;
    owner += '\n';
    owner += resolved.caller->name;
    owner += '\n';
    owner += mcp_session();
    return owner;
  }

  // A request of a revision that resumes streams, from a caller that takes one: its events
  // and its response go through a stream that outlives this connection for a while.
  void make_resumable(const Resolved& resolved, bool stateless) {
    if (stateless || !request_.accepts_event_stream || !resumes_streams()) return;
    resumable_ =
        state_.resumable.open(stream_owner(resolved), stream_limits(), respond_, send_event_);
    respond_ = resumable_->responses();
    send_event_ = resumable_->events();
  }

  bool resumes_streams() const {
    return state_.config->limits.replay_events > 0 && request_.protocol_version &&
           *request_.protocol_version >= kFirstResumableRevision;
  }

  // A caller comes back a few times for broken connections, and a paused call's at every
  // poll for as long as the call may run (docs/protocol.md, "Resumable streams").
  ResumableStream::Limits stream_limits() const {
    constexpr int kResumesBesidesPolls = 16;
    const config::Timeouts& timeouts = state_.config->timeouts;
    const int polls = timeouts.poll_secs > 0 ? timeouts.max_total_secs / timeouts.poll_secs : 0;
    return ResumableStream::Limits{
        .replay_events = static_cast<std::size_t>(state_.config->limits.replay_events),
        .resume_window = std::chrono::seconds(timeouts.resume_secs),
        .poll_after = std::chrono::seconds(timeouts.poll_secs),
        .max_resumes = static_cast<std::uint32_t>(kResumesBesidesPolls + polls)};
  }

  // The call's hang-up, through its stream when it has one.
  Underway held(Underway underway) {
    if (resumable_) underway.abandon = resumable_->hold(std::move(underway.abandon));
    return underway;
  }

  // Open until the caller hangs up: the response's head at once, then a subscribed
  // resource's updates and list changes as they come (docs/protocol.md, "Subscriptions").
  // For a caller that resumes streams it outlives a lost connection as a call's does; a
  // GET that names no event takes a stream that waits for its caller up where it stands.
  Underway notification_stream(const Resolved& resolved) {
    const std::string owner = stream_owner(resolved);
    std::shared_ptr<ResumableStream> stream;
    if (resumes_streams()) {
      if (auto taken = state_.resumable.take_up_notifications(owner, respond_, send_event_))
        return Underway{.abandon = std::move(*taken)};
      ResumableStream::Limits limits = stream_limits();
      limits.poll_after = std::chrono::seconds(0);  // it has no call to poll for
      stream = state_.resumable.open(owner, limits, respond_, send_event_);
    }
    auto ended = open_notification_stream(
        state_.services, std::chrono::seconds(state_.config->timeouts.control_secs),
        StreamKey{resolved.computer, resolved.caller->name, mcp_session()},
        [send = stream ? stream->events() : send_event_](std::string message) {
          send(std::string(), std::move(message), std::string());
        });
    if (!ended) {
      const StreamBoard& streams = state_.services.streams;
      if (streams.full(resolved.caller->name)) {
        return reply(text_response(
            429, "this caller holds " + std::to_string(streams.held_by(resolved.caller->name)) +
                     " event streams open, its maximum ([limits] max_streams_per_caller)"));
      }
      return reply(text_response(409, "an event stream is open for this MCP session already"));
    }
    if (!stream) {
      send_event_(std::string(), std::string(), std::string());
      return Underway{.abandon = std::move(*ended)};
    }
    OnHangUp hang_up = stream->hold(std::move(*ended));
    state_.resumable.prime_for_notifications(stream);
    return Underway{.abandon = std::move(hang_up)};
  }

  Underway post_mcp(const Resolved& resolved) {
    const auto& signed_in = gate_.identity();
    McpRequest mcp{
        .context = {.caller = resolved.caller->name,
                    .oauth_issuer = signed_in ? signed_in->issuer : std::string(),
                    .oauth_subject = signed_in ? signed_in->subject : std::string(),
                    .computer = resolved.computer,
                    .tools = *resolved.tools,
                    .resources =
                        config::granted(resolved.caller->grant.resources_for(resolved.computer)),
                    .prompts =
                        config::granted(resolved.caller->grant.prompts_for(resolved.computer)),
                    .caller_cap = resolved.caller->caller_cap,
                    .wildcard = resolved.caller->wildcard(),
                    .mcp_session = mcp_session(),
                    .reply_may_arrive = true,
                    .carried = request_.carried},
        .services = state_.services,
        .config = state_.config};
    if (auto refusal = refuse_size(request_.body)) return reply(bad_request(*refusal));
    // Most requests are a plain tools/call, read without building a tree (the scan keeps
    // to the nesting limit itself). A 2026-07-28 one goes through the tree, which reads
    // the `_meta` that revision requires, and so does every request while tracing (its
    // `_meta` gets the switchboard's span).
    if (const auto call =
            state_.tracer ? std::nullopt : scan_tools_call(request_.body, jsonrpc::kMaxNesting);
        call && !may_be_stateless(*call)) {
      auto verdict =
          check_revision(request_, facts_of_tools_call(json::parse(call->id), call->tool));
      if (verdict.refusal) return reply(std::move(*verdict.refusal));
      make_resumable(resolved, verdict.stateless);
      mcp.context.era = verdict.stateless ? Era::kStateless : Era::kHandshake;
      mcp.done = done(false, verdict.stateless);
      mcp.on_message = on_message();
      return held(handle_tools_call(*call, std::move(mcp)));
    }
    auto read = read_caller_message(request_.body);
    if (auto* refusal = std::get_if<MessageRefusal>(&read)) return reply(bad_request(*refusal));
    json message = std::move(std::get<json>(read));
    auto verdict = check_revision(request_, facts_of(message));
    if (verdict.refusal) return reply(std::move(*verdict.refusal));
    if (verdict.stateless) {
      if (auto refusal = param_header_refusal(resolved, message)) return reply(std::move(*refusal));
    }
    const bool initialize = message.is_object() && message.value("method", json()) == "initialize";
    if (message.is_object() && message.contains("method") && message.contains("id"))
      make_resumable(resolved, verdict.stateless);
    mcp.context.era = verdict.stateless ? Era::kStateless : Era::kHandshake;
    const auto span =
        state_.tracer ? start_request_span(*state_.tracer, message, mcp.context, transport_trace())
                      : nullptr;
    mcp.done = traced(
        done(initialize, verdict.stateless), span,
        [stateless = verdict.stateless, twin_front = request_.twin_front](const ReplyText& text) {
          return std::optional<int>(answer_status(text, stateless, twin_front));
        });
    mcp.on_message = traced(on_message(), span);
    return held(traced(handle_mcp(message, std::move(mcp)), span));
  }

  // The Mcp-Param headers of a tools/call whose tool's schema the switchboard has seen.
  // A tool the caller may not call is not looked at: it is answered as an unknown one.
  std::optional<HttpResponse> param_header_refusal(const Resolved& resolved,
                                                   const json& message) const {
    if (!message.is_object() || message.value("method", json()) != "tools/call")
      return std::nullopt;
    const auto params = message.find("params");
    if (params == message.end() || !params->is_object()) return std::nullopt;
    const auto tool = params->find("name");
    if (tool == params->end() || !tool->is_string()) return std::nullopt;
    const auto& name = tool->get_ref<const std::string&>();
    if (!resolved.tools->allows(name)) return std::nullopt;
    const auto* headers = state_.services.tool_book.param_headers(resolved.computer, name);
    if (!headers) return std::nullopt;
    return check_param_headers(request_, message, *headers);
  }

  McpMessage on_message() const {
    if (!request_.accepts_event_stream) return {};
    return [send = send_event_](ReplyText text) {
      send(std::move(text.head), std::move(text.body), std::string());
    };
  }

  // Whether a scanned tools/call may be of the 2026-07-28 revision: its header says so, or
  // its params name that revision's `_meta` (which the scanner does not read).
  bool may_be_stateless(const ScannedToolCall& call) const {
    return request_.protocol_version == kStatelessRevision ||
           call.params.find("io.modelcontextprotocol/protocolVersion") != std::string_view::npos;
  }

  // The answer, as HTTP. A 2026-07-28 caller's error carries its status (404 for a method
  // not served, 400 for what the revision requires of the request) even when the computer
  // answered it. A twin front is told with 503 that the computer is not attached here, so
  // that it tries the other box (docs/twins.md, "Not attached here").
  McpDone done(bool initialize, bool stateless) const {
    return [respond = respond_, initialize, stateless,
            twin_front = request_.twin_front](std::optional<ReplyText> text) {
      if (!text) return respond(empty_response(202));
      const bool try_twin = twin_front && text->not_attached;
      auto response =
          json_response(answer_status(*text, stateless, twin_front), std::move(text->body));
      if (try_twin) response.headers.emplace_back("Switchboard-Not-Attached", "1");
      response.body_head = std::move(text->head);
      response.lease = std::move(text->lease);
      response.arriving = std::move(text->arriving);
      if (initialize) response.headers.emplace_back("Mcp-Session-Id", new_mcp_session_id());
      respond(std::move(response));
    };
  }

  TransportTrace transport_trace() const {
    return TransportTrace{.protocol = "http",
                          .traceparent = request_.traceparent,
                          .tracestate = request_.tracestate,
                          .protocol_version = request_.protocol_version};
  }

  static int answer_status(const ReplyText& text, bool stateless, bool twin_front) {
    if (twin_front && text.not_attached) return 503;
    return stateless && text.error_code ? stateless_error_status(*text.error_code) : 200;
  }

  // An MCP session id scopes cancellations and answers only; one the switchboard never issued is
  // as good as any (docs/protocol.md, "Sessions"). An unusable one scopes nothing.
  std::string mcp_session() const {
    if (!request_.mcp_session_id || request_.mcp_session_id->empty() ||
        request_.mcp_session_id->size() > kMaxSessionIdChars)
      return {};
    const bool visible =
        std::all_of(request_.mcp_session_id->begin(), request_.mcp_session_id->end(),
                    [](char c) { return c > 0x20 && c < 0x7f; });
    return visible ? *request_.mcp_session_id : std::string();
  }

  static HttpResponse bad_request(const MessageRefusal& refusal) {
    return json_response(400,
                         jsonrpc::error_response(nullptr, refusal.code, refusal.message).dump());
  }

  SupervisorState& state_;
  const HttpRequest& request_;
  Respond respond_;
  SendEvent send_event_;
  SignInGate gate_;
  std::shared_ptr<ResumableStream> resumable_;  // when the request's stream is resumable
};

}  // namespace

std::optional<std::string> percent_decode(std::string_view segment) {
  std::string out;
  for (std::size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] != '%') {
      out.push_back(segment[i]);
      continue;
    }
    if (i + 2 >= segment.size()) return std::nullopt;
    const int high = hex_digit_value(segment[i + 1]);
    const int low = hex_digit_value(segment[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

Underway route_request(SupervisorState& state, const HttpRequest& request, Respond respond,
                       SendEvent send_event) {
  return after_introspection(
      state, request,
      [&state, &request, respond = std::move(respond),
       send_event = std::move(send_event)]() mutable {
        return Routes(state, request, std::move(respond), std::move(send_event)).run();
      });
}

HttpServices http_services(SupervisorState& state, const Timings& timings) {
  return HttpServices{
      .config = state.config,
      .replies = state.services.replies,
      .metrics = state.services.metrics,
      .route =
          [&state](const HttpRequest& request, Respond respond, SendEvent send_event) {
            return route_request(state, request, std::move(respond), std::move(send_event));
          },
      .computer_door = {
          .admits = [&state](
                        const std::optional<std::string>& token,
                        const std::string& peer) { return admits_computer(state, token, peer); },
          .enter =
              [&state](const std::string& token, base::UniqueFd& socket, std::string upgrade_bytes,
                       const std::string& peer) {
                return enter_computer(state, token, socket, std::move(upgrade_bytes), peer);
              }},
      .request_timeout = timings.request_read,
      .lingering_time = timings.lingering};
}

}  // namespace sb::supervisor
