// Tracing a call end to end (docs/observability.md): a caller instrumented with the
// official OpenTelemetry JS SDK names its span in params._meta (or the HTTP traceparent
// header), calls through a real switchboard whose [telemetry] exports to
// otlp_receiver.mjs, and the computer's test_trace_context tool says what it received.
// Checked: one trace from the caller's span through the switchboard's SERVER span to the
// computer, whose parent is the switchboard's span of its round trip (CLIENT), under the
// span of the hop through the worker (INTERNAL), under the SERVER span; the span's name,
// resource and
// attributes, in both eras; the header variant, and _meta preferred over it; a malformed
// traceparent starts a new trace and never reaches the computer; a caller's "not sampled"
// is honoured; a call refused by the grant, a tool error, a JSON-RPC error, a cancelled
// call and one past its timeout end their spans as errors (the last two their round trips
// too); a request refused before authentication makes none;
// every export is OTLP JSON with the headers of headers_file, and no token, secret or
// argument is in any; and with the collector slow, then down, then failing every export,
// calls are not slowed, /metrics counts the spans dropped, and export resumes once it is
// back.
//
//   node traces.mjs URL RECEIVER METRICS RUN_DIR
//
// URL is the switchboard's /mcp/<computer>; RECEIVER the receiver's control origin;
// METRICS the switchboard's metrics_listen origin; RUN_DIR holds client.token and
// narrow.token (the clients `conformance`, granted everything, and `narrow`, granted
// test_trace_context alone), computer.secret, otlp.headers (the exporter's headers_file),
// switchboard.log and audit.jsonl.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  ROOT_CONTEXT,
  SpanKind,
  createTraceState,
  defaultTextMapSetter,
  trace,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator, hrTimeToNanoseconds } from "@opentelemetry/core";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, receiver, metrics, runDir] = process.argv.slice(2);
if (!url || !receiver || !metrics || !runDir) {
  console.error("usage: node traces.mjs URL RECEIVER METRICS RUN_DIR");
  process.exit(2);
}
const read = (name) => readFileSync(`${runDir}/${name}`, "utf8");
const token = read("client.token").trim();
const narrowToken = read("narrow.token").trim();
const computerSecret = read("computer.secret").trim();
// headers_file: `Name: value` lines, each to arrive with every export.
const exportHeaders = Object.fromEntries(
  read("otlp.headers")
    .split("\n")
    .filter((line) => line.includes(":"))
    .map((line) => [line.slice(0, line.indexOf(":")).trim().toLowerCase(),
      line.slice(line.indexOf(":") + 1).trim()]),
);
// In the arguments of calls: no export may carry it.
const ARGUMENT = `argument-${randomBytes(8).toString("hex")}`;
const HANDSHAKE = "2025-11-25";

// What the switchboard's span says (docs/observability.md), its names in one place.
const INTERNAL = 1; // SpanKind INTERNAL in OTLP
const SERVER = 2; // SpanKind SERVER
const CLIENT = 3; // SpanKind CLIENT
const ERROR = 2; // Status code ERROR in OTLP
const UNSET = 0; // Status code UNSET in OTLP
const A = {
  method: "mcp.method.name",
  tool: "gen_ai.tool.name",
  prompt: "gen_ai.prompt.name",
  requestId: "jsonrpc.request.id",
  session: "mcp.session.id",
  version: "mcp.protocol.version",
  computer: "switchboard.computer",
  caller: "switchboard.caller",
  httpStatus: "http.response.status_code",
  errorType: "error.type",
  rpcCode: "rpc.response.status_code",
};
const computer = new URL(url).pathname.split("/").pop();

const steps = [];
const step = (name) => steps.push(name);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const hex = (bytes) => randomBytes(bytes).toString("hex");

// ---- the caller's OpenTelemetry SDK ----

const finished = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(finished)] });
const tracer = provider.getTracer("switchboard-traces-test");
const propagator = new W3CTraceContextPropagator();

// A CLIENT span of the caller's and its context written into `carrier` (_meta or HTTP
// headers) as the W3C propagator writes it, with `tracestate` when given.
function callerSpan(name, carrier, tracestate) {
  const span = tracer.startSpan(name, { kind: SpanKind.CLIENT });
  let context = trace.setSpan(ROOT_CONTEXT, span);
  if (tracestate) {
    context = trace.setSpanContext(context, {
      ...span.spanContext(),
      traceState: createTraceState(tracestate),
    });
  }
  propagator.inject(context, carrier, defaultTextMapSetter);
  return span;
}

