#include "supervisor/mcp/request_span.hpp"

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

const std::string* meta_string(const json& params, const char* name) {
  if (!params.is_object()) return nullptr;
  const auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return nullptr;
  const auto found = meta->find(name);
  return found != meta->end() && found->is_string() ? &found->get_ref<const std::string&>()
                                                    : nullptr;
}

// The caller's trace context: `_meta`'s when it names a traceparent, else the transport's.
std::optional<TraceContext> caller_context(const TransportTrace& transport, const json& params) {
  if (const std::string* traceparent = meta_string(params, "traceparent")) {
    const std::string* tracestate = meta_string(params, "tracestate");
    return read_trace_context(*traceparent, tracestate ? *tracestate : std::string_view());
  }
  if (!transport.traceparent) return std::nullopt;
  return read_trace_context(*transport.traceparent, transport.tracestate.value_or(""));
}

// The revision the request speaks: its header's, an initialize's, or 2026-07-28's `_meta`.
std::optional<std::string> revision_of(const TransportTrace& transport, const std::string& method,
                                       const json& params) {
  if (transport.protocol_version) return transport.protocol_version;
  const json named = method == "initialize" ? params.value("protocolVersion", json())
                     : params.contains("_meta") && params["_meta"].is_object()
                         ? params["_meta"].value("io.modelcontextprotocol/protocolVersion", json())
                         : json();
  if (named.is_string()) return named.get<std::string>();
  return std::nullopt;
}

// "tools/call echo", "prompts/get greet", else the method alone (a resource's URI would
// make names without bound).
std::string span_name(const std::string& method, const json& name) {
  if (name.is_string() && (method == "tools/call" || method == "prompts/get"))
    return method + " " + name.get<std::string>();
  return method;
}

}  // namespace

std::shared_ptr<RequestSpan> start_request_span(Tracer& tracer, json& message,
                                                CallerContext& context,
                                                const TransportTrace& transport) {
  if (!message.is_object()) return nullptr;
  const auto method = message.find("method");
  const auto id = message.find("id");
  if (method == message.end() || !method->is_string() || id == message.end()) return nullptr;
  const std::string& method_name = method->get_ref<const std::string&>();
  json& params = message["params"];
  if (params.is_null()) params = json::object();
  if (!params.is_object()) return nullptr;  // refused by its method's handler
  const json name = params.value("name", json());
  auto span = tracer.start(caller_context(transport, params), span_name(method_name, name));
  span->set("mcp.method.name", method_name);
  span->set("network.transport", std::string("tcp"));
  span->set("network.protocol.name", std::string(transport.protocol));
  if (method_name == "tools/call") span->set("gen_ai.operation.name", std::string("execute_tool"));
  if (name.is_string() && method_name == "tools/call")
    span->set("gen_ai.tool.name", name.get<std::string>());
  if (name.is_string() && method_name == "prompts/get")
    span->set("gen_ai.prompt.name", name.get<std::string>());
  span->set("jsonrpc.request.id", id->is_string() ? id->get<std::string>() : id->dump());
  if (!context.mcp_session.empty()) span->set("mcp.session.id", context.mcp_session);
  if (const auto revision = revision_of(transport, method_name, params))
    span->set("mcp.protocol.version", *revision);
  span->set("switchboard.computer", context.computer);
  span->set("switchboard.caller", context.caller);
  context.trace_id = span->trace_id_hex();
  context.span_id = span->span_id_hex();
  json& meta = params["_meta"];
  if (meta.is_null()) meta = json::object();
  if (!meta.is_object()) return span;  // refused as it is, or passed on untouched
  meta["traceparent"] = span->traceparent();
  if (span->tracestate().empty()) {
    meta.erase("tracestate");
  } else {
    meta["tracestate"] = span->tracestate();
  }
  return span;
}

McpDone traced(McpDone inner, const std::shared_ptr<RequestSpan>& span,
               std::function<std::optional<int>(const ReplyText&)> http_status) {
  if (!span) return inner;
  return [inner = std::move(inner), span,
          http_status = std::move(http_status)](std::optional<ReplyText> text) {
    const std::optional<int> status = !http_status ? std::nullopt : text ? http_status(*text) : 202;
    if (text) {
      span->end(status, text->error_code, text->tool_error, text->round_trip, text->local_step);
    } else {
      span->end(status, std::nullopt, false);
    }
    inner(std::move(text));
  };
}

McpMessage traced(McpMessage inner, const std::shared_ptr<RequestSpan>& span) {
  if (!span || !inner) return inner;
  return [inner = std::move(inner), span](ReplyText text) {
    span->message_to_caller();
    inner(std::move(text));
  };
}

Underway traced(Underway underway, const std::shared_ptr<RequestSpan>& span) {
  if (!span || !underway.abandon) return underway;
  underway.abandon = [abandon = std::move(underway.abandon), span,
                      forwarded = underway.forwarded_unix_nanos] {
    span->end_abandoned(forwarded);
    abandon();
  };
  return underway;
}

}  // namespace sb::supervisor
