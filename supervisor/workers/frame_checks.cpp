#include "supervisor/workers/frame_checks.hpp"

#include <array>
#include <string_view>
#include <vector>

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

enum class FieldType { kText, kCount };

struct FieldRule {
  std::string_view name;
  FieldType type;
};

struct EventRule {
  SessionEvent::Kind kind;
  std::string_view name;
  std::vector<FieldRule> fields;
};

// The whole vocabulary of a worker's audit lines (docs/protocol.md, "Audit log").
const std::array<EventRule, 3>& event_rules() {
  static const std::array<EventRule, 3> rules{{
      {SessionEvent::Kind::kAttach,
       "vm_attach",
       {{"peer", FieldType::kText}, {"generation", FieldType::kCount}}},
      {SessionEvent::Kind::kTakeover,
       "vm_takeover",
       {{"old_peer", FieldType::kText},
        {"old_generation", FieldType::kCount},
        {"new_peer", FieldType::kText},
        {"new_generation", FieldType::kCount}}},
      {SessionEvent::Kind::kDetach,
       "vm_detach",
       {{"peer", FieldType::kText},
        {"generation", FieldType::kCount},
        {"code", FieldType::kCount},
        {"reason", FieldType::kText},
        {"attached_for_secs", FieldType::kCount}}},
  }};
  return rules;
}

bool field_fits(const json& value, FieldType type) {
  if (type == FieldType::kCount) return value.is_number_unsigned();
  return value.is_string() && value.get_ref<const std::string&>().size() <= kMaxEventText;
}

WorkerFrame check_event(const ipc::Frame& frame) {
  if (!frame.meta.empty() || frame.call_id != 0)
    return Violation{"an event with a meta or call id"};
  if (frame.body.size() > kMaxEventBytes) return Violation{"an event over 4 KiB"};
  json body = json::parse(frame.body, nullptr, false);
  if (!body.is_object()) return Violation{"an event that is not one JSON object"};
  const auto event = body.find("event");
  if (event == body.end() || !event->is_string()) return Violation{"an event without its name"};
  for (const auto& rule : event_rules()) {
    if (*event != rule.name) continue;
    // Exactly the event's fields: one it did not name (a "computer", a "ts") is a forgery.
    if (body.size() != rule.fields.size() + 1)
      return Violation{"a " + std::string(rule.name) + " event with fields of its own"};
    SessionEvent checked{rule.kind, std::string(rule.name), json::object()};
    for (const auto& field : rule.fields) {
      const auto value = body.find(field.name);
      if (value == body.end() || !field_fits(*value, field.type))
        return Violation{"a " + std::string(rule.name) + " event with a bad " +
                         std::string(field.name)};
      checked.fields[std::string(field.name)] = std::move(*value);
    }
    return checked;
  }
  return Violation{"an event it may not report"};
}

WorkerFrame check_hello(const ipc::Frame& frame) {
  const json meta = json::parse(frame.meta, nullptr, false);
  if (!meta.is_object() || meta.size() != 3 || !frame.body.empty() || frame.call_id != 0)
    return Violation{"a malformed hello"};
  const auto pid = meta.find("pid");
  const auto protocol = meta.find("protocol");
  const auto build = meta.find("build");
  if (pid == meta.end() || !pid->is_number_integer() || protocol == meta.end() ||
      !protocol->is_number_integer() || build == meta.end() || !build->is_string() ||
      build->get_ref<const std::string&>().size() > 128)
    return Violation{"a malformed hello"};
  return HelloFrame{pid->get<std::int64_t>(), protocol->get<std::int64_t>(),
                    build->get<std::string>()};
}

WorkerFrame check_reply(ipc::Frame&& frame) {
  if (frame.call_id == 0) return Violation{"a reply without a call id"};
  const auto outcome = ipc::decode_outcome(frame.meta);
  if (!outcome) return Violation{"a reply with a malformed meta"};
  // Only a computer's answer has a body; the other outcomes are the worker's own verdicts.
  const bool replied = outcome->status == ipc::CallStatus::kReplied;
  const bool has_body = frame.arriving || !frame.body.empty();
  if (replied != has_body) return Violation{"a reply whose body does not fit its status"};
  return ReplyFrame{frame.call_id, *outcome, std::move(frame.body), std::move(frame.arriving)};
}

WorkerFrame check_message(ipc::Frame&& frame) {
  const auto meta = ipc::decode_message_meta(frame.meta);
  if (!meta) return Violation{"a message with a malformed meta"};
  if (frame.call_id == 0 && meta->kind != ipc::MessageKind::kNotification)
    return Violation{"a message for no call that is not a notification"};
  if (frame.body.empty()) return Violation{"an empty message"};
  return MessageFrame{frame.call_id, *meta, std::move(frame.body)};
}

}  // namespace

WorkerFrame check_worker_frame(ipc::Frame&& frame) {
  switch (frame.type) {
    case ipc::FrameType::kHello:
      return check_hello(frame);
    case ipc::FrameType::kReply:
      return check_reply(std::move(frame));
    case ipc::FrameType::kMessage:
      return check_message(std::move(frame));
    case ipc::FrameType::kEvent:
      return check_event(frame);
    default:
      return Violation{"a frame of type " + std::to_string(static_cast<int>(frame.type)) +
                       ", which a worker does not send"};
  }
}

}  // namespace sb::supervisor