function readTraceparent(value) {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(value ?? "");
  assert.ok(match, `the computer received traceparent ${JSON.stringify(value)}`);
  return { traceId: match[1], parentId: match[2], flags: match[3] };
}

// ---- the receiver and the switchboard's metrics ----

async function receiverGet(path) {
  const response = await fetch(`${receiver}${path}`);
  assert.equal(response.status, 200, `receiver ${path}`);
  return response.json();
}

async function collector(mode, delayMs) {
  const response = await fetch(`${receiver}/control`, {
    method: "POST",
    body: JSON.stringify({ mode, delay_ms: delayMs }),
  });
  assert.equal(response.status, 200, `collector ${mode}`);
}

// Until `seconds` pass, polls `probe` (async; a truthy answer ends the wait).
async function waitFor(what, probe, seconds = 15) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const found = await probe();
    if (found) return found;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${seconds} s`);
    await sleep(50);
  }
}

// The one span `match` picks, once the receiver has it: the request's own, not a span of
// the switchboard's under it.
async function spanWhere(what, match, seconds) {
  const found = await waitFor(what, async () => {
    const spans = (await receiverGet("/spans")).filter(match);
    const ids = new Set(spans.map((span) => span.spanId));
    const top = spans.filter((span) => !ids.has(span.parentSpanId));
    return top.length ? top : null;
  }, seconds);
  assert.equal(found.length, 1, `${what}: ${found.length} spans`);
  return found[0];
}
const byTrace = (traceId) => (span) => span.traceId === traceId;

// What the switchboard did to answer a request itself: the request span's one child, an
// INTERNAL span named for it, within it.
async function checkLocalStep(server, name) {
  const children = await waitFor(`${name} under ${server.name}`, async () => {
    const found = (await receiverGet("/spans")).filter((span) => span.parentSpanId === server.spanId);
    return found.length ? found : null;
  });
  assert.deepEqual(children.map((span) => [span.name, span.kind]), [[name, INTERNAL]]);
  assert.equal(children[0].traceId, server.traceId);
}

// The computer's parent is the switchboard's span of the computer's round trip (CLIENT),
// under its span of the hop through the worker (INTERNAL), under the request's SERVER
// span; each within the one above it, the reply's first byte marked within the round trip.
async function checkChain(server, computerParentId) {
  const [roundTrip, hop] = await waitFor("the round trip's spans", async () => {
    const spans = (await receiverGet("/spans")).filter(byTrace(server.traceId));
    const roundTrip = spans.find((span) => span.spanId === computerParentId);
    const hop = roundTrip && spans.find((span) => span.spanId === roundTrip.parentSpanId);
    return roundTrip && hop ? [roundTrip, hop] : null;
  });
  assert.equal(roundTrip.kind, CLIENT, "the round trip: a CLIENT span");
  assert.equal(roundTrip.name, server.name, "the round trip: named as the request");
  assert.equal(hop.kind, INTERNAL, "the worker's hop: an INTERNAL span");
  assert.equal(hop.name, "switchboard worker");
  assert.equal(hop.parentSpanId, server.spanId, "the hop: the request span's child");
  const times = [server.startTimeUnixNano, hop.startTimeUnixNano, roundTrip.startTimeUnixNano,
    roundTrip.endTimeUnixNano, hop.endTimeUnixNano, server.endTimeUnixNano].map(BigInt);
  for (let i = 1; i < times.length; i++)
    assert.ok(times[i - 1] <= times[i], `the spans nest in time: ${times.join(" ")}`);
  const firstByte = roundTrip.events.filter((event) => event.name === "first byte of the reply");
  assert.equal(firstByte.length, 1, `the reply's first byte: ${JSON.stringify(roundTrip.events)}`);
  const at = BigInt(firstByte[0].timeUnixNano);
  assert.ok(BigInt(roundTrip.startTimeUnixNano) <= at && at <= BigInt(roundTrip.endTimeUnixNano),
    "the first byte within the round trip");
  assert.equal(roundTrip.status.code, UNSET, "an answered round trip: no error");
  return roundTrip;
}
const byRequestId = (id) => (span) => span.attributes[A.requestId] === String(id);

