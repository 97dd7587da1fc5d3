// The binary metas of the frames every call makes: each round-trips (a reply's times with
// it), and a malformed one
// (a byte too many or too few, an enum or flag out of range) is refused.
#include <gtest/gtest.h>

#include "ipc/messages.hpp"

namespace sb::ipc {
namespace {

TEST(CallOutcome, RoundTripsThroughMeta) {
  const CallOutcome outcome{.status = CallStatus::kReplied,
                            .response_bytes = 1234,
                            .kind = ReplyKind::kRpcError,
                            .error_code = -32050,
                            .sent_unix_nanos = 1'800'000'000'000'000'001ULL,
                            .first_byte_unix_nanos = 1'800'000'000'200'000'000ULL,
                            .replied_unix_nanos = 1'800'000'000'250'000'000ULL};
  const auto decoded = decode_outcome(encode_outcome(outcome));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->status, CallStatus::kReplied);
  EXPECT_EQ(decoded->response_bytes, 1234u);
  EXPECT_EQ(decoded->kind, ReplyKind::kRpcError);
  EXPECT_EQ(decoded->error_code, -32050);
  EXPECT_EQ(decoded->sent_unix_nanos, 1'800'000'000'000'000'001ULL);
  EXPECT_EQ(decoded->first_byte_unix_nanos, 1'800'000'000'200'000'000ULL);
  EXPECT_EQ(decoded->replied_unix_nanos, 1'800'000'000'250'000'000ULL);
  const auto without_code = decode_outcome(encode_outcome({CallStatus::kTimeout, 0}));
  ASSERT_TRUE(without_code);
  EXPECT_EQ(without_code->status, CallStatus::kTimeout);
  EXPECT_FALSE(without_code->error_code);
}

// A worker's meta is checked, not trusted: every byte is accounted for and every field in
// range (the layout: status, kind, has-code, then the size, the code and the three times as
// 8 bytes each).
TEST(CallOutcome, AMalformedMetaIsRefused) {
  const std::string good = encode_outcome({CallStatus::kReplied, 5, ReplyKind::kOk});
  ASSERT_TRUE(decode_outcome(good));
  auto with_byte = [&](std::size_t at, char value) {
    std::string meta = good;
    meta[at] = value;
    return meta;
  };
  EXPECT_FALSE(decode_outcome(""));
  EXPECT_FALSE(decode_outcome(R"({"status":"replied","response_bytes":0})"));
  EXPECT_FALSE(decode_outcome(good.substr(0, good.size() - 1))) << "cut short";
  EXPECT_FALSE(decode_outcome(good + '\0')) << "a byte too many";
  EXPECT_FALSE(decode_outcome(with_byte(0, 5))) << "no such status";
  EXPECT_FALSE(decode_outcome(with_byte(1, 3))) << "no such kind";
  EXPECT_FALSE(decode_outcome(with_byte(2, 2))) << "has-code is a flag";
  EXPECT_FALSE(decode_outcome(with_byte(11, 1))) << "a code where none is said to be";
}

TEST(MessageMeta, RoundTripsAndRefusesWhatIsMalformed) {
  const auto decoded = decode_message_meta(encode_message_meta({MessageKind::kRequest, 7}));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->kind, MessageKind::kRequest);
  EXPECT_EQ(decoded->key, 7u);
  std::string unknown_kind = encode_message_meta({MessageKind::kNotification, 1});
  unknown_kind[0] = 3;
  EXPECT_FALSE(decode_message_meta(unknown_kind));
  EXPECT_FALSE(decode_message_meta(R"({"kind":2,"key":1})"));
  EXPECT_FALSE(decode_message_meta(encode_message_meta({}) + 'x'));
}

TEST(CallMeta, RoundTripsAndRefusesWhatIsMalformed) {
  const CallMeta meta{.caller = "muse",
                      .caller_cap = 3,
                      .timeout = std::chrono::milliseconds(60'000),
                      .max_total = std::chrono::milliseconds(600'000),
                      .method = "tools/call",
                      .stream = true};
  const std::string bytes = encode_call_meta(meta);
  const auto decoded = decode_call_meta(bytes);
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->caller, "muse");
  EXPECT_EQ(decoded->caller_cap, 3);
  EXPECT_EQ(decoded->timeout, std::chrono::milliseconds(60'000));
  EXPECT_EQ(decoded->max_total, std::chrono::milliseconds(600'000));
  EXPECT_EQ(decoded->method, "tools/call");
  EXPECT_TRUE(decoded->stream);
  EXPECT_FALSE(decode_call_meta(bytes.substr(0, bytes.size() - 1)));
  EXPECT_FALSE(decode_call_meta(bytes + 'x'));
  std::string long_caller = bytes;
  long_caller[0] = 100;  // the caller's length, past the end of the meta
  EXPECT_FALSE(decode_call_meta(long_caller));
  std::string bad_flag = bytes;
  bad_flag.back() = 2;
  EXPECT_FALSE(decode_call_meta(bad_flag));
  std::string huge_cap = bytes;
  huge_cap[8 + 4 + 7] = 1;  // the cap's top byte: past what an int holds
  EXPECT_FALSE(decode_call_meta(huge_cap));
}

}  // namespace
}  // namespace sb::ipc
