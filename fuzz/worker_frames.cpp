// Fuzz target: the supervisor's check of every frame a worker sends
// (supervisor/worker_frames.hpp), compiled from the very file the supervisor uses.
//
// Input: a type selector byte, a call id selector byte, the meta's size (one byte), the meta,
// then the body. Checked: a frame is a violation with a reason, or exactly what its type allows.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.hpp"
#include "supervisor/workers/frame_checks.hpp"

namespace {

using sb::ipc::FrameType;
using namespace sb::supervisor;

constexpr FrameType kTypes[] = {FrameType::kHello, FrameType::kReply,
                                FrameType::kEvent, FrameType::kMessage,
                                FrameType::kCall,  static_cast<FrameType>(999)};
constexpr std::uint64_t kCallIds[] = {0, 1, 42, UINT64_MAX};

void check_event(const SessionEvent& event) {
  const std::size_t expected = event.kind == SessionEvent::Kind::kAttach     ? 2
                               : event.kind == SessionEvent::Kind::kTakeover ? 4
                                                                             : 5;
  FUZZ_CHECK(event.fields.is_object() && event.fields.size() == expected);
  FUZZ_CHECK(!event.fields.contains("computer") && !event.fields.contains("ts") &&
             !event.fields.contains("event"));
  for (const auto& [key, value] : event.fields.items()) {
    FUZZ_CHECK(value.is_number_unsigned() ||
               (value.is_string() && value.get_ref<const std::string&>().size() <= kMaxEventText));
  }
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

  const WorkerFrame checked = check_worker_frame(std::move(frame));
  if (const auto* violation = std::get_if<Violation>(&checked)) {
    FUZZ_CHECK(!violation->reason.empty());
  } else if (const auto* hello = std::get_if<HelloFrame>(&checked)) {
    FUZZ_CHECK(type == FrameType::kHello && call_id == 0 && body_size == 0);
    FUZZ_CHECK(hello->build.size() <= 128);
  } else if (const auto* reply = std::get_if<ReplyFrame>(&checked)) {
    FUZZ_CHECK(type == FrameType::kReply && reply->call_id == call_id && call_id != 0);
    FUZZ_CHECK(reply->body.empty() == (reply->outcome.status != sb::ipc::CallStatus::kReplied));
  } else if (const auto* message = std::get_if<MessageFrame>(&checked)) {
    FUZZ_CHECK(type == FrameType::kMessage && !message->body.empty());
    FUZZ_CHECK(call_id != 0 || message->meta.kind == sb::ipc::MessageKind::kNotification);
  } else {
    FUZZ_CHECK(type == FrameType::kEvent && call_id == 0 && body_size <= kMaxEventBytes);
    check_event(std::get<SessionEvent>(checked));
  }
  return 0;
}