// switchboard_trace_spans_total{outcome="<outcome>"}: the sum of its series, whatever
// other labels they have.
async function metric(outcome) {
  const response = await fetch(`${metrics}/metrics`);
  assert.equal(response.status, 200, "/metrics");
  let sum = 0;
  for (const line of (await response.text()).split("\n")) {
    const match = /^switchboard_trace_spans_total\{([^}]*)\} (\S+)/.exec(line);
    if (match && match[1].split(",").includes(`outcome="${outcome}"`)) sum += Number(match[2]);
  }
  return sum;
}

// What every span of the switchboard's is: well-formed OTLP JSON, a SERVER span of the
// service "switchboard", its scope "switchboard".
function checkSpan(span, { name, caller = "conformance", method }) {
  assert.deepEqual(span.problems, [], `${span.name}: not OTLP JSON as the specification has it`);
  assert.equal(span.name, name);
  assert.equal(span.kind, SERVER, `${name}: kind`);
  assert.equal(span.resource["service.name"], "switchboard");
  assert.ok(span.resource["service.version"], "service.version");
  assert.ok(span.resource["service.instance.id"], "service.instance.id");
  assert.equal(span.scope.name, "switchboard");
  assert.ok(BigInt(span.startTimeUnixNano) > 0n, `${name}: a start time`);
  assert.ok(BigInt(span.endTimeUnixNano) >= BigInt(span.startTimeUnixNano), `${name}: its end`);
  assert.equal(span.attributes[A.method], method ?? name.split(" ")[0]);
  assert.equal(span.attributes[A.computer], computer);
  assert.equal(span.attributes[A.caller], caller);
  assert.equal(span.kinds[A.httpStatus], "intValue", `${name}: ${A.httpStatus} an int`);
  assert.equal(span.attributes[A.httpStatus], 200, `${name}: ${A.httpStatus}`);
  assert.equal(span.kinds[A.requestId], "stringValue", `${name}: ${A.requestId} a string`);
}

function checkOk(span) {
  assert.notEqual(span.status.code, ERROR, `${span.name}: status`);
  assert.equal(span.attributes[A.errorType], undefined, `${span.name}: ${A.errorType}`);
  assert.equal(span.attributes[A.rpcCode], undefined, `${span.name}: ${A.rpcCode}`);
}

// The span of a request answered `reply` (a JSON-RPC response): an error span if the
// reply is a JSON-RPC error (error.type its code) or a tool result with isError.
// A JSON-RPC error that is the request's own fault (parse error, invalid request, method
// not found, invalid params, resource not found) leaves the status unset, as OpenTelemetry's
// RPC and MCP conventions have a server span do.
const CALLERS_FAULT = new Set([-32700, -32600, -32601, -32602, -32002]);
function checkFailed(span, reply) {
  const callersFault = reply.error && CALLERS_FAULT.has(reply.error.code);
  if (callersFault) assert.notEqual(span.status.code, ERROR, `${span.name}: status unset`);
  else assert.equal(span.status.code, ERROR, `${span.name}: status ERROR`);
  if (reply.error) {
    assert.equal(span.attributes[A.errorType], String(reply.error.code),
      `${span.name}: error.type`);
    assert.equal(span.attributes[A.rpcCode], String(reply.error.code), `${span.name}: ${A.rpcCode}`);
    assert.equal(span.kinds[A.rpcCode], "stringValue");
  } else {
    assert.equal(reply.result?.isError, true, "a failed call");
    assert.equal(span.attributes[A.errorType], "tool_error", `${span.name}: error.type`);
    assert.equal(span.attributes[A.rpcCode], undefined, `${span.name}: ${A.rpcCode}`);
  }
}

// ---- the caller on plain HTTP, where the SDK cannot say what is tested ----

// One JSON-RPC request (a handshake-era one, outside any session); its answer, read from
// JSON or from an event stream.
async function rpc(message, { bearer = token, headers = {} } = {}) {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${bearer}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": HANDSHAKE,
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: "2.0", ...message }),
  });
  const text = await response.text();
  let reply;
  if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    reply = events(text).find((event) => "id" in event && event.id === message.id);
  } else if ((response.headers.get("content-type") ?? "").startsWith("application/json")) {
    reply = JSON.parse(text);
  }
  return { status: response.status, reply, text };
}

function events(text) {
  return text
    .split(/\r?\n\r?\n/)
    .map((block) =>
      block
        .split(/\r?\n/)
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trimStart())
        .join("\n"))
    .filter(Boolean)
    .map((data) => JSON.parse(data));
}

