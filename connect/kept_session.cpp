#include "connect/kept_session.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "shared/json_scan.hpp"
#include "shared/jsonrpc.hpp"

namespace sb::connect {
namespace {

class ShapeScanner {
 public:
  explicit ShapeScanner(std::string_view text) : json_(text, jsonrpc::kMaxNesting) {}

  std::optional<MessageShape> scan() {
    json_.skip_byte_order_mark();
    json_.skip_space();
    if (!json_.at('{')) return std::nullopt;
    MessageShape shape;
    const bool parsed = json_.object(1, [&](std::string_view key, std::size_t) {
      if (key == "method") return method(shape.method);
      if (key == "id") return span(1, shape.id);
      if (key == "result") return span(1, shape.result);
      if (key == "params") return params(shape);
      if (key == "error") shape.error = true;
      return json_.value(1);
    });
    json_.skip_space();
    if (!parsed || !json_.at_end()) return std::nullopt;
    return shape;
  }

 private:
  bool method(std::optional<std::string>& method) {
    if (method || !json_.at('"')) return false;
    std::string decoded;
    const auto token = json_.string_token(&decoded);
    if (!token) return false;
    method = std::string(*token);
    return true;
  }

  bool span(int depth, std::optional<TextSpan>& span) {
    if (span) return false;
    const std::size_t begin = json_.position();
    if (!json_.value(depth)) return false;
    span = TextSpan{begin, json_.position()};
    return true;
  }

  bool params(MessageShape& shape) {
    if (!json_.at('{')) return json_.value(1);
    return json_.object(2, [&](std::string_view key, std::size_t) {
      if (key == "requestId") return span(2, shape.request_id);
      if (key == "progressToken") return span(2, shape.progress_token);
      if (key == "_meta" && json_.at('{')) {
        return json_.object(3, [&](std::string_view meta_key, std::size_t) {
          if (meta_key == "progressToken") return span(3, shape.request_token);
          return json_.value(3);
        });
      }
      return json_.value(2);
    });
  }

  JsonScanner json_;
};

std::string_view text_of(std::string_view message, TextSpan span) {
  return message.substr(span.begin, span.end - span.begin);
}

// `message` with each span replaced by its text; spans do not overlap.
std::string spliced(std::string_view message, std::vector<std::pair<TextSpan, std::string>> edits) {
  std::sort(edits.begin(), edits.end(),
            [](const auto& a, const auto& b) { return a.first.begin < b.first.begin; });
  std::string out;
  out.reserve(message.size() + 32);
  std::size_t at = 0;
  for (const auto& [span, text] : edits) {
    out.append(message.substr(at, span.begin - at));
    out.append(text);
    at = span.end;
  }
  out.append(message.substr(at));
  return out;
}

std::string answer(std::string_view id, std::string_view result) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out.append(id).append(R"(,"result":)").append(result).append("}");
  return out;
}

std::string error_answer(std::string_view id, std::string_view message) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out.append(id)
      .append(R"(,"error":{"code":)")
      .append(std::to_string(jsonrpc::kInternalError))
      .append(R"(,"message":)")
      .append(nlohmann::json(message).dump())
      .append("}}");
  return out;
}

std::string cancellation(std::int64_t id, std::string_view reason) {
  std::string out = R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)";
  out.append(std::to_string(id))
      .append(R"(,"reason":)")
      .append(nlohmann::json(reason).dump())
      .append("}}");
  return out;
}

Routed dropped(std::string why) {
  return Routed{.dropped = std::move(why)};
}

// An id as one spelling: a switchboard writes the server's ids back as it parsed them
// ("a\/b" comes back "a/b", 1E2 as 100.0), so they are compared the same way.
std::string canonical_id(std::string_view id) {
  const auto parsed = nlohmann::json::parse(id, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? std::string(id) : parsed.dump();
}

}  // namespace

std::optional<MessageShape> scan_shape(std::string_view message) {
  return ShapeScanner(message).scan();
}

