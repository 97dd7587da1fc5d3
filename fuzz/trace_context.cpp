// Fuzz target: a caller's W3C trace context as the switchboard reads it
// (supervisor/telemetry/trace_context.hpp), from headers or params._meta anyone can write.
//
// Input: the traceparent, a NUL, the tracestate. Checked: what reads renders back to a
// traceparent that reads to the same ids and flag; a tracestate is kept only whole, as
// received (trimmed), and within its bound.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.hpp"
#include "supervisor/telemetry/trace_context.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto nul = input.find('\0');
  const std::string traceparent = input.substr(0, nul);
  const std::string tracestate = nul == std::string::npos ? "" : input.substr(nul + 1);

  const auto context = sb::supervisor::read_trace_context(traceparent, tracestate);
  if (!context) return 0;
  const std::string rendered =
      sb::supervisor::render_traceparent(context->trace_id, context->parent_id, context->sampled);
  const auto again = sb::supervisor::read_trace_context(rendered, "");
  FUZZ_CHECK(again);
  FUZZ_CHECK(again->trace_id == context->trace_id);
  FUZZ_CHECK(again->parent_id == context->parent_id);
  FUZZ_CHECK(again->sampled == context->sampled);
  FUZZ_CHECK(context->tracestate.size() <= sb::supervisor::kMaxTracestateBytes);
  FUZZ_CHECK(context->tracestate.empty() ||
             tracestate.find(context->tracestate) != std::string::npos);
  return 0;
}