const callTrace = (id, meta, options) =>
  rpc({
    id,
    method: "tools/call",
    params: {
      name: "test_trace_context",
      arguments: { note: ARGUMENT },
      ...(meta && { _meta: meta }),
    },
  }, options);

// What the computer's test_trace_context received in params._meta.
function received(reply) {
  assert.ok(reply?.result?.content?.[0]?.text,
    `test_trace_context answered ${JSON.stringify(reply)}`);
  return JSON.parse(reply.result.content[0].text);
}

// ---- 1. the official SDK client, in each era ----

for (const [era, versionNegotiation] of [
  ["handshake", { mode: "legacy" }],
  ["2026-07-28", { mode: { pin: "2026-07-28" } }],
]) {
  const sent = [];
  const client = new Client({ name: "switchboard-traces", version: "1.0.0" },
    { versionNegotiation });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: (target, init) => {
      if (typeof init?.body === "string") sent.push(JSON.parse(init.body));
      return fetch(target, init);
    },
  });
  await client.connect(transport);
  const version = client.getNegotiatedProtocolVersion();
  const session = transport.sessionId;
  const idOf = (method, name) =>
    sent.findLast((message) => message.method === method && message.params?.name === name)?.id;

  // The call: caller span -> the switchboard's span -> the computer.
  const meta = { "sbtest.example/kept": era };
  const tracestate = `sbtest=${era === "handshake" ? "h" : "m"}`;
  const span = callerSpan("tools/call test_trace_context", meta, tracestate);
  const { traceId, spanId } = span.spanContext();
  const result = await client.callTool({
    name: "test_trace_context",
    arguments: { note: ARGUMENT },
    _meta: meta,
  });
  span.end();
  const got = JSON.parse(result.content[0].text);
  assert.equal(got["sbtest.example/kept"], era,
    "another _meta member reaches the computer as sent");
  assert.equal(got.tracestate, meta.tracestate, "tracestate reaches the computer as sent");
  const computerSaw = readTraceparent(got.traceparent);
  assert.equal(computerSaw.traceId, traceId, "the computer's trace is the caller's");
  assert.equal(computerSaw.flags, "01", "sampled");
  assert.notEqual(computerSaw.parentId, spanId, "the computer's parent is not the caller's span");

  const server = await spanWhere(`the ${era} call's span`, byTrace(traceId));
  checkSpan(server, { name: "tools/call test_trace_context" });
  checkOk(server);
  assert.equal(server.parentSpanId, spanId, "the switchboard's span is the caller span's child");
  await checkChain(server, computerSaw.parentId);
  assert.equal(server.attributes[A.tool], "test_trace_context");
  assert.equal(server.attributes[A.requestId], String(idOf("tools/call", "test_trace_context")));
  assert.equal(server.attributes[A.version], version, A.version);
  assert.equal(server.attributes[A.session], session, A.session);
  assert.equal(era === "handshake", Boolean(session), "a session in the handshake era alone");
  // Within the caller's own span (one clock; a little slack for how each reads it).
  const [caller] = finished.getFinishedSpans().filter((s) => s.spanContext().spanId === spanId);
  const slack = 250_000_000n;
  const callerStart = BigInt(hrTimeToNanoseconds(caller.startTime));
  const callerEnd = BigInt(hrTimeToNanoseconds(caller.endTime));
  assert.ok(BigInt(server.startTimeUnixNano) + slack >= callerStart,
    "the switchboard's span starts after the caller's");
  assert.ok(BigInt(server.endTimeUnixNano) <= callerEnd + slack,
    "the switchboard's span ends before the caller's");
  step(`${era}: caller span -> switchboard span -> computer, one trace`);

  // A list, a prompt and a tool that fails, each with a span of the caller's.
  const listMeta = {};
  const listSpan = callerSpan("tools/list", listMeta);
  await client.listTools({ _meta: listMeta });
  listSpan.end();
  const list = await spanWhere(`the ${era} tools/list span`,
    byTrace(listSpan.spanContext().traceId));
  checkSpan(list, { name: "tools/list" });
  checkOk(list);
  assert.equal(list.attributes[A.tool], undefined);
  assert.equal(list.parentSpanId, listSpan.spanContext().spanId);

  const promptMeta = {};
  const promptSpan = callerSpan("prompts/get test_simple_prompt", promptMeta);
  await client.getPrompt({ name: "test_simple_prompt", _meta: promptMeta });
  promptSpan.end();
  const prompt = await spanWhere(`the ${era} prompts/get span`,
    byTrace(promptSpan.spanContext().traceId));
  checkSpan(prompt, { name: "prompts/get test_simple_prompt" });
  checkOk(prompt);
  assert.equal(prompt.attributes[A.prompt], "test_simple_prompt");
  assert.equal(prompt.attributes[A.requestId], String(idOf("prompts/get", "test_simple_prompt")));

  const failMeta = {};
  const failSpan = callerSpan("tools/call test_error_handling", failMeta);
  const failed = await client.callTool({
    name: "test_error_handling",
    arguments: {},
    _meta: failMeta,
  });
  failSpan.end();
  assert.equal(failed.isError, true);
  const fail = await spanWhere(`the ${era} tool error's span`,
    byTrace(failSpan.spanContext().traceId));
  checkSpan(fail, { name: "tools/call test_error_handling" });
  checkFailed(fail, { result: failed });
  step(`${era}: tools/list, prompts/get and a tool error named and attributed`);
  await client.close();
}

