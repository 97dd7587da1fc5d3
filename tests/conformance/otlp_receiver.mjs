// A stand-in OpenTelemetry collector for the tracing test (traces.mjs): it takes OTLP/HTTP
// exports of spans as JSON at POST /v1/traces and keeps every request, headers and body,
// and every span in it; and it can be made slow, failing or down, to show that a collector
// in trouble costs the switchboard's calls nothing.
//
//   node otlp_receiver.mjs --port-file FILE --control-port-file FILE [--log FILE]
//
// Two loopback listeners on free ports, each written to its file once listening:
// - the collector: POST /v1/traces and /v1/logs. `application/json` bodies (gzip or not)
//   are read as OTLP JSON and answered 200 `{}`; protobuf, or any other type, is kept and answered
//   415, since the switchboard is to send JSON.
// - its control: GET /spans, every span received, flattened: ids, name, kind, times,
//   status, attributes as plain values (`attributes`) and their OTLP value kinds
//   (`kinds`, e.g. "intValue"), the resource's attributes, the scope, and `problems`,
//   whatever in it OTLP JSON does not allow (ids not lower-case hex of their length,
//   enums as names, 64-bit integers as numbers...). GET /logs: every log record received
//   (event.name, body, trace and span ids). GET /requests: every export request
//   (its headers, its body as text, what it was answered). POST /control with
//   {"mode": "ok" | "slow" | "fail" | "down", "delay_ms": N}: "slow" answers each export
//   after delay_ms (10 s by default), "fail" answers 503, "down" stops the collector's
//   listener and drops its connections (connection refused, as a collector that is not
//   running), "ok" listens again on the same port.
// With --log, each export request is also appended to FILE as one JSON line.
import { appendFileSync, renameSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';

const { values: args } = parseArgs({
  options: {
    'port-file': { type: 'string' },
    'control-port-file': { type: 'string' },
    log: { type: 'string' }
  }
});
if (!args['port-file'] || !args['control-port-file']) {
  console.error(
    'usage: node otlp_receiver.mjs --port-file FILE --control-port-file FILE [--log FILE]'
  );
  process.exit(2);
}

const requests = [];
const spans = [];
let mode = 'ok';
let delayMs = 10_000;

// ---- OTLP JSON, read as the specification has it ----

const HEX = (length) => new RegExp(`^[0-9a-f]{${length}}$`);
const TRACE_ID = HEX(32);
const SPAN_ID = HEX(16);
const NANOS = /^[0-9]+$/;

// One AnyValue: its plain value and its kind; a problem for what OTLP JSON does not allow.
function valueOf(any, where, problems) {
  if (!any || typeof any !== 'object') {
    problems.push(`${where}: not an AnyValue`);
    return { value: undefined, kind: 'none' };
  }
  const [kind, ...others] = Object.keys(any);
  if (others.length) problems.push(`${where}: more than one value kind`);
  const raw = any[kind];
  switch (kind) {
    case 'stringValue':
    case 'bytesValue':
      if (typeof raw !== 'string') problems.push(`${where}: ${kind} is not a string`);
      return { value: raw, kind };
    case 'boolValue':
      if (typeof raw !== 'boolean') problems.push(`${where}: boolValue is not a boolean`);
      return { value: raw, kind };
    case 'intValue':
      // A 64-bit integer is a decimal string in OTLP JSON (receivers also take a number).
      if (typeof raw !== 'string' || !/^-?[0-9]+$/.test(raw))
        problems.push(`${where}: intValue ${JSON.stringify(raw)} is not a decimal string`);
      return { value: Number(raw), kind };
    case 'doubleValue':
      if (typeof raw !== 'number') problems.push(`${where}: doubleValue is not a number`);
      return { value: raw, kind };
    case 'arrayValue':
      return {
        value: (raw?.values ?? []).map(
          (item, i) => valueOf(item, `${where}[${i}]`, problems).value
        ),
        kind
      };
    case 'kvlistValue':
      return { value: attributesOf(raw?.values, where, problems).attributes, kind };
    default:
      problems.push(`${where}: unknown value kind ${kind}`);
      return { value: undefined, kind: String(kind) };
  }
}

function attributesOf(list, where, problems) {
  const attributes = {};
  const kinds = {};
  if (list !== undefined && !Array.isArray(list)) problems.push(`${where}: attributes not a list`);
  for (const entry of Array.isArray(list) ? list : []) {
    if (typeof entry?.key !== 'string') {
      problems.push(`${where}: an attribute without a key`);
      continue;
    }
    if (entry.key in attributes) problems.push(`${where}: ${entry.key} twice`);
    const { value, kind } = valueOf(entry.value, `${where} ${entry.key}`, problems);
    attributes[entry.key] = value;
    kinds[entry.key] = kind;
  }
  return { attributes, kinds };
}

function flatten(body, requestIndex) {
  const out = [];
  const top = [];
  if (!Array.isArray(body?.resourceSpans)) top.push('no resourceSpans list');
  for (const resourceSpans of body?.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes, 'resource', top);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        const problems = [...top];
        const where = `span ${span.name}`;
        if (!TRACE_ID.test(span.traceId ?? '')) problems.push(`${where}: traceId ${span.traceId}`);
        if (!SPAN_ID.test(span.spanId ?? '')) problems.push(`${where}: spanId ${span.spanId}`);
        const parent = span.parentSpanId ?? '';
        if (parent !== '' && !SPAN_ID.test(parent))
          problems.push(`${where}: parentSpanId ${parent}`);
        if (typeof span.name !== 'string' || span.name === '')
          problems.push('a span without a name');
        if (span.kind !== undefined && !Number.isInteger(span.kind))
          problems.push(`${where}: kind ${JSON.stringify(span.kind)} is not an integer`);
        for (const time of ['startTimeUnixNano', 'endTimeUnixNano']) {
          if (typeof span[time] !== 'string' || !NANOS.test(span[time]))
            problems.push(`${where}: ${time} ${JSON.stringify(span[time])} is not a decimal`);
        }
        const status = span.status ?? {};
        if (status.code !== undefined && !Number.isInteger(status.code))
          problems.push(`${where}: status.code ${JSON.stringify(status.code)} is not an integer`);
        const { attributes, kinds } = attributesOf(span.attributes, where, problems);
        out.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: parent,
          traceState: span.traceState ?? '',
          flags: span.flags,
          name: span.name,
          kind: span.kind ?? 0,
          startTimeUnixNano: span.startTimeUnixNano,
          endTimeUnixNano: span.endTimeUnixNano,
          status: { code: status.code ?? 0, message: status.message ?? '' },
          attributes,
          kinds,
          events: span.events ?? [],
          links: span.links ?? [],
          resource: resource.attributes,
          scope: { name: scopeSpans.scope?.name ?? '', version: scopeSpans.scope?.version ?? '' },
          problems,
          request: requestIndex
        });
      }
    }
  }
  return out;
}

