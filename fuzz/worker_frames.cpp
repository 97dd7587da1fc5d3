// Fuzz target: the supervisor's decoding of every frame a worker sends
// (ipc/worker_frames.hpp).
//
// Input: a type selector byte, a call id selector byte, the meta's size (one byte), the meta,
// then the body. Checked: a frame is Malformed with a reason, or exactly what its type allows,
// and encodes back to a frame that decodes to the same.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.hpp"
#include "ipc/parked_session.hpp"
#include "ipc/worker_frames.hpp"

namespace {

using sb::ipc::FrameType;
using namespace sb::ipc;

constexpr FrameType kTypes[] = {FrameType::kHello,          FrameType::kReply,  FrameType::kEvent,
                                FrameType::kMessage,        FrameType::kParked, FrameType::kCall,
                                static_cast<FrameType>(999)};
constexpr std::uint64_t kCallIds[] = {0, 1, 42, UINT64_MAX};

void check_text(const std::string& text) {
  FUZZ_CHECK(text.size() <= kMaxEventText);
}

void check_event(const SessionEvent& event) {
  if (const auto* attach = std::get_if<AttachEvent>(&event)) return check_text(attach->peer);
  if (const auto* resumed = std::get_if<TakenUpEvent>(&event)) return check_text(resumed->peer);
  if (const auto* takeover = std::get_if<TakeoverEvent>(&event)) {
    check_text(takeover->old_peer);
    return check_text(takeover->new_peer);
  }
  const auto& detach = std::get<DetachEvent>(event);
  check_text(detach.peer);
  check_text(detach.reason);
}

// What a decoded frame encodes to decodes to the same encoding again.
template <typename Decoded>
void check_round_trip(const Decoded& decoded) {
  const Frame once = encode(Decoded(decoded));
  const WorkerFrame again = decode_worker_frame(encode(Decoded(decoded)));
  const auto* same = std::get_if<Decoded>(&again);
  FUZZ_CHECK(same != nullptr);
  const Frame twice = encode(Decoded(*same));
  FUZZ_CHECK(once.type == twice.type && once.call_id == twice.call_id && once.meta == twice.meta &&
             once.body == twice.body);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 3, size - 3);
  const std::size_t meta_size = std::min<std::size_t>(data[2], bytes.size());
  sb::ipc::Frame frame;
  frame.type = kTypes[data[0] % std::size(kTypes)];
  frame.call_id = kCallIds[data[1] % std::size(kCallIds)];
  frame.meta = std::string(bytes.substr(0, meta_size));
  frame.body = std::string(bytes.substr(meta_size));
  const FrameType type = frame.type;
  const std::uint64_t call_id = frame.call_id;
  const std::size_t body_size = frame.body.size();

  const WorkerFrame checked = decode_worker_frame(std::move(frame));
  if (const auto* malformed = std::get_if<Malformed>(&checked)) {
    FUZZ_CHECK(!malformed->reason.empty());
  } else if (const auto* hello = std::get_if<Hello>(&checked)) {
    FUZZ_CHECK(type == FrameType::kHello && call_id == 0 && body_size == 0);
    FUZZ_CHECK(hello->build.size() <= 128);
    check_round_trip(*hello);
  } else if (const auto* reply = std::get_if<Reply>(&checked)) {
    FUZZ_CHECK(type == FrameType::kReply && reply->call_id == call_id && call_id != 0);
    FUZZ_CHECK(reply->body.empty() == (reply->outcome.status != CallStatus::kReplied));
    check_round_trip(*reply);
  } else if (const auto* parked = std::get_if<Parked>(&checked)) {
    // The record is read by whoever relies on it (the switch_records target); here only
    // its bound.
    FUZZ_CHECK(type == FrameType::kParked && call_id == 0 && parked->record.size() == body_size);
    FUZZ_CHECK(body_size <= kMaxParkedSessionBytes);
    check_round_trip(*parked);
  } else if (const auto* message = std::get_if<Message>(&checked)) {
    FUZZ_CHECK(type == FrameType::kMessage && !message->body.empty());
    FUZZ_CHECK(call_id != 0 || message->meta.kind == MessageKind::kNotification);
    check_round_trip(*message);
  } else {
    FUZZ_CHECK(type == FrameType::kEvent && call_id == 0 && body_size <= kMaxEventBytes);
    check_event(std::get<SessionEvent>(checked));
    check_round_trip(std::get<SessionEvent>(checked));
  }
  return 0;
}
