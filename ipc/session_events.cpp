#include "ipc/session_events.hpp"

#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace sb::ipc {
namespace {

using json = nlohmann::json;

// One field of an event: its name on the wire and where it lives in the struct.
template <typename Event>
struct Field {
  std::string_view name;
  std::variant<std::string Event::*, std::uint64_t Event::*> member;
};

template <typename Event>
struct Shape {
  std::string_view name;
  std::vector<Field<Event>> fields;
};

// The table: every event a worker may report, with exactly these fields.
const auto& shapes() {
  static const auto table = std::make_tuple(
      Shape<AttachEvent>{"vm_attach",
                         {{"peer", &AttachEvent::peer}, {"generation", &AttachEvent::generation}}},
      Shape<TakeoverEvent>{"vm_takeover",
                           {{"old_peer", &TakeoverEvent::old_peer},
                            {"old_generation", &TakeoverEvent::old_generation},
                            {"new_peer", &TakeoverEvent::new_peer},
                            {"new_generation", &TakeoverEvent::new_generation}}},
      Shape<DetachEvent>{"vm_detach",
                         {{"peer", &DetachEvent::peer},
                          {"generation", &DetachEvent::generation},
                          {"code", &DetachEvent::code},
                          {"reason", &DetachEvent::reason},
                          {"attached_for_secs", &DetachEvent::attached_for_secs}}},
      Shape<TakenUpEvent>{
          "vm_resumed",
          {{"peer", &TakenUpEvent::peer}, {"generation", &TakenUpEvent::generation}}});
  return table;
}

template <typename Event>
const Shape<Event>& shape_of() {
  return std::get<Shape<Event>>(shapes());
}

template <typename Event>
json fields_of(const Event& event) {
  json fields = json::object();
  for (const auto& field : shape_of<Event>().fields) {
    std::visit([&](auto member) { fields[std::string(field.name)] = event.*member; }, field.member);
  }
  return fields;
}

bool read_field(const json& value, std::string& into) {
  if (!value.is_string() || value.get_ref<const std::string&>().size() > kMaxEventText)
    return false;
  into = value.get<std::string>();
  return true;
}

bool read_field(const json& value, std::uint64_t& into) {
  if (!value.is_number_unsigned()) return false;
  into = value.get<std::uint64_t>();
  return true;
}

// Exactly the shape's fields, each of its type; nothing when one is missing, mistyped or
// extra (a "computer" or a "ts" of the worker's own is a forgery).
template <typename Event>
std::optional<Event> read_shape(const Shape<Event>& shape, const json& body, std::string& reason) {
  const std::string name(shape.name);
  if (body.size() != shape.fields.size() + 1) {
    reason = "a " + name + " event with fields of its own";
    return std::nullopt;
  }
  Event event;
  for (const auto& field : shape.fields) {
    const auto value = body.find(field.name);
    const bool fits =
        value != body.end() &&
        std::visit([&](auto member) { return read_field(*value, event.*member); }, field.member);
    if (!fits) {
      reason = "a " + name + " event with a bad " + std::string(field.name);
      return std::nullopt;
    }
  }
  return event;
}

// True when `body` names this shape's event, which is then read into `decoded`.
template <typename Event>
bool read_named(const Shape<Event>& shape, const json& body, std::string& reason,
                std::optional<SessionEvent>& decoded) {
  if (body.at("event") != shape.name) return false;
  if (auto event = read_shape(shape, body, reason)) decoded = std::move(*event);
  return true;
}

}  // namespace

std::string_view event_name(const SessionEvent& event) {
  return std::visit(
      [](const auto& typed) { return shape_of<std::remove_cvref_t<decltype(typed)>>().name; },
      event);
}

json event_fields(const SessionEvent& event) {
  return std::visit([](const auto& typed) { return fields_of(typed); }, event);
}

std::string encode_event_body(const SessionEvent& event) {
  json body = event_fields(event);
  body["event"] = event_name(event);
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<SessionEvent> decode_event_body(std::string_view body, std::string& reason) {
  if (body.size() > kMaxEventBytes) {
    reason = "an event over 4 KiB";
    return std::nullopt;
  }
  const json parsed = json::parse(body, nullptr, false);
  if (!parsed.is_object()) {
    reason = "an event that is not one JSON object";
    return std::nullopt;
  }
  const auto name = parsed.find("event");
  if (name == parsed.end() || !name->is_string()) {
    reason = "an event without its name";
    return std::nullopt;
  }
  std::optional<SessionEvent> decoded;
  const bool known = std::apply(
      [&](const auto&... shape) { return (read_named(shape, parsed, reason, decoded) || ...); },
      shapes());
  if (!known) reason = "an event it may not report";
  return decoded;
}

}  // namespace sb::ipc
