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

}  // namespace

std::optional<MessageShape> scan_shape(std::string_view message) {
  return ShapeScanner(message).scan();
}

std::vector<std::string> KeptSession::detach() {
  attached_ = false;
  std::vector<std::string> to_server;
  for (const auto& entry : in_flight_) {
    if (entry.first != initialize_id_)
      to_server.push_back(cancellation(entry.first, "the switchboard link was lost"));
  }
  for (const auto& id : server_asks_)
    to_server.push_back(error_answer(id, "the switchboard link was lost before an answer came"));
  in_flight_.clear();
  ours_by_link_id_.clear();
  server_asks_.clear();
  return to_server;
}

Routed KeptSession::from_link(std::string_view message) {
  const auto shape = scan_shape(message);
  if (!shape) return dropped("not one JSON-RPC object");
  if (shape->method && shape->id) return request_from_link(message, *shape);
  if (shape->method == "notifications/initialized") {
    if (std::exchange(initialized_sent_, true)) return {};  // the server has had it
    return Routed{.to_server = std::string(message)};
  }
  if (shape->method == "notifications/cancelled") return cancel_from_link(message, *shape);
  if (!shape->method && shape->id) {
    // Heterogeneous erase is C++23: find, then erase.
    if (const auto asked = server_asks_.find(text_of(message, *shape->id));
        asked != server_asks_.end())
      server_asks_.erase(asked);
  }
  return Routed{.to_server = std::string(message)};
}

Routed KeptSession::request_from_link(std::string_view message, const MessageShape& shape) {
  const std::string_view id = text_of(message, *shape.id);
  if (shape.method == "initialize" && initialize_result_) {
    return Routed{.to_link = answer(id, *initialize_result_)};
  }
  if (in_flight_.size() >= kMaxInFlight) {
    return Routed{.to_link = error_answer(id, "too many requests in flight at the MCP server")};
  }
  const std::int64_t ours = next_id_++;
  std::vector<std::pair<TextSpan, std::string>> edits{{*shape.id, std::to_string(ours)}};
  LinkRequest request{.id = std::string(id)};
  if (shape.request_token) {
    // Our id is unique for the server's life, so it serves as the token too.
    edits.emplace_back(*shape.request_token, std::to_string(ours));
    request.progress_token = std::string(text_of(message, *shape.request_token));
  }
  if (shape.method == "initialize") initialize_id_ = ours;
  ours_by_link_id_[request.id] = ours;
  in_flight_.emplace(ours, std::move(request));
  return Routed{.to_server = spliced(message, std::move(edits))};
}

Routed KeptSession::cancel_from_link(std::string_view message, const MessageShape& shape) {
  if (!shape.request_id) return dropped("a cancellation that names no request");
  const auto found = ours_by_link_id_.find(text_of(message, *shape.request_id));
  if (found == ours_by_link_id_.end()) return {};  // answered already: nothing to cancel
  return Routed{.to_server =
                    spliced(message, {{*shape.request_id, std::to_string(found->second)}})};
}

Routed KeptSession::from_server(std::string_view message) {
  const auto shape = scan_shape(message);
  if (!shape) {
    // A batch, or nesting too deep to read here: the switchboard judges it.
    if (!attached_) return dropped("not attached");
    return Routed{.to_link = std::string(message)};
  }
  if (!shape->method && shape->id) return response_from_server(message, *shape);
  if (shape->method && shape->id) return request_from_server(message, *shape);
  if (!attached_) return {};  // a notification while detached: no one to hear it
  if (shape->method == "notifications/progress") return progress_from_server(message, *shape);
  return Routed{.to_link = std::string(message)};
}

Routed KeptSession::request_from_server(std::string_view message, const MessageShape& shape) {
  const std::string_view id = text_of(message, *shape.id);
  if (!attached_) {
    return Routed{.to_server =
                      error_answer(id, "switchboard-connect is not attached to the switchboard")};
  }
  if (server_asks_.size() >= kMaxInFlight) {
    return Routed{.to_server = error_answer(id, "too many requests awaiting the switchboard")};
  }
  server_asks_.emplace(id);
  return Routed{.to_link = std::string(message)};
}

Routed KeptSession::response_from_server(std::string_view message, const MessageShape& shape) {
  const auto ours = integer_token<std::int64_t>(text_of(message, *shape.id));
  if (!ours) return dropped("a reply to no request of ours");
  if (ours == initialize_id_) {
    initialize_id_.reset();
    if (shape.result && !shape.error)
      initialize_result_ = std::string(text_of(message, *shape.result));
  }
  const auto found = in_flight_.find(*ours);
  if (found == in_flight_.end()) return {};  // a lost attach's call: no one to hear it
  const std::string link_id = std::move(found->second.id);
  in_flight_.erase(found);
  ours_by_link_id_.erase(link_id);
  return Routed{.to_link = spliced(message, {{*shape.id, link_id}})};
}

Routed KeptSession::progress_from_server(std::string_view message, const MessageShape& shape) {
  if (!shape.progress_token) return Routed{.to_link = std::string(message)};
  const auto ours = integer_token<std::int64_t>(text_of(message, *shape.progress_token));
  const auto found = ours ? in_flight_.find(*ours) : in_flight_.end();
  if (found == in_flight_.end() || !found->second.progress_token) return {};  // a lost call's
  return Routed{.to_link =
                    spliced(message, {{*shape.progress_token, *found->second.progress_token}})};
}

}  // namespace sb::connect