// ---- 2. the HTTP traceparent header, and _meta preferred over it ----

{
  const headers = {};
  const span = callerSpan("tools/call test_trace_context", headers, "sbtest=header");
  const { traceId, spanId } = span.spanContext();
  const { status, reply } = await callTrace(4242, undefined, { headers });
  span.end();
  assert.equal(status, 200);
  const got = received(reply);
  const saw = readTraceparent(got.traceparent);
  const server = await spanWhere("the header call's span", byTrace(traceId));
  checkSpan(server, { name: "tools/call test_trace_context" });
  assert.equal(server.attributes[A.requestId], "4242", "a number id, as a string");
  assert.equal(server.parentSpanId, spanId);
  assert.equal(saw.traceId, traceId);
  await checkChain(server, saw.parentId);
  assert.equal(got.tracestate, "sbtest=header", "the header's tracestate reaches the computer");
  assert.equal(server.attributes[A.session], undefined, "no session, no mcp.session.id");
  assert.equal(server.attributes[A.version], HANDSHAKE);
  step("the traceparent header starts the same trace");

  const headerSide = {};
  const metaSide = {};
  const byHeader = callerSpan("by header", headerSide);
  const byMeta = callerSpan("by _meta", metaSide);
  const both = await callTrace("both-1", metaSide, { headers: headerSide });
  byHeader.end();
  byMeta.end();
  const bothSaw = readTraceparent(received(both.reply).traceparent);
  const chosen = await spanWhere("the call with both", byRequestId("both-1"));
  assert.equal(chosen.traceId, byMeta.spanContext().traceId, "_meta is preferred");
  assert.equal(chosen.parentSpanId, byMeta.spanContext().spanId);
  assert.equal(bothSaw.traceId, chosen.traceId);
  await checkChain(chosen, bothSaw.parentId);
  step("_meta's traceparent is preferred over the header's");
}

// ---- 3. malformed trace context ----

{
  const traceId = hex(16);
  const parent = hex(8);
  const malformed = [
    `00-${"0".repeat(32)}-${parent}-01`, // an all-zero trace id
    `00-${traceId}-${"0".repeat(16)}-01`, // an all-zero parent id
    `00-${traceId.toUpperCase()}-${parent}-01`, // upper-case hex
    `ff-${traceId}-${parent}-01`, // version ff
    `00-${traceId}-${parent}-1`, // short flags
    "not a traceparent",
  ];
  let n = 0;
  for (const value of malformed) {
    for (const where of ["_meta", "header"]) {
      const id = `malformed-${n++}`;
      const context = { traceparent: value, tracestate: "sbtest=malformed" };
      const { reply } = where === "_meta"
        ? await callTrace(id, context)
        : await callTrace(id, undefined, { headers: context });
      const got = received(reply);
      const server = await spanWhere(`the span of ${value} in ${where}`, byRequestId(id));
      checkSpan(server, { name: "tools/call test_trace_context" });
      assert.notEqual(server.traceId, traceId, `${value}: a new trace`);
      assert.equal(server.parentSpanId, "", `${value}: no parent`);
      const saw = readTraceparent(got.traceparent);
      assert.deepEqual([saw.traceId, saw.flags], [server.traceId, "01"],
        `${value} in ${where}: the computer's trace is the new one`);
      await checkChain(server, saw.parentId);
      assert.equal(got.tracestate, undefined, `${value}: its tracestate is dropped with it`);
    }
  }
  step("a malformed traceparent starts a new trace, never passed on");

  const meta = {};
  const span = callerSpan("bad tracestate", meta);
  meta.tracestate = "Not A Key=1";
  const { reply } = await callTrace("bad-tracestate", meta);
  span.end();
  const got = received(reply);
  assert.equal(readTraceparent(got.traceparent).traceId, span.spanContext().traceId);
  assert.equal(got.tracestate, undefined, "a malformed tracestate is dropped alone");
  step("a malformed tracestate is dropped alone");
}

