// The worker's one-pass reading of a computer's message: what it finds, what it refuses,
// and that it agrees with a full JSON parser on every input.
#include "worker/reply_scan.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "shared/jsonrpc.hpp"

namespace sb::worker {
namespace {

using json = nlohmann::json;

std::optional<ScannedMessage> scan(std::string_view text) {
  return scan_message(text, jsonrpc::kMaxNesting);
}

std::string cut(std::string_view text) {
  const auto scanned = scan(text);
  EXPECT_TRUE(scanned.has_value()) << text;
  return scanned ? without_id(text, *scanned) : std::string();
}

TEST(ReplyScan, FindsTheIdAndCutsItOutWhereverItStands) {
  EXPECT_EQ(cut(R"({"id":7,"jsonrpc":"2.0","result":{}})"), R"({"jsonrpc":"2.0","result":{}})");
  EXPECT_EQ(cut(R"({"jsonrpc":"2.0","id":7,"result":{}})"), R"({"jsonrpc":"2.0","result":{}})");
  EXPECT_EQ(cut(R"({"jsonrpc":"2.0","result":{} , "id" : 7 })"),
            R"({"jsonrpc":"2.0","result":{}  })");
  EXPECT_EQ(cut(R"( {"id":7} )"), R"({})");
  EXPECT_EQ(cut("\xEF\xBB\xBF{\"result\":1}\n"), R"({"result":1})");
  const auto scanned = scan(R"({"jsonrpc":"2.0","id":7,"result":{}})");
  ASSERT_TRUE(scanned);
  EXPECT_TRUE(scanned->is_response);
  EXPECT_TRUE(scanned->has_id);
  EXPECT_EQ(scanned->id, 7u);
}

TEST(ReplyScan, OnlyANonNegativeJsonIntegerIsAUsableId) {
  EXPECT_EQ(scan(R"({"id":0,"result":1})")->id, 0u);
  EXPECT_EQ(scan(R"({"id":18446744073709551615,"result":1})")->id, 18446744073709551615u);
  for (const char* id : {R"("2")", "2.0", "2e0", "-1", "-0", "18446744073709551616", "null"}) {
    const auto scanned = scan(std::string(R"({"result":1,"id":)") + id + "}");
    ASSERT_TRUE(scanned) << id;
    EXPECT_TRUE(scanned->has_id) << id;
    EXPECT_FALSE(scanned->id.has_value()) << id;
  }
  EXPECT_EQ(scan(R"({"i\u0064":5,"result":1})")->id, 5u) << "keys are compared decoded";
}

TEST(ReplyScan, ClassifiesRepliesForTheAudit) {
  auto kind_of = [](std::string_view text) { return scan(text)->kind; };
  EXPECT_EQ(kind_of(R"({"id":1,"result":{"content":[]}})"), ipc::ReplyKind::kOk);
  EXPECT_EQ(kind_of(R"({"id":1,"result":{"isError":true}})"), ipc::ReplyKind::kToolError);
  EXPECT_EQ(kind_of(R"({"id":1,"result":{"isError":"true"}})"), ipc::ReplyKind::kOk);
  EXPECT_EQ(kind_of(R"({"id":1,"result":{"isError":true,"isError":false}})"), ipc::ReplyKind::kOk);
  EXPECT_EQ(kind_of(R"({"id":1,"result":{"deep":{"isError":true}}})"), ipc::ReplyKind::kOk);
  EXPECT_EQ(kind_of(R"({"id":1,"error":{"code":-32000,"message":"x"}})"),
            ipc::ReplyKind::kRpcError);
  EXPECT_EQ(kind_of(R"({"id":1,"result":{},"error":"x"})"), ipc::ReplyKind::kRpcError);
  EXPECT_EQ(scan(R"({"id":1,"error":{"code":-32000}})")->error_code, -32000);
  EXPECT_FALSE(scan(R"({"id":1,"error":{"code":1.5}})")->error_code.has_value());
  EXPECT_FALSE(scan(R"({"id":1,"error":"bad"})")->error_code.has_value());
  EXPECT_FALSE(scan(R"({"id":1,"result":{"code":3}})")->error_code.has_value());
  EXPECT_FALSE(scan(R"({"method":"ping","id":"a"})")->is_response);
}

TEST(ReplyScan, RefusesWhatIsNotOneJsonObject) {
  for (const char* text : {
           "",
           "[]",
           "1",
           "\"x\"",
           "null",
           "{",
           "{\"id\":1",
           "{\"id\":1}}",
           "{\"id\":1} x",
           "{'id':1}",
           "{\"id\":01}",
           "{\"id\":1.}",
           "{\"id\":-}",
           "{\"id\":1e}",
           "{\"id\":+1}",
           "{\"a\":tru}",
           "{\"a\":[1,]}",
           "{\"a\":1,}",
           "{,}",
           "{\"a\" 1}",
           "{\"a\":\"\\x\"}",               // unknown escape
           "{\"a\":\"\\u12\"}",             // short \u escape
           "{\"a\":\"\\ud800\"}",           // a high surrogate alone
           "{\"a\":\"\\udc00\"}",           // a low surrogate alone
           "{\"a\":\"\t\"}",                // a raw control character
           "{\"a\":\"\xC0\xAF\"}",          // an overlong encoding
           "{\"a\":\"\xED\xA0\x80\"}",      // a UTF-8 encoded surrogate
           "{\"a\":\"\xF4\x90\x80\x80\"}",  // beyond U+10FFFF
           "{\"a\":\"\xFF\"}",
           "{\"a\":\"\xE2\x82\"}",  // truncated sequence
           "{\"id\":1,\"id\":2,\"result\":1}",
           "{\"a\":1e400}",  // no finite double: nlohmann::json refused it, so do we
       }) {
    EXPECT_FALSE(scan(text).has_value()) << text;
  }
  EXPECT_TRUE(scan("{\"a\":[1e-400,-1e308,0.5,99999999999999999999999]}"));
  EXPECT_TRUE(scan("{\"a\":\"\xE2\x82\xAC \\ud83d\\ude00 \\\" \\\\ \\/ \\b\\f\\n\\r\\t\"}"));
}

TEST(ReplyScan, NestingIsLimited) {
  auto nested = [](int depth) {
    return "{\"a\":" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
  };
  EXPECT_TRUE(scan(nested(jsonrpc::kMaxNesting)));
  EXPECT_FALSE(scan(nested(jsonrpc::kMaxNesting + 1)));
}

TEST(ReplyScan, ALargeStringIsReadInFull) {
  const std::string data(3 * 1024 * 1024 + 5, 'Q');
  const std::string text = R"({"jsonrpc":"2.0","id":9,"result":{"content":[{"data":")" + data +
                           R"(","type":"image"}]}})";
  const auto scanned = scan(text);
  ASSERT_TRUE(scanned);
  EXPECT_EQ(scanned->id, 9u);
  EXPECT_EQ(json::parse(without_id(text, *scanned))["result"]["content"][0]["data"], data);
  std::string broken = text;
  broken[40 + data.size() / 2] = '\x01';
  EXPECT_FALSE(scan(broken));
}

