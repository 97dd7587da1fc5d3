#include "ipc/supervisor_frames.hpp"

#include <algorithm>

#include "ipc/meta_codec.hpp"
#include "ipc/parked_session.hpp"

namespace sb::ipc {
namespace {

std::uint64_t count_number(int value) {
  return static_cast<std::uint64_t>(std::max(value, 0));
}

Malformed malformed(FrameType type) {
  return Malformed{"a malformed frame of type " + std::to_string(static_cast<int>(type))};
}

// No descriptor (only kAttach and kTakeUp carry one), a call id exactly when the type names a call,
// and a body only when the type has one.
bool framed_as(const Frame& frame, bool names_call, bool may_have_body) {
  return !frame.fd.valid() && (frame.call_id != 0) == names_call &&
         (may_have_body || frame.body.empty());
}

SupervisorFrame decode_configure(const Frame& frame) {
  MetaReader in(frame.meta);
  const std::string_view computer = in.text();
  const auto max_inflight = int_count(in.number());
  const auto sole_caller = flag(in.byte());
  const auto handshake = duration(in.number());
  const auto ping_interval = duration(in.number());
  const auto heartbeat = duration(in.number());
  const auto drain = duration(in.number());
  const std::uint64_t max_buffer_bytes = in.number();
  if (!in.complete() || !framed_as(frame, false, false) || !max_inflight || !sole_caller ||
      !handshake || !ping_interval || !heartbeat || !drain)
    return malformed(frame.type);
  return Configure{std::string(computer), *max_inflight, *sole_caller, *handshake,
                   *ping_interval,        *heartbeat,    *drain,       max_buffer_bytes};
}

SupervisorFrame decode_attach(Frame&& frame) {
  MetaReader in(frame.meta);
  const std::string_view peer = in.text();
  const std::uint64_t generation = in.number();
  const auto max_inflight = int_count(in.number());
  if (!in.complete() || !frame.fd.valid() || frame.call_id != 0 || !max_inflight)
    return malformed(frame.type);
  return Attach{std::move(frame.fd), std::string(peer), generation, *max_inflight,
                std::move(frame.body)};
}

SupervisorFrame decode_call(Frame&& frame) {
  const auto meta = decode_call_meta(frame.meta);
  if (!meta || !framed_as(frame, true, true)) return malformed(frame.type);
  return Call{frame.call_id, *meta, std::move(frame.body)};
}

SupervisorFrame decode_cancel(const Frame& frame) {
  MetaReader in(frame.meta);
  const std::string_view reason = in.text();
  if (!in.complete() || !framed_as(frame, true, false)) return malformed(frame.type);
  return Cancel{frame.call_id, std::string(reason)};
}

SupervisorFrame decode_answer(Frame&& frame) {
  MetaReader in(frame.meta);
  const std::uint64_t key = in.number();
  if (!in.complete() || !framed_as(frame, true, true)) return malformed(frame.type);
  return Answer{frame.call_id, key, std::move(frame.body)};
}

SupervisorFrame decode_park(const Frame& frame) {
  MetaReader in(frame.meta);
  const auto drain = duration(in.number());
  if (!in.complete() || !framed_as(frame, false, false) || !drain) return malformed(frame.type);
  return Park{*drain};
}

SupervisorFrame decode_take_up(Frame&& frame) {
  MetaReader in(frame.meta);
  const std::uint64_t count = in.number();
  if (count > kMaxParkedCalls) return malformed(frame.type);
  std::vector<std::uint64_t> taken_up;
  for (std::uint64_t i = 0; i < count; ++i) taken_up.push_back(in.number());
  if (!in.complete() || !frame.fd.valid() || frame.call_id != 0 || frame.body.empty())
    return malformed(frame.type);
  return TakeUp{std::move(frame.fd), std::move(taken_up), std::move(frame.body)};
}

// A frame that is its type alone: a call id when it names a call, nothing else.
bool bare(const Frame& frame, bool names_call) {
  return frame.meta.empty() && framed_as(frame, names_call, false);
}

}  // namespace

Frame encode(const Configure& configure) {
  return Frame{.type = FrameType::kConfigure,
               .meta = MetaWriter()
                           .text(configure.computer)
                           .number(count_number(configure.max_inflight))
                           .byte(configure.sole_caller ? 1 : 0)
                           .number(duration_number(configure.handshake))
                           .number(duration_number(configure.ping_interval))
                           .number(duration_number(configure.heartbeat))
                           .number(duration_number(configure.drain))
                           .number(configure.max_buffer_bytes)
                           .take()};
}

Frame encode(Attach attach) {
  return Frame{.type = FrameType::kAttach,
               .meta = MetaWriter()
                           .text(attach.peer)
                           .number(attach.generation)
                           .number(count_number(attach.max_inflight))
                           .take(),
               .body = std::move(attach.upgrade_bytes),
               .fd = std::move(attach.socket)};
}

Frame encode(Call call) {
  return Frame{.type = FrameType::kCall,
               .call_id = call.call_id,
               .meta = encode_call_meta(call.meta),
               .body = std::move(call.params)};
}

Frame encode(const Cancel& cancel) {
  return Frame{.type = FrameType::kCancel,
               .call_id = cancel.call_id,
               .meta = MetaWriter().text(cancel.reason).take()};
}

Frame encode(Answer answer) {
  return Frame{.type = FrameType::kAnswer,
               .call_id = answer.call_id,
               .meta = MetaWriter().number(answer.key).take(),
               .body = std::move(answer.response_without_id)};
}

Frame encode(const Delivered& delivered) {
  return Frame{.type = FrameType::kDelivered, .call_id = delivered.call_id};
}

Frame encode(const Park& park) {
  return Frame{.type = FrameType::kPark,
               .meta = MetaWriter().number(duration_number(park.drain)).take()};
}

Frame encode(TakeUp take_up) {
  MetaWriter meta;
  meta.number(take_up.taken_up_calls.size());
  for (const auto call_id : take_up.taken_up_calls) meta.number(call_id);
  return Frame{.type = FrameType::kTakeUp,
               .meta = meta.take(),
               .body = std::move(take_up.record),
               .fd = std::move(take_up.socket)};
}

Frame encode(Revoke) {
  return Frame{.type = FrameType::kRevoke};
}

Frame encode(Shutdown) {
  return Frame{.type = FrameType::kShutdown};
}

SupervisorFrame decode_supervisor_frame(Frame&& frame) {
  switch (frame.type) {
    case FrameType::kConfigure:
      return decode_configure(frame);
    case FrameType::kAttach:
      return decode_attach(std::move(frame));
    case FrameType::kCall:
      return decode_call(std::move(frame));
    case FrameType::kCancel:
      return decode_cancel(frame);
    case FrameType::kAnswer:
      return decode_answer(std::move(frame));
    case FrameType::kDelivered:
      if (!bare(frame, true)) return malformed(frame.type);
      return Delivered{frame.call_id};
    case FrameType::kPark:
      return decode_park(frame);
    case FrameType::kTakeUp:
      return decode_take_up(std::move(frame));
    case FrameType::kRevoke:
      if (!bare(frame, false)) return malformed(frame.type);
      return Revoke{};
    case FrameType::kShutdown:
      if (!bare(frame, false)) return malformed(frame.type);
      return Shutdown{};
    default:
      return Malformed{"a frame of type " + std::to_string(static_cast<int>(frame.type)) +
                       ", which the supervisor does not send"};
  }
}

}  // namespace sb::ipc