// ---- 4. what makes no span: a caller's "not sampled", a request without a token ----

const unsampled = hex(16);
{
  const { reply } = await callTrace("unsampled", { traceparent: `00-${unsampled}-${hex(8)}-00` });
  const saw = readTraceparent(received(reply).traceparent);
  assert.equal(saw.traceId, unsampled);
  assert.equal(saw.flags, "00", "the computer is told the caller's not sampled");
}
const unauthenticated = hex(16);
{
  const { status } = await callTrace("stranger",
    { traceparent: `00-${unauthenticated}-${hex(8)}-01` },
    { bearer: "not-a-token-of-this-switchboard" });
  assert.equal(status, 401);
}

// ---- 5. refused by the grant; a JSON-RPC error ----

{
  const meta = {};
  const span = callerSpan("tools/call test_simple_text", meta);
  const { reply } = await rpc(
    {
      id: "denied-tool",
      method: "tools/call",
      params: { name: "test_simple_text", arguments: {}, _meta: meta },
    },
    { bearer: narrowToken },
  );
  span.end();
  const server = await spanWhere("the refused call's span", byTrace(span.spanContext().traceId));
  checkSpan(server, { name: "tools/call test_simple_text", caller: "narrow" });
  assert.equal(server.parentSpanId, span.spanContext().spanId);
  assert.equal(server.attributes[A.tool], "test_simple_text");
  checkFailed(server, reply);
  await checkLocalStep(server, "switchboard policy");

  const { reply: refused } = await rpc(
    { id: "denied-prompt", method: "prompts/get", params: { name: "test_simple_prompt" } },
    { bearer: narrowToken },
  );
  assert.ok(refused?.error, "a prompt outside the grant is a JSON-RPC error");
  const prompt = await spanWhere("the refused prompt's span", byRequestId("denied-prompt"));
  checkSpan(prompt, { name: "prompts/get test_simple_prompt", caller: "narrow" });
  assert.equal(prompt.attributes[A.prompt], "test_simple_prompt");
  checkFailed(prompt, refused);
  await checkLocalStep(prompt, "switchboard policy");
  step("refused by the grant: error spans, with the JSON-RPC code where there is one, and the refusal as their child");
}

// ---- 6. a cancelled call ----

{
  const meta = { progressToken: "trace-cancel" };
  const span = callerSpan("tools/call test_trace_context", meta);
  const started = Date.now();
  const response = await fetch(url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": HANDSHAKE,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: "cancel-me",
      method: "tools/call",
      params: { name: "test_trace_context", arguments: { wait_ms: 30000 }, _meta: meta },
    }),
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
  // The stream's events as they come: the tool's progress first, then (once cancelled)
  // the answer.
  const decoder = new TextDecoder();
  let buffered = "";
  let cancelled = false;
  let answer;
  for await (const chunk of response.body) {
    buffered += decoder.decode(chunk, { stream: true });
    const complete = buffered.lastIndexOf("\n\n");
    if (complete < 0) continue;
    const got = events(buffered.slice(0, complete));
    buffered = buffered.slice(complete + 2);
    if (!cancelled && got.some((event) => event.method === "notifications/progress")) {
      cancelled = true;
      const cancel = await rpc({
        method: "notifications/cancelled",
        params: { requestId: "cancel-me", reason: "the tracing test cancels it" },
      });
      assert.equal(cancel.status, 202, "the cancel is accepted");
    }
    answer = got.find((event) => event.id === "cancel-me") ?? answer;
    if (answer) break;
  }
  span.end();
  assert.ok(cancelled, "the tool reported its start");
  assert.equal(answer?.error?.code, -32800,
    `the cancelled call's answer: ${JSON.stringify(answer)}`);
  assert.ok(Date.now() - started < 15_000, "answered at its cancel, not at the tool's end");
  const server = await spanWhere("the cancelled call's span", byTrace(span.spanContext().traceId));
  checkSpan(server, { name: "tools/call test_trace_context" });
  assert.equal(server.parentSpanId, span.spanContext().spanId);
  checkFailed(server, answer);
  // The computer's round trip ends at the cancel, an error that says so, with the tool's
  // progress marked on it; no first byte of a reply that never came.
  const roundTrip = await waitFor("the cancelled call's round trip", async () =>
    (await receiverGet("/spans")).find((s) => s.traceId === server.traceId && s.kind === CLIENT));
  assert.equal(roundTrip.name, server.name);
  assert.equal(roundTrip.status.code, ERROR, "the round trip: an error");
  assert.equal(roundTrip.attributes[A.errorType], "cancelled");
  assert.ok(roundTrip.events.some((event) => event.name === "message to the caller"),
    `the tool's progress, an event of the round trip: ${JSON.stringify(roundTrip.events)}`);
  assert.ok(!roundTrip.events.some((event) => event.name === "first byte of the reply"));
  assert.ok(BigInt(roundTrip.endTimeUnixNano) <= BigInt(server.endTimeUnixNano));
  step("a cancelled call's span ends with error.type -32800; its round trip, cancelled, has its progress");
}