// The scan takes string bytes sixteen, then eight at a time: whatever lane of a block a
// special byte falls in, it is seen, and the verdict is the full parser's.
TEST(ReplyScan, ASpecialByteIsSeenInEveryLaneOfABlock) {
  for (const std::string special :
       {"\x01", "\x80", "\\n", "\\u00e9", "\xC3\xA9", "\xFF", "\"", "\x7F"}) {
    for (std::size_t offset = 0; offset < 40; ++offset) {
      std::string data(48, 'a');
      data.insert(offset, special);
      const std::string text = R"({"id":1,"result":{"data":")" + data + R"("}})";
      const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
      const auto scanned = scan(text);
      ASSERT_EQ(scanned.has_value(), parsed.is_object()) << offset << ": " << text;
      if (scanned) {
        json expected = parsed;
        expected.erase("id");
        EXPECT_EQ(json::parse(without_id(text, *scanned)), expected) << offset << ": " << text;
      }
    }
  }
}

// A random JSON value built from awkward pieces: escapes, surrogate pairs, UTF-8, numbers
// at the edges of their grammar, the member names the scanner looks for.
std::string random_value(std::mt19937& random, int depth) {
  static const std::vector<std::string> scalars = {"true",
                                                   "false",
                                                   "null",
                                                   "0",
                                                   "-12",
                                                   "3.5e-2",
                                                   "1E+9",
                                                   "18446744073709551616",
                                                   "7",
                                                   "\"\"",
                                                   "\"a\\u00e9\"",
                                                   "\"\\ud83d\\ude00\"",
                                                   "\"\xC3\xA9\xE2\x82\xAC\"",
                                                   "\"\\n\\\"\""};
  static const std::vector<std::string> keys = {
      "\"id\"", "\"result\"", "\"error\"", "\"code\"", "\"isError\"", "\"i\\u0064\"", "\"x\""};
  const auto pick = [&](const std::vector<std::string>& from) {
    return from[random() % from.size()];
  };
  if (depth > 3 || random() % 3 == 0) return pick(scalars);
  const int count = static_cast<int>(random() % 4);
  const bool is_object = random() % 2;
  std::string text = is_object ? "{" : "[";
  for (int i = 0; i < count; ++i) {
    if (i > 0) text += random() % 8 ? "," : " , ";
    if (is_object) text += pick(keys) + (random() % 8 ? ":" : " : ");
    text += random_value(random, depth + 1);
  }
  return text + (is_object ? "}" : "]");
}