std::vector<std::string> KeptSession::detach(LinkId link) {
  attached_.erase(link);
  std::vector<std::string> to_server;
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (it->second.link != link) {
      ++it;
      continue;
    }
    if (it->first != initialize_id_)
      to_server.push_back(cancellation(it->first, "the switchboard link was lost"));
    ours_by_link_request_.erase({link, it->second.id});
    it = in_flight_.erase(it);
  }
  std::erase_if(initialize_waiting_, [&](const LinkRequestKey& key) { return key.first == link; });
  for (auto it = server_asks_.begin(); it != server_asks_.end();) {
    if (it->second != link) {
      ++it;
      continue;
    }
    to_server.push_back(
        error_answer(it->first, "the switchboard link was lost before an answer came"));
    it = server_asks_.erase(it);
  }
  return to_server;
}

Routed KeptSession::from_link(LinkId link, std::string_view message) {
  if (!attached(link)) return dropped("the link is not attached");
  const auto shape = scan_shape(message);
  if (!shape) return dropped("not one JSON-RPC object");
  if (shape->method && shape->id) return request_from_link(link, message, *shape);
  if (shape->method == "notifications/initialized") {
    if (std::exchange(initialized_sent_, true)) return {};  // the server has had it
    return Routed{.to_server = std::string(message)};
  }
  if (shape->method == "notifications/cancelled") return cancel_from_link(link, message, *shape);
  if (!shape->method && shape->id) return response_from_link(link, message, *shape);
  return Routed{.to_server = std::string(message)};
}

Routed KeptSession::request_from_link(LinkId link, std::string_view message,
                                      const MessageShape& shape) {
  const std::string_view id = text_of(message, *shape.id);
  if (shape.method == "initialize" && initialize_result_)
    return Routed{.to_links = {{link, answer(id, *initialize_result_)}}};
  if (in_flight_.size() + initialize_waiting_.size() >= kMaxInFlight) {
    return Routed{
        .to_links = {{link, error_answer(id, "too many requests in flight at the MCP server")}}};
  }
  if (shape.method == "initialize" && initialize_id_) {
    // Another link's initialize is out: this one is answered with its answer.
    initialize_waiting_.emplace_back(link, std::string(id));
    return {};
  }
  const std::int64_t ours = next_id_++;
  std::vector<std::pair<TextSpan, std::string>> edits{{*shape.id, std::to_string(ours)}};
  LinkRequest request{.link = link, .id = std::string(id)};
  if (shape.request_token) {
    // Our id is unique for the server's life, so it serves as the token too.
    edits.emplace_back(*shape.request_token, std::to_string(ours));
    request.progress_token = std::string(text_of(message, *shape.request_token));
  }
  if (shape.method == "initialize") initialize_id_ = ours;
  ours_by_link_request_[{link, request.id}] = ours;
  in_flight_.emplace(ours, std::move(request));
  return Routed{.to_server = spliced(message, std::move(edits))};
}

Routed KeptSession::cancel_from_link(LinkId link, std::string_view message,
                                     const MessageShape& shape) {
  if (!shape.request_id) return dropped("a cancellation that names no request");
  const auto found =
      ours_by_link_request_.find({link, std::string(text_of(message, *shape.request_id))});
  if (found == ours_by_link_request_.end()) return {};  // answered already: nothing to cancel
  // A server does not answer a cancelled request: the call is forgotten now, and a late
  // answer or progress for it reaches no one.
  const std::int64_t ours = found->second;
  ours_by_link_request_.erase(found);
  in_flight_.erase(ours);
  return Routed{.to_server = spliced(message, {{*shape.request_id, std::to_string(ours)}})};
}

// Only the link the server asked answers it, and only once.
Routed KeptSession::response_from_link(LinkId link, std::string_view message,
                                       const MessageShape& shape) {
  const auto asked = server_asks_.find(canonical_id(text_of(message, *shape.id)));
  if (asked == server_asks_.end() || asked->second != link)
    return dropped("an answer to no request of the server's");
  server_asks_.erase(asked);
  return Routed{.to_server = std::string(message)};
}

Routed KeptSession::from_server(std::string_view message) {
  const auto shape = scan_shape(message);
  if (!shape) {
    // A batch, or nesting too deep to read here: the switchboard judges it.
    if (attached_.empty()) return dropped("not attached");
    return to_every_link(message);
  }
  if (!shape->method && shape->id) return response_from_server(message, *shape);
  if (shape->method && shape->id) return request_from_server(message, *shape);
  if (shape->method == "notifications/progress") return progress_from_server(message, *shape);
  if (shape->method == "notifications/cancelled") return cancel_from_server(message, *shape);
  return to_every_link(message);  // none while detached: no one to hear it
}