// ---- 6b. a call past its timeout ----

{
  // The run gives test_trace_context a timeout of 1 s. Answered as JSON: an event stream
  // would be ended for polling after poll_secs, as quiet as this call is.
  const meta = {};
  const span = callerSpan("tools/call test_trace_context", meta);
  const { reply } = await rpc(
    {
      id: "time-me-out",
      method: "tools/call",
      params: { name: "test_trace_context", arguments: { wait_ms: 10000 }, _meta: meta },
    },
    { headers: { accept: "application/json" } },
  );
  span.end();
  assert.ok(reply?.error, `the timed-out call's answer: ${JSON.stringify(reply)}`);
  const server = await spanWhere("the timed-out call's span", byTrace(span.spanContext().traceId));
  checkSpan(server, { name: "tools/call test_trace_context" });
  checkFailed(server, reply);
  // The computer's round trip: from the request written until the worker gave up on it,
  // an error that says so, with no reply's first byte.
  const [roundTrip, hop] = await waitFor("the timed-out call's round trip", async () => {
    const spans = (await receiverGet("/spans")).filter(byTrace(server.traceId));
    const roundTrip = spans.find((s) => s.kind === CLIENT);
    const hop = spans.find((s) => s.name === "switchboard worker");
    return roundTrip && hop ? [roundTrip, hop] : null;
  });
  assert.equal(roundTrip.parentSpanId, hop.spanId);
  assert.equal(roundTrip.status.code, ERROR, "the round trip: an error");
  assert.equal(roundTrip.attributes[A.errorType], "timeout");
  assert.ok(!roundTrip.events.some((event) => event.name === "first byte of the reply"));
  const lasted = BigInt(roundTrip.endTimeUnixNano) - BigInt(roundTrip.startTimeUnixNano);
  assert.ok(lasted >= 1_000_000_000n, `the round trip lasts the timeout: ${lasted} ns`);
  assert.ok(BigInt(hop.startTimeUnixNano) <= BigInt(roundTrip.startTimeUnixNano));
  step("a call past its timeout: its round trip ends as an error, timeout, after the timeout");
}

// ---- 7. nothing for what made no span; every export as it should be ----