// nlohmann keeps the last of two top-level "id" members; the scanner refuses them.
bool has_two_ids(const std::string& text) {
  int ids = 0;
  const json ignored = json::parse(
      text,
      [&](int depth, json::parse_event_t event, json& parsed) {
        if (depth == 1 && event == json::parse_event_t::key && parsed == "id") ++ids;
        return true;
      },
      /*allow_exceptions=*/false);
  return ids > 1 && !ignored.is_discarded();
}

// One byte changed, dropped or added, so that most texts become almost-JSON.
void damage(std::mt19937& random, std::string& text) {
  static const std::string bytes = "{}[],:\"\\ 0-.eu\x01\xC3\xFF";
  const std::size_t at = random() % (text.size() + 1);
  switch (random() % 3) {
    case 0:
      if (at < text.size()) text[at] = bytes[random() % bytes.size()];
      break;
    case 1:
      if (at < text.size()) text.erase(at, 1);
      break;
    default:
      text.insert(at, 1, bytes[random() % bytes.size()]);
  }
}

// The scanner must accept exactly the objects that nlohmann::json accepts, and cutting the
// id must leave what erasing it from the parsed tree leaves.
TEST(ReplyScan, AgreesWithAFullParser) {
  std::mt19937 random(20261129);
  int objects = 0;
  int refused = 0;
  for (int round = 0; round < 100000; ++round) {
    std::string text = random_value(random, 0);
    if (random() % 2) damage(random, text);
    const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    const auto scanned = scan(text);
    if (parsed.is_object() && !scanned && has_two_ids(text)) continue;
    ASSERT_EQ(scanned.has_value(), parsed.is_object()) << text;
    if (!scanned) {
      ++refused;
      continue;
    }
    ++objects;
    json expected = parsed;
    expected.erase("id");
    ASSERT_EQ(json::parse(without_id(text, *scanned)), expected) << text;
    ASSERT_EQ(scanned->is_response, parsed.contains("result") || parsed.contains("error")) << text;
    ASSERT_EQ(scanned->has_id, parsed.contains("id")) << text;
  }
  EXPECT_GT(objects, 10000);
  EXPECT_GT(refused, 10000);
}

}  // namespace
}  // namespace sb::worker
