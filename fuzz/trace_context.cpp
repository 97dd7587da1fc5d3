// Fuzz target: a caller's W3C trace context as the switchboard reads it
// (supervisor/telemetry/trace_context.hpp), from headers or params._meta anyone can write,
// and the span it becomes, encoded for export (otlp_json.hpp).
//
// Input: the traceparent, a NUL, the tracestate. Checked: what reads renders back to a
// traceparent that reads to the same ids and flag; a tracestate is kept only whole, as
// received (trimmed), and within its bound; a span named and attributed with the input's
// bytes (which a caller's tool name and id are) always encodes to JSON that parses, with
// its ids in hex and its text as nlohmann/json would have written it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_check.hpp"
#include "supervisor/telemetry/otlp_json.hpp"
#include "supervisor/telemetry/trace_context.hpp"

namespace {

// A span of the caller's words, the child of `context` when it read.
void check_encoded(const std::string& words,
                   const std::optional<sb::supervisor::TraceContext>& context) {
  sb::supervisor::Span span{.span_id = {1, 2, 3, 4, 5, 6, 7, 8},
                            .name = "tools/call " + words,
                            .attributes = {{"gen_ai.tool.name", words},
                                           {"jsonrpc.request.id", words},
                                           {"http.response.status_code", std::int64_t{200}}}};
  if (context) {
    span.trace_id = context->trace_id;
    span.parent_id = context->parent_id;
    span.tracestate = context->tracestate;
  }
  const auto encoded = nlohmann::json::parse(
      sb::supervisor::otlp_request(sb::supervisor::OtlpSignal::kTraces,
                                   {sb::supervisor::otlp_json(span)}, {.service_version = words}),
      nullptr, false);
  FUZZ_CHECK(!encoded.is_discarded());
  const auto& written = encoded["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  FUZZ_CHECK(written["traceId"].get<std::string>().size() == 32);
  FUZZ_CHECK(written["spanId"] == "0102030405060708");
  FUZZ_CHECK(written["attributes"].size() == 3);
  // The text writer replaces what is not UTF-8 as nlohmann/json's own writer does.
  const auto as_nlohmann_writes = nlohmann::json::parse(
      nlohmann::json(span.name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  FUZZ_CHECK(written["name"] == as_nlohmann_writes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto nul = input.find('\0');
  const std::string traceparent = input.substr(0, nul);
  const std::string tracestate = nul == std::string::npos ? "" : input.substr(nul + 1);

  const auto context = sb::supervisor::read_trace_context(traceparent, tracestate);
  check_encoded(input, context);
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