{
  // A span of a later call has arrived, so those before it that were to come have too.
  const { reply } = await callTrace("marker", {});
  received(reply);
  await spanWhere("the marker call's span", byRequestId("marker"));
  const spans = await receiverGet("/spans");
  assert.ok(!spans.some(byTrace(unsampled)), "a span for a caller that said not sampled");
  assert.ok(!spans.some(byTrace(unauthenticated)), "a span for a request without a valid token");
  assert.ok(!spans.some(byRequestId("stranger")), "a span for a request without a valid token");
  const ids = new Set(spans.map((span) => span.spanId));
  assert.equal(ids.size, spans.length, "a span exported twice");
  for (const span of spans) {
    assert.deepEqual(span.problems, [], `${span.name}: not OTLP JSON as the specification has it`);
    if (span.kind === SERVER)
      assert.ok(["conformance", "narrow"].includes(span.attributes[A.caller]), span.name);
  }
  step("no span for a caller's not-sampled trace or a request without a token");

  const requests = await receiverGet("/requests");
  assert.ok(requests.length > 0);
  const secrets = { "the client token": token, "the narrow client token": narrowToken,
    "the computer secret": computerSecret, "a tool argument": ARGUMENT };
  for (const request of requests) {
    assert.ok(["/v1/traces", "/v1/logs"].includes(request.path), request.path);
    assert.match(request.headers["content-type"] ?? "", /^application\/json\b/);
    for (const [name, value] of Object.entries(exportHeaders))
      assert.equal(request.headers[name], value, `headers_file's ${name} on every export`);
    const everything = JSON.stringify(request.headers) + request.body;
    for (const [what, secret] of Object.entries(secrets))
      assert.ok(!everything.includes(secret), `${what} in an export`);
  }
  const written = read("switchboard.log") + read("audit.jsonl");
  for (const [name, value] of Object.entries(exportHeaders))
    assert.ok(!written.includes(value), `headers_file's ${name} in the log or the audit`);
  step("every export is OTLP JSON with headers_file's headers, and no token, secret or argument");

  // The audit as logs: each call's line, as the file has it, correlated with its span.
  const audited = read("audit.jsonl").split("\n").filter(Boolean).map((line) => JSON.parse(line));
  const markerLine = audited.find((line) => line.event === "call" && line.trace_id &&
    spans.some((span) => span.spanId === line.span_id && span.attributes[A.requestId] === "marker"));
  assert.ok(markerLine, "the marker call's audit line names its trace and span");
  const record = await waitFor("the marker call's audit line as a log record", async () =>
    (await receiverGet("/logs")).find((log) => log.spanId === markerLine.span_id));
  assert.equal(record.event, "call");
  assert.equal(record.traceId, markerLine.trace_id);
  assert.equal(record.severityNumber, 9);
  assert.deepEqual(JSON.parse(record.body), markerLine, "the log record's body is the audit line");
  assert.equal(markerLine.args, null, "audit_args = false: no arguments, in the file or the record");
  step("each audit line is a log record too, a call's with its span");
}

// ---- 8. the collector slow, then down, then back ----

{
  // Every span the receiver has was counted exported.
  const count = (await receiverGet("/spans")).length;
  await waitFor("/metrics counting every span exported", async () =>
    (await metric("exported")) === count);
  const exportedBefore = await metric("exported");

  // A call while an export hangs (20 s) or nobody listens is not held up by it: each must
  // end well before the hang would (the bound is about blocking, not speed).
  const timed = async (id) => {
    const started = Date.now();
    const { status, reply } = await callTrace(id, {});
    assert.equal(status, 200);
    received(reply);
    return Date.now() - started;
  };
  const quick = [];
  for (let i = 0; i < 5; i++) quick.push(await timed(`ok-${i}`));
  const bound = Math.max(5000, 10 * Math.max(...quick));

  // The first of these calls' spans is held at the collector for 20 s.
  await collector("slow", 20_000);
  for (let i = 0; i < 10; i++) {
    const took = await timed(`slow-${i}`);
    assert.ok(took < bound, `a call took ${took} ms with the collector slow`);
  }
  step("a slow collector slows no call");

  const droppedBefore = await metric("dropped");
  await collector("down");
  for (let i = 0; i < 40; i++) {
    const took = await timed(`down-${i}`);
    assert.ok(took < bound, `a call took ${took} ms with the collector down`);
  }
  const dropped = await waitFor("/metrics counting spans dropped", async () => {
    const now = await metric("dropped");
    return now > droppedBefore ? now : null;
  }, 60);
  step(`a collector down fails no call; ${dropped - droppedBefore} span(s) counted dropped`);

  // One that answers every export 503.
  await collector("fail");
  for (let i = 0; i < 40; i++) {
    const took = await timed(`fail-${i}`);
    assert.ok(took < bound, `a call took ${took} ms with the collector failing`);
  }
  await waitFor("/metrics counting the spans a failing collector refused", async () =>
    (await metric("dropped")) > dropped, 60);
  step("nor does one that fails every export");

  await collector("ok");
  const after = await waitFor("a span exported once the collector is back", async () => {
    const back = `back-${Date.now()}`;
    received((await callTrace(back, {})).reply);
    await sleep(500);
    return (await receiverGet("/spans")).find(byRequestId(back));
  }, 60);
  checkSpan(after, { name: "tools/call test_trace_context" });
  assert.ok((await metric("exported")) > exportedBefore, "exported grows again");
  step("export resumes when the collector is back");
}

console.log(`traces: ${steps.join(", ")}`);
