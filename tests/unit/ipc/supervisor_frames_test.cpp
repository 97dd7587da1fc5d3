// The frames the supervisor sends a worker: each round-trips through its codec, and a
// frame that is not exactly what its type allows (a meta short or long by a byte, a
// descriptor where none belongs, a call id missing or extra) is Malformed, never read
// with defaults.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "ipc/supervisor_frames.hpp"

namespace sb::ipc {
namespace {

using namespace std::chrono_literals;

template <typename Expected>
Expected decoded_as(Frame frame) {
  auto decoded = decode_supervisor_frame(std::move(frame));
  if (const auto* malformed = std::get_if<Malformed>(&decoded))
    ADD_FAILURE() << "malformed: " << malformed->reason;
  EXPECT_TRUE(std::holds_alternative<Expected>(decoded));
  return std::holds_alternative<Expected>(decoded) ? std::move(std::get<Expected>(decoded))
                                                   : Expected{};
}

bool malformed(Frame frame) {
  return std::holds_alternative<Malformed>(decode_supervisor_frame(std::move(frame)));
}

base::UniqueFd a_descriptor() {
  return base::UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
}

TEST(SupervisorFrames, ConfigureRoundTrips) {
  const Configure configure{.computer = "mac mini",
                            .max_inflight = 8,
                            .sole_caller = true,
                            .handshake = 1500ms,
                            .ping_interval = 20s,
                            .heartbeat = 1s,
                            .drain = 10s,
                            .max_buffer_bytes = 64ull << 20};
  const auto back = decoded_as<Configure>(encode(configure));
  EXPECT_EQ(back.computer, "mac mini");
  EXPECT_EQ(back.max_inflight, 8);
  EXPECT_TRUE(back.sole_caller);
  EXPECT_EQ(back.handshake, 1500ms);
  EXPECT_EQ(back.ping_interval, 20s);
  EXPECT_EQ(back.heartbeat, 1s);
  EXPECT_EQ(back.drain, 10s);
  EXPECT_EQ(back.max_buffer_bytes, 64ull << 20);
}

TEST(SupervisorFrames, AMetaShortOrLongByAByteIsMalformed) {
  Frame shorter = encode(Configure{.computer = "a", .max_inflight = 8});
  shorter.meta.pop_back();
  EXPECT_TRUE(malformed(std::move(shorter)));
  Frame longer = encode(Configure{.computer = "a", .max_inflight = 8});
  longer.meta.push_back('\0');
  EXPECT_TRUE(malformed(std::move(longer)));
  // The meta of the JSON era, which a default-reading decoder would have taken.
  EXPECT_TRUE(malformed(Frame{.type = FrameType::kConfigure, .meta = R"({"name":"a"})"}));
  Frame flag = encode(Configure{.computer = "a", .max_inflight = 8});
  flag.meta[8 + 1 + 8] = 2;  // sole_caller: neither 0 nor 1
  EXPECT_TRUE(malformed(std::move(flag)));
}

TEST(SupervisorFrames, AttachCarriesItsDescriptorAndNoOtherFrameMay) {
  const auto back = decoded_as<Attach>(encode(Attach{.socket = a_descriptor(),
                                                     .peer = "10.0.0.1:5",
                                                     .generation = 7,
                                                     .max_inflight = 4,
                                                     .upgrade_bytes = "GET /vm/attach"}));
  EXPECT_TRUE(back.socket.valid());
  EXPECT_EQ(back.peer, "10.0.0.1:5");
  EXPECT_EQ(back.generation, 7u);
  EXPECT_EQ(back.max_inflight, 4);
  EXPECT_EQ(back.upgrade_bytes, "GET /vm/attach");

  Frame without = encode(Attach{.peer = "p", .generation = 1, .max_inflight = 4});
  EXPECT_TRUE(malformed(std::move(without)));
  Frame cancel = encode(Cancel{3, "why"});
  cancel.fd = a_descriptor();
  EXPECT_TRUE(malformed(std::move(cancel)));
}

TEST(SupervisorFrames, CallCancelAnswerAndDeliveredNameTheirCall) {
  // Filled in field by field: g++ 12 warns falsely (-Wmaybe-uninitialized) on the
  // designated initializers of a Call here.
  Call sent;
  sent.call_id = 9;
  sent.meta.caller = "alice";
  sent.meta.caller_cap = 2;
  sent.meta.timeout = 60s;
  sent.meta.max_total = 600s;
  sent.meta.method = "tools/call";
  sent.meta.stream = true;
  sent.params = R"({"name":"echo"})";
  const auto call = decoded_as<Call>(encode(std::move(sent)));
  EXPECT_EQ(call.call_id, 9u);
  EXPECT_EQ(call.meta.caller, "alice");
  EXPECT_EQ(call.meta.method, "tools/call");
  EXPECT_TRUE(call.meta.stream);
  EXPECT_EQ(call.params, R"({"name":"echo"})");

  EXPECT_EQ(decoded_as<Cancel>(encode(Cancel{9, "timed out"})).reason, "timed out");
  const auto answer = decoded_as<Answer>(encode(Answer{9, 3, R"({"result":{}})"}));
  EXPECT_EQ(answer.key, 3u);
  EXPECT_EQ(answer.response_without_id, R"({"result":{}})");
  EXPECT_EQ(decoded_as<Delivered>(encode(Delivered{9})).call_id, 9u);

  EXPECT_TRUE(malformed(encode(Cancel{0, "no call"})));
  EXPECT_TRUE(malformed(encode(Delivered{0})));
  Frame delivered = encode(Delivered{9});
  delivered.body = "x";
  EXPECT_TRUE(malformed(std::move(delivered)));
}

TEST(SupervisorFrames, ParkAndTakeUpRoundTripAndOnlyTakeUpCarriesADescriptor) {
  EXPECT_EQ(decoded_as<Park>(encode(Park{.drain = 10s})).drain, 10s);
  const auto take_up = decoded_as<TakeUp>(
      encode(TakeUp{.socket = a_descriptor(), .taken_up_calls = {4, 9}, .record = "bytes"}));
  EXPECT_TRUE(take_up.socket.valid());
  EXPECT_EQ(take_up.taken_up_calls, (std::vector<std::uint64_t>{4, 9}));
  EXPECT_EQ(take_up.record, "bytes");

  EXPECT_TRUE(malformed(encode(TakeUp{.taken_up_calls = {4}, .record = "bytes"})));
  EXPECT_TRUE(malformed(encode(TakeUp{.socket = a_descriptor(), .record = ""})));
  Frame park = encode(Park{.drain = 1s});
  park.fd = a_descriptor();
  EXPECT_TRUE(malformed(std::move(park)));
  // A count of adopted calls larger than any session holds is refused before it is read.
  Frame many = encode(TakeUp{.socket = a_descriptor(), .record = "bytes"});
  many.meta.assign(8, '\xff');
  EXPECT_TRUE(malformed(std::move(many)));
}

TEST(SupervisorFrames, RevokeAndShutdownAreTheirTypeAlone) {
  decoded_as<Revoke>(encode(Revoke{}));
  decoded_as<Shutdown>(encode(Shutdown{}));
  Frame revoke = encode(Revoke{});
  revoke.call_id = 1;
  EXPECT_TRUE(malformed(std::move(revoke)));
  Frame shutdown = encode(Shutdown{});
  shutdown.meta.assign(1, 'x');  // `= "x"` trips g++ 12's false -Wrestrict
  EXPECT_TRUE(malformed(std::move(shutdown)));
  EXPECT_TRUE(malformed(Frame{.type = FrameType::kHello}));
}

}  // namespace
}  // namespace sb::ipc
