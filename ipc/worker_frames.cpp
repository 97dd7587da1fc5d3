#include "ipc/worker_frames.hpp"

#include <nlohmann/json.hpp>

#include "ipc/parked_session.hpp"

namespace sb::ipc {
namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxBuildChars = 128;

WorkerFrame decode_hello(const Frame& frame) {
  const json meta = json::parse(frame.meta, nullptr, false);
  if (!meta.is_object() || meta.size() != 3 || !frame.body.empty() || frame.call_id != 0)
    return Malformed{"a malformed hello"};
  const auto pid = meta.find("pid");
  const auto protocol = meta.find("protocol");
  const auto build = meta.find("build");
  if (pid == meta.end() || !pid->is_number_integer() || protocol == meta.end() ||
      !protocol->is_number_integer() || build == meta.end() || !build->is_string() ||
      build->get_ref<const std::string&>().size() > kMaxBuildChars)
    return Malformed{"a malformed hello"};
  return Hello{pid->get<std::int64_t>(), protocol->get<std::int64_t>(), build->get<std::string>()};
}

WorkerFrame decode_reply(Frame&& frame) {
  if (frame.call_id == 0) return Malformed{"a reply without a call id"};
  const auto outcome = decode_outcome(frame.meta);
  if (!outcome) return Malformed{"a reply with a malformed meta"};
  // Only a computer's answer has a body; the other outcomes are the worker's own verdicts.
  const bool replied = outcome->status == CallStatus::kReplied;
  const bool has_body = frame.arriving || !frame.body.empty();
  if (replied != has_body) return Malformed{"a reply whose body does not fit its status"};
  return Reply{frame.call_id, *outcome, std::move(frame.body), std::move(frame.arriving)};
}

WorkerFrame decode_message(Frame&& frame) {
  const auto meta = decode_message_meta(frame.meta);
  if (!meta) return Malformed{"a message with a malformed meta"};
  if (frame.call_id == 0 && meta->kind != MessageKind::kNotification)
    return Malformed{"a message for no call that is not a notification"};
  if (frame.body.empty()) return Malformed{"an empty message"};
  return Message{frame.call_id, *meta, std::move(frame.body)};
}

WorkerFrame decode_event(const Frame& frame) {
  if (!frame.meta.empty() || frame.call_id != 0)
    return Malformed{"an event with a meta or call id"};
  std::string reason;
  auto event = decode_event_body(frame.body, reason);
  if (!event) return Malformed{std::move(reason)};
  return std::move(*event);
}

// The record itself is decoded by whoever relies on it (parked_session.hpp); here only its
// bound is checked.
WorkerFrame decode_parked(Frame&& frame) {
  if (!frame.meta.empty() || frame.call_id != 0) return Malformed{"a parked frame with a meta"};
  if (frame.body.size() > kMaxParkedSessionBytes)
    return Malformed{"a parked record over its bound"};
  return Parked{std::move(frame.body)};
}

}  // namespace

Frame encode(const Hello& hello) {
  return Frame{
      .type = FrameType::kHello,
      .meta =
          json{{"pid", hello.pid}, {"protocol", hello.protocol}, {"build", hello.build}}.dump()};
}

Frame encode(Reply reply) {
  return Frame{.type = FrameType::kReply,
               .call_id = reply.call_id,
               .meta = encode_outcome(reply.outcome),
               .body = std::move(reply.body)};
}

Frame encode(Message message) {
  return Frame{.type = FrameType::kMessage,
               .call_id = message.call_id,
               .meta = encode_message_meta(message.meta),
               .body = std::move(message.body)};
}

Frame encode(const SessionEvent& event) {
  return Frame{.type = FrameType::kEvent, .body = encode_event_body(event)};
}

Frame encode(Parked parked) {
  return Frame{.type = FrameType::kParked, .body = std::move(parked.record)};
}

WorkerFrame decode_worker_frame(Frame&& frame) {
  // The supervisor's end never takes one (docs/architecture.md, "Trust boundaries"); a
  // frame that had one is no frame a worker may send.
  if (frame.fd.valid()) return Malformed{"a frame that carries a descriptor"};
  switch (frame.type) {
    case FrameType::kHello:
      return decode_hello(frame);
    case FrameType::kReply:
      return decode_reply(std::move(frame));
    case FrameType::kMessage:
      return decode_message(std::move(frame));
    case FrameType::kEvent:
      return decode_event(frame);
    case FrameType::kParked:
      return decode_parked(std::move(frame));
    default:
      return Malformed{"a frame of type " + std::to_string(static_cast<int>(frame.type)) +
                       ", which a worker does not send"};
  }
}

}  // namespace sb::ipc
