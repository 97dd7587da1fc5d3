// Server-sent events: a JSON text's line breaks (CR, LF, CRLF, even split between two
// parts) each start a data: line, and chunks are framed in hex.
#include "supervisor/http/sse.hpp"

#include <gtest/gtest.h>

namespace sb::supervisor {
namespace {

TEST(Sse, EachLineBreakStartsADataLine) {
  EXPECT_EQ(sse_event("{\"a\":1,", "\r\n\"b\":\n2\r}"),
            "event: message\ndata: {\"a\":1,\ndata: \"b\":\ndata: 2\ndata: }\n\n");
}

TEST(Sse, ACrlfSplitBetweenTwoPartsIsOneLineBreak) {
  std::string event;
  EventData data;
  data.append(event, "{\r");
  data.append(event, "\n}");
  EXPECT_EQ(event, "{\ndata: }");
}

TEST(Sse, AnEventMayCarryAnIdAndAPrimingEventHasNoData) {
  EXPECT_EQ(sse_event("{", "}", "s1-2"), "id: s1-2\nevent: message\ndata: {}\n\n");
  EXPECT_EQ(priming_event("s1-0"), "id: s1-0\nretry: 1000\ndata: \n\n");
}

TEST(Sse, ChunksAreFramedInHex) {
  EXPECT_EQ(chunk(std::string(26, 'x')), "1a\r\n" + std::string(26, 'x') + "\r\n");
  EXPECT_EQ(chunk(""), "0\r\n\r\n");
}

}  // namespace
}  // namespace sb::supervisor