Routed KeptSession::request_from_server(std::string_view message, const MessageShape& shape) {
  const std::string_view id = text_of(message, *shape.id);
  const auto link = link_for_server_request();
  if (!link) {
    return Routed{.to_server = error_answer(
                      id, attached_.empty()
                              ? "switchboard-connect is not attached to the switchboard"
                              : "calls are in flight from several switchboards: no one caller "
                                "can answer this request")};
  }
  if (server_asks_.size() >= kMaxInFlight) {
    return Routed{.to_server = error_answer(id, "too many requests awaiting the switchboard")};
  }
  server_asks_.emplace(canonical_id(id), *link);
  return Routed{.to_links = {{*link, std::string(message)}}};
}

// A server asks while it serves a call (docs/connect.md, "Twins"): the link whose calls
// are in flight, when only one link has any; with none in flight, any attached link (its
// switchboard answers `ping` and refuses the rest alike); with several, no one.
std::optional<LinkId> KeptSession::link_for_server_request() const {
  std::optional<LinkId> calling;
  for (const auto& [ours, request] : in_flight_) {
    if (ours == initialize_id_) continue;
    if (calling && *calling != request.link) return std::nullopt;
    calling = request.link;
  }
  if (calling) return calling;
  if (attached_.empty()) return std::nullopt;
  return *attached_.begin();
}

Routed KeptSession::response_from_server(std::string_view message, const MessageShape& shape) {
  const auto ours = integer_token<std::int64_t>(text_of(message, *shape.id));
  if (!ours) return dropped("a reply to no request of ours");
  Routed routed;
  if (ours == initialize_id_) routed = initialize_answered(message, shape);
  const auto found = in_flight_.find(*ours);
  if (found == in_flight_.end()) return routed;  // a lost attach's call: no one to hear it
  LinkRequest request = std::move(found->second);
  in_flight_.erase(found);
  ours_by_link_request_.erase({request.link, request.id});
  routed.to_links.emplace_back(request.link, spliced(message, {{*shape.id, request.id}}));
  return routed;
}

// The server's answer to the first initialize, kept when it succeeded, and given to every
// initialize that waited for it.
Routed KeptSession::initialize_answered(std::string_view message, const MessageShape& shape) {
  initialize_id_.reset();
  if (shape.result && !shape.error)
    initialize_result_ = std::string(text_of(message, *shape.result));
  Routed routed;
  for (const auto& [link, id] : std::exchange(initialize_waiting_, {}))
    routed.to_links.emplace_back(link, spliced(message, {{*shape.id, id}}));
  return routed;
}

Routed KeptSession::progress_from_server(std::string_view message, const MessageShape& shape) {
  if (!shape.progress_token) return dropped("progress that names no token");
  const auto ours = integer_token<std::int64_t>(text_of(message, *shape.progress_token));
  const auto found = ours ? in_flight_.find(*ours) : in_flight_.end();
  if (found == in_flight_.end() || !found->second.progress_token) return {};  // a lost call's
  return Routed{
      .to_links = {{found->second.link,
                    spliced(message, {{*shape.progress_token, *found->second.progress_token}})}}};
}

// The server gave up one of its own requests: only the link it asked hears of it.
Routed KeptSession::cancel_from_server(std::string_view message, const MessageShape& shape) {
  if (!shape.request_id) return dropped("a cancellation that names no request");
  const auto asked = server_asks_.find(canonical_id(text_of(message, *shape.request_id)));
  if (asked == server_asks_.end()) return {};  // answered already
  const LinkId link = asked->second;
  server_asks_.erase(asked);
  return Routed{.to_links = {{link, std::string(message)}}};
}

Routed KeptSession::to_every_link(std::string_view message) const {
  Routed routed;
  for (const LinkId link : attached_) routed.to_links.emplace_back(link, std::string(message));
  return routed;
}

}  // namespace sb::connect
