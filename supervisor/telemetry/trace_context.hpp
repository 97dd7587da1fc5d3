// W3C Trace Context (docs/observability.md, "Trace context"): what a caller's traceparent
// and tracestate say, read as the W3C recommendation has it, and the ids the switchboard
// makes for its own spans. A traceparent that does not read starts a new trace and is
// never echoed; a tracestate that does not read is dropped alone.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace sb::supervisor {

using TraceId = std::array<std::uint8_t, 16>;
using SpanId = std::array<std::uint8_t, 8>;

struct TraceContext {
  TraceId trace_id{};
  SpanId parent_id{};
  bool sampled = false;    // the caller's sampled flag (bit 0 of trace-flags)
  std::string tracestate;  // as received when it reads, else ""
};

// The most of a tracestate header kept (the recommendation's 512 characters and 32
// members); a longer one is dropped whole rather than cut.
inline constexpr std::size_t kMaxTracestateBytes = 512;
inline constexpr std::size_t kMaxTracestateMembers = 32;

// `traceparent` as version 00 defines it (a later version: its first four fields, if it is
// at least as long and goes on with a '-'); nothing when it does not read, or names an
// all-zero trace or parent id, or version ff. `tracestate` is kept only when it reads.
std::optional<TraceContext> read_trace_context(std::string_view traceparent,
                                               std::string_view tracestate);

// "00-<trace id>-<span id>-<flags>": what the computer receives, naming the switchboard's
// span as its parent.
std::string render_traceparent(const TraceId& trace, const SpanId& span, bool sampled);

// Ids for new traces and spans, from one generator the caller owns: random, never all
// zero.
class TraceIds {
 public:
  TraceIds();
  TraceId next_trace();
  SpanId next_span();

 private:
  std::mt19937_64 random_;
};

}  // namespace sb::supervisor
