#include "ipc/parked_session.hpp"

#include <nlohmann/json.hpp>
#include <set>

#include "ipc/meta_codec.hpp"
#include "shared/jsonrpc.hpp"

namespace sb::ipc {
namespace {

using json = nlohmann::json;

bool text_fits(std::string_view text) {
  return text.size() <= kMaxRecordText;
}

// The kinds of JSON text a record names: a request id (string or integer), a progress
// token (the same, or "" for none), a server's info (an object, or null).
bool json_of_kind(std::string_view text, bool (*kind)(const json&)) {
  const json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return !value.is_discarded() && kind(value);
}

bool is_id(const json& value) {
  return value.is_string() || value.is_number_integer();
}

bool is_params(const json& value) {
  return value.is_object();
}

bool is_server_info(const json& value) {
  return value.is_object() || value.is_null();
}

std::optional<ParkedCall> read_call(MetaReader& in, std::uint64_t version) {
  ParkedCall call;
  call.id = in.number();
  call.call_id = in.number();
  call.caller = std::string(in.text());
  const auto stream = flag(in.byte());
  call.progress_token = std::string(in.text());
  const auto timeout = duration(in.number());
  const auto deadline = steady_time(in.number());
  const auto last_moment = steady_time(in.number());
  if (version >= 4) {
    call.ask_method = std::string(in.text());
    call.ask_params = std::string(in.text());
    call.ask_rounds = in.number();
  }
  if (!stream || !timeout || !deadline || !last_moment) return std::nullopt;
  call.stream = *stream;
  call.timeout = *timeout;
  call.deadline = *deadline;
  call.last_moment = *last_moment;
  return call;
}

std::string check_calls(const ParkedSession& record) {
  std::set<std::uint64_t> ids;
  std::set<std::uint64_t> call_ids;
  for (const auto& call : record.calls) {
    if (call.id == 0 || call.id >= record.next_id) return "a call id the socket never issued";
    if (call.call_id == 0) return "a call without the supervisor's call id";
    if (!ids.insert(call.id).second || !call_ids.insert(call.call_id).second)
      return "a call listed twice";
    if (!text_fits(call.caller) || call.caller.empty()) return "a caller's name out of bounds";
    if (!text_fits(call.progress_token) ||
        (!call.progress_token.empty() && !json_of_kind(call.progress_token, is_id)))
      return "a progress token that is not a string or an integer";
    if (!text_fits(call.ask_method) || call.ask_params.size() > kMaxParkedRetryBytes ||
        call.ask_method.empty() != call.ask_params.empty() || call.ask_rounds > 64 ||
        (!call.ask_params.empty() && !json_of_kind(call.ask_params, is_params)))
      return "a call's retry out of bounds";
  }
  for (const auto& route : record.routed) {
    if (route.key == 0 || route.key >= record.next_route_key) return "a route key never issued";
    if (!ids.contains(route.pending_id)) return "a route to a call not held";
    if (!text_fits(route.original_id) || !json_of_kind(route.original_id, is_id))
      return "a routed request whose id is not a string or an integer";
  }
  return {};
}

std::string check_listen(const ParkedSession& record) {
  std::set<std::string_view> uris;
  for (const auto& uri : record.listen_uris) {
    if (uri.empty() || uri.size() > kMaxListenUriBytes) return "a listened URI out of bounds";
    if (!uris.insert(uri).second) return "a listened URI listed twice";
  }
  if (record.newest_listen >= record.next_id || record.active_listen >= record.next_id)
    return "a listen id the socket never issued";
  if (!record.log_level.empty() && !jsonrpc::log_severity(record.log_level))
    return "a log level MCP does not have";
  return {};
}

}  // namespace

std::string encode(const ParkedSession& record) {
  MetaWriter out;
  out.number(kParkedSessionVersion)
      .number(record.generation)
      .text(record.peer)
      .number(static_cast<std::uint64_t>(std::max(record.max_inflight, 0)))
      .number(static_cast<std::uint64_t>(record.attached_at_ms))
      .number(steady_time_number(record.attached_at))
      .text(record.server_json)
      .number(record.offers)
      .number(record.next_id)
      .number(record.next_route_key)
      .number(record.calls.size());
  for (const auto& call : record.calls) {
    out.number(call.id)
        .number(call.call_id)
        .text(call.caller)
        .byte(call.stream ? 1 : 0)
        .text(call.progress_token)
        .number(duration_number(call.timeout))
        .number(steady_time_number(call.deadline))
        .number(steady_time_number(call.last_moment))
        .text(call.ask_method)
        .text(call.ask_params)
        .number(call.ask_rounds);
  }
  out.number(record.routed.size());
  for (const auto& route : record.routed)
    out.number(route.key).number(route.pending_id).text(route.original_id);
  out.number(record.newest_listen).number(record.active_listen).number(record.listen_uris.size());
  for (const auto& uri : record.listen_uris) out.text(uri);
  out.text(record.log_level).text(record.unread);
  return out.take();
}

std::optional<ParkedSession> decode_parked_session(std::string_view bytes, std::string& why) {
  const auto fail = [&why](std::string reason) -> std::optional<ParkedSession> {
    why = std::move(reason);
    return std::nullopt;
  };
  if (bytes.size() > kMaxParkedSessionBytes) return fail("a record over its size bound");
  MetaReader in(bytes);
  const std::uint64_t version = in.number();
  if (version == 0 || version > kParkedSessionVersion) return fail("a record of another version");
  ParkedSession record;
  record.generation = in.number();
  record.peer = std::string(in.text());
  const auto max_inflight = int_count(in.number());
  record.attached_at_ms = static_cast<std::int64_t>(in.number());
  const auto attached_at = steady_time(in.number());
  record.server_json = std::string(in.text());
  const std::uint64_t offers = version == 1 ? in.byte() : in.number();
  record.next_id = in.number();
  record.next_route_key = in.number();
  const std::uint64_t call_count = in.number();
  if (call_count > kMaxParkedCalls) return fail("more calls than a session can hold");
  for (std::uint64_t i = 0; i < call_count; ++i) {
    auto call = read_call(in, version);
    if (!call) return fail("a call with a field out of range");
    record.calls.push_back(std::move(*call));
  }
  const std::uint64_t route_count = in.number();
  if (route_count > kMaxParkedRoutes) return fail("more routed requests than a session holds");
  for (std::uint64_t i = 0; i < route_count; ++i) {
    ParkedRoute route;
    route.key = in.number();
    route.pending_id = in.number();
    route.original_id = std::string(in.text());
    record.routed.push_back(std::move(route));
  }
  if (version >= 3) {
    record.newest_listen = in.number();
    record.active_listen = in.number();
    const std::uint64_t uri_count = in.number();
    if (uri_count > kMaxParkedListenUris) return fail("more listened URIs than a worker keeps");
    for (std::uint64_t i = 0; i < uri_count; ++i) record.listen_uris.emplace_back(in.text());
    record.log_level = std::string(in.text());
  }
  record.unread = std::string(in.text());
  if (!in.complete()) return fail("a record cut short or with bytes after it");
  if (!max_inflight || *max_inflight < 1 ||
      static_cast<std::size_t>(*max_inflight) > kMaxParkedCalls)
    return fail("an in-flight cap out of range");
  record.max_inflight = *max_inflight;
  if (!attached_at || (offers & ~std::uint64_t{offer::kAll}) != 0)
    return fail("a field out of range");
  record.attached_at = *attached_at;
  record.offers = static_cast<std::uint32_t>(offers);
  if (record.generation == 0) return fail("no generation");
  if (!text_fits(record.peer)) return fail("a peer label out of bounds");
  if (record.next_id == 0 || record.next_route_key == 0) return fail("a counter at zero");
  if (record.server_json.size() > 64 * 1024 || !json_of_kind(record.server_json, is_server_info))
    return fail("server info that is not an object");
  if (record.unread.size() > kMaxUnreadBytes) return fail("more unread bytes than a read takes");
  if (record.calls.size() > static_cast<std::size_t>(record.max_inflight))
    return fail("more calls than its in-flight cap");
  if (auto problem = check_calls(record); !problem.empty()) return fail(std::move(problem));
  if (auto problem = check_listen(record); !problem.empty()) return fail(std::move(problem));
  return record;
}

}  // namespace sb::ipc
