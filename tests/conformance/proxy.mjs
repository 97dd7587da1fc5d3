// A loopback HTTP proxy that adds `Authorization: Bearer <token>` and passes everything
// else verbatim, both ways: the conformance suite has no option to send a header, and its
// raw requests (DNS rebinding, SSE streams) must reach the switchboard with their own Host
// and Origin. Responses stream through as they come (event streams included), and a caller
// that goes away closes the upstream request too, so the switchboard sees the disconnect.
//
//   node proxy.mjs --target http://127.0.0.1:PORT --token-file FILE --port-file FILE
//                  [--trace FILE]
//
// It listens on a free loopback port and writes that port to --port-file once listening.
// --trace appends one JSON line per exchange: method, path, request headers and body,
// status, response headers and the start of the response body.
import { appendFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    target: { type: 'string' },
    'token-file': { type: 'string' },
    'port-file': { type: 'string' },
    trace: { type: 'string' }
  }
});
if (!args.target || !args['token-file'] || !args['port-file']) {
  console.error('usage: proxy.mjs --target URL --token-file FILE --port-file FILE [--trace FILE]');
  process.exit(2);
}
const target = new URL(args.target);
const token = readFileSync(args['token-file'], 'utf8').trim();
const TRACE_LIMIT = 4000;

// Keep the caller's header names, case and order; only Authorization is ours.
function upstreamHeaders(rawHeaders) {
  const out = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].toLowerCase() !== 'authorization') out.push(rawHeaders[i], rawHeaders[i + 1]);
  }
  out.push('Authorization', `Bearer ${token}`);
  return out;
}

function capture(stream, into) {
  stream.on('data', (chunk) => {
    if (into.text.length < TRACE_LIMIT) into.text += chunk.toString('utf8');
  });
}

const server = http.createServer((request, response) => {
  const trace = args.trace ? { request: { text: '' }, response: { text: '' } } : null;
  const upstream = http.request({
    host: target.hostname,
    port: target.port,
    method: request.method,
    path: request.url,
    headers: upstreamHeaders(request.rawHeaders),
    setHost: false // the caller's Host header goes through as sent
  });

  upstream.on('response', (reply) => {
    response.writeHead(reply.statusCode, reply.statusMessage, reply.rawHeaders);
    response.flushHeaders(); // an event stream's headers go out before its first event
    if (trace) capture(reply, trace.response);
    reply.pipe(response);
    reply.on('close', () => {
      if (!trace) return;
      const line = {
        at: new Date().toISOString(),
        method: request.method,
        path: request.url,
        requestHeaders: request.headers,
        requestBody: trace.request.text.slice(0, TRACE_LIMIT),
        status: reply.statusCode,
        responseHeaders: reply.headers,
        responseBody: trace.response.text.slice(0, TRACE_LIMIT)
      };
      appendFileSync(args.trace, JSON.stringify(line) + '\n');
    });
  });
  upstream.on('error', (error) => {
    if (!response.headersSent) {
      response.writeHead(502, { 'Content-Type': 'text/plain' });
      response.end(`proxy: ${error.message}\n`);
    } else {
      response.destroy();
    }
  });

  // The caller closed early (a cancelled stream reader, a timeout): close upstream too.
  response.on('close', () => {
    if (!response.writableFinished) upstream.destroy();
  });

  if (trace) capture(request, trace.request);
  request.pipe(upstream);
});

server.listen(0, '127.0.0.1', () => {
  // Written whole, then renamed: the run script never reads half a number.
  const temporary = `${args['port-file']}.tmp`;
  writeFileSync(temporary, String(server.address().port));
  renameSync(temporary, args['port-file']);
});

for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
