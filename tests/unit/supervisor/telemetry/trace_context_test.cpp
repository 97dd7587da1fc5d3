// W3C Trace Context as the switchboard reads and writes it
// (supervisor/telemetry/trace_context.hpp): the recommendation's valid and invalid
// traceparents, tracestate kept only when it reads, and the traceparent a computer gets.
#include "supervisor/telemetry/trace_context.hpp"

#include <gtest/gtest.h>

#include <set>

namespace sb::supervisor {
namespace {

constexpr std::string_view kValid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceContext, AVersion00TraceparentReadsWithItsIdsAndSampledFlag) {
  const auto context = read_trace_context(kValid, "");
  ASSERT_TRUE(context);
  EXPECT_TRUE(context->sampled);
  EXPECT_EQ(render_traceparent(context->trace_id, context->parent_id, true), kValid);
  const auto unsampled =
      read_trace_context("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "");
  ASSERT_TRUE(unsampled);
  EXPECT_FALSE(unsampled->sampled);
}

TEST(TraceContext, AMalformedTraceparentDoesNotRead) {
  for (const std::string_view bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",       // no flags
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // upper case
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // zero parent id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // version ff
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // 00 with more
           "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",    // separators
           "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // not hex
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
           "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  // later, no '-'
       }) {
    EXPECT_FALSE(read_trace_context(bad, "")) << bad;
  }
}

TEST(TraceContext, ALaterVersionReadsItsFirstFourFields) {
  EXPECT_TRUE(
      read_trace_context("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-ever", ""));
  EXPECT_TRUE(read_trace_context("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""));
}

TEST(TraceContext, TracestateIsKeptOnlyWhenItReads) {
  const auto kept = [](std::string_view tracestate) {
    const auto context = read_trace_context(kValid, tracestate);
    EXPECT_TRUE(context) << "a bad tracestate never costs the traceparent";
    return context ? context->tracestate : std::string("<none>");
  };
  EXPECT_EQ(kept("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"),
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
  EXPECT_EQ(kept(" rojo=1 , ,congo=2 "), "rojo=1 , ,congo=2");
  EXPECT_EQ(kept("tenant1@vendor=x"), "tenant1@vendor=x");
  EXPECT_EQ(kept("Rojo=1"), "") << "upper case key";
  EXPECT_EQ(kept("rojo"), "") << "no value";
  EXPECT_EQ(kept("rojo=1,rojo=2"), "") << "a key twice";
  EXPECT_EQ(kept("rojo=a,b"), "") << "a member without '='";
  EXPECT_EQ(kept("rojo=x=y"), "") << "'=' in a value";
  EXPECT_EQ(kept("a@b@c=1"), "") << "two '@'";
  std::string many;
  for (int i = 0; i < 33; ++i) {
    many += 'k';
    many += std::to_string(i);
    many += "=v,";
  }
  EXPECT_EQ(kept(many), "") << "more than 32 members";
  EXPECT_EQ(kept("k=" + std::string(600, 'v')), "") << "past 512 bytes, dropped whole";
}

TEST(TraceContext, NewIdsAreNeverZeroAndDoNotRepeat) {
  TraceIds ids;
  std::set<TraceId> traces;
  std::set<SpanId> spans;
  for (int i = 0; i < 1000; ++i) {
    traces.insert(ids.next_trace());
    spans.insert(ids.next_span());
  }
  EXPECT_EQ(traces.size(), 1000u);
  EXPECT_EQ(spans.size(), 1000u);
  EXPECT_EQ(traces.count(TraceId{}), 0u);
  const std::string rendered = render_traceparent(ids.next_trace(), ids.next_span(), false);
  const auto read = read_trace_context(rendered, "");
  ASSERT_TRUE(read) << rendered;
  EXPECT_FALSE(read->sampled);
}

}  // namespace
}  // namespace sb::supervisor