// ---- the collector ----

async function readBody(request) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  let body = Buffer.concat(chunks);
  if ((request.headers['content-encoding'] ?? '').toLowerCase() === 'gzip') body = gunzipSync(body);
  return body;
}

function answer(response, status, body, type = 'application/json') {
  response.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

// The log records of OTLP JSON logs exports (an audit line each): event.name, the body
// text, the trace and span ids, the severity.
const logs = [];
function flattenLogs(request) {
  const out = [];
  for (const resourceLogs of request.resourceLogs ?? []) {
    for (const scopeLogs of resourceLogs.scopeLogs ?? []) {
      for (const record of scopeLogs.logRecords ?? []) {
        const event = (record.attributes ?? []).find((attribute) => attribute.key === 'event.name');
        out.push({
          event: event?.value?.stringValue ?? '',
          body: record.body?.stringValue ?? '',
          traceId: record.traceId ?? '',
          spanId: record.spanId ?? '',
          severityNumber: record.severityNumber,
          timeUnixNano: record.timeUnixNano
        });
      }
    }
  }
  return out;
}

const sockets = new Set();
const collector = http.createServer(async (request, response) => {
  const record = {
    at: new Date().toISOString(),
    method: request.method,
    path: request.url,
    headers: request.headers,
    mode,
    status: 0,
    body: ''
  };
  try {
    if (request.method !== 'POST' || !['/v1/traces', '/v1/logs'].includes(request.url)) {
      record.status = 404;
      answer(response, 404, '{}');
      return;
    }
    const body = await readBody(request);
    const type = (request.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    record.body = type === 'application/json' ? body.toString('utf8') : body.toString('base64');
    if (mode === 'fail') {
      record.status = 503;
      answer(response, 503, '{"code":14,"message":"the test made this collector fail"}');
      return;
    }
    if (mode === 'slow') await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (type !== 'application/json') {
      record.status = 415;
      answer(response, 415, '{"code":3,"message":"this collector takes OTLP JSON only"}');
      return;
    }
    let parsed;
    try {
      parsed = JSON.parse(record.body);
    } catch (error) {
      record.status = 400;
      answer(response, 400, JSON.stringify({ code: 3, message: `not JSON: ${error.message}` }));
      return;
    }
    if (request.url === '/v1/logs') logs.push(...flattenLogs(parsed));
    else spans.push(...flatten(parsed, requests.length));
    record.status = 200;
    answer(response, 200, '{}');
  } catch (error) {
    record.status = 500;
    record.error = String(error?.message ?? error);
    if (!response.headersSent) answer(response, 500, '{}');
  } finally {
    requests.push(record);
    if (args.log) appendFileSync(args.log, `${JSON.stringify(record)}\n`);
  }
});
collector.on('connection', (socket) => {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
});

function listen(server, port) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(server.address().port);
    });
  });
}

async function setMode(next, delay) {
  if (delay !== undefined) delayMs = delay;
  if (next === 'down' && collector.listening) {
    await new Promise((resolve) => {
      collector.close(resolve);
      for (const socket of sockets) socket.destroy();
    });
  } else if (next !== 'down' && !collector.listening) {
    await listen(collector, collectorPort);
  }
  mode = next;
}

// ---- its control ----

const control = http.createServer(async (request, response) => {
  try {
    if (request.method === 'GET' && request.url === '/spans') {
      answer(response, 200, JSON.stringify(spans));
    } else if (request.method === 'GET' && request.url === '/logs') {
      answer(response, 200, JSON.stringify(logs));
    } else if (request.method === 'GET' && request.url === '/requests') {
      answer(response, 200, JSON.stringify(requests));
    } else if (request.method === 'POST' && request.url === '/control') {
      const asked = JSON.parse((await readBody(request)).toString('utf8') || '{}');
      if (!['ok', 'slow', 'fail', 'down'].includes(asked.mode))
        return answer(response, 400, JSON.stringify({ error: 'mode: ok, slow, fail or down' }));
      await setMode(asked.mode, asked.delay_ms);
      answer(response, 200, JSON.stringify({ mode, delay_ms: delayMs }));
    } else {
      answer(response, 404, '{}');
    }
  } catch (error) {
    answer(response, 500, JSON.stringify({ error: String(error?.message ?? error) }));
  }
});

function writePort(file, port) {
  writeFileSync(`${file}.tmp`, `${port}\n`);
  renameSync(`${file}.tmp`, file);
}

const collectorPort = await listen(collector, 0);
const controlPort = await listen(control, 0);
writePort(args['control-port-file'], controlPort);
writePort(args['port-file'], collectorPort);
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
