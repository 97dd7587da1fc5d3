// The conformance computer's Streamable HTTP at /mcp (computer.mjs): a session per
// initialize for older callers, and 2026-07-28's stateless requests checked as that
// revision asks of HTTP.
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import {
  Code,
  META_CAPABILITIES,
  META_VERSION,
  REV_2026,
  SUPPORTED_VERSIONS,
  invalidParams,
  rpcError
} from './computer_wire.mjs';
import { toolByName } from './computer_tasks.mjs';
import { handle, newCall, newServer } from './computer_methods.mjs';

// ---- Streamable HTTP at /mcp ----

// The events of a session's streams, kept so that a caller whose stream was closed can
// resume it with Last-Event-ID. The last 1000 of a session; a priming event ({}) is never
// replayed.
class MemoryEventStore {
  #events = [];
  #next = 0;

  async storeEvent(streamId, message) {
    const id = `${streamId}.${++this.#next}`;
    this.#events.push({ id, streamId, message });
    if (this.#events.length > 1000) this.#events.shift();
    return id;
  }

  async getStreamIdForEventId(eventId) {
    return this.#events.find((event) => event.id === eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId, { send }) {
    const at = this.#events.findIndex((event) => event.id === lastEventId);
    if (at < 0) throw new Error(`unknown event id ${lastEventId}`);
    const { streamId } = this.#events[at];
    for (const event of this.#events.slice(at + 1)) {
      if (event.streamId === streamId && Object.keys(event.message).length > 0)
        await send(event.id, event.message);
    }
    return streamId;
  }
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

function loopbackHost(host) {
  if (typeof host !== 'string') return false;
  try {
    return LOOPBACK.has(new URL(`http://${host}`).hostname);
  } catch {
    return false;
  }
}

function loopbackOrigin(origin) {
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK.has(url.hostname);
  } catch {
    return false;
  }
}

function sendJson(response, status, message, headers = {}) {
  if (response.headersSent) return response.end();
  response.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  response.end(JSON.stringify(message));
}

const errorMessage = (id, code, message, data) => ({
  jsonrpc: '2.0',
  id: id ?? null,
  error: { code, message, ...(data === undefined ? {} : { data }) }
});

async function readBody(request) {
  const chunks = [];
  let size = 0;
  for await (const chunk of request) {
    size += chunk.length;
    if (size > 4 << 20) throw new Error('body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

// Whether a POST without a session is one of 2026-07-28: anything but an older caller's
// initialize (no MCP-Protocol-Version header or an older one, and no revision in _meta).
function isStateless(request, body) {
  const header = request.headers['mcp-protocol-version'];
  const legacyHeader = header === undefined || SUPPORTED_PROTOCOL_VERSIONS.includes(header.trim());
  const metaVersion = body?.params?._meta?.[META_VERSION];
  return !(body?.method === 'initialize' && legacyHeader && metaVersion === undefined);
}

// What Mcp-Name must repeat, per method (SEP-2243).
function namedBy(method, params) {
  if (method === 'tools/call' || method === 'prompts/get') return ['name', params.name];
  if (method === 'resources/read') return ['uri', params.uri];
  if (method === 'tasks/get' || method === 'tasks/update' || method === 'tasks/cancel')
    return ['taskId', params.taskId];
  return null;
}

// A header value as sent, with =?base64?...?= decoded (strictly: the standard alphabet,
// whole groups of four, padding only at the end); null when that encoding is broken.
function headerValue(raw) {
  const wrapped = /^=\?base64\?(.*)\?=$/.exec(raw);
  if (!wrapped) return raw;
  const encoded = wrapped[1];
  if (encoded.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) return null;
  const decoded = Buffer.from(encoded, 'base64');
  if (decoded.toString('base64') !== encoded) return null;
  return decoded.toString('utf8');
}

// -32020 when a header 2026-07-28 asks for is missing or disagrees with the body.
function checkHeaders(request, body, params) {
  const mismatch = (message) => rpcError(Code.HeaderMismatch, message);
  const header = (name) => {
    const value = request.headers[name.toLowerCase()];
    return value === undefined ? undefined : String(value).trim();
  };
  const method = header('Mcp-Method');
  if (method === undefined) throw mismatch('a 2026-07-28 request needs the Mcp-Method header');
  if (method !== body.method)
    throw mismatch("the Mcp-Method header does not match the body's method");
  const named = namedBy(body.method, params);
  if (named) {
    const [field, value] = named;
    const name = header('Mcp-Name');
    if (name === undefined && value !== undefined)
      throw mismatch(`a 2026-07-28 ${body.method} needs the Mcp-Name header`);
    if (name !== undefined && name !== value)
      throw mismatch(`the Mcp-Name header does not match params.${field}`);
  }
  // Mcp-Param-<Name> for each argument the tool marks with x-mcp-header.
  if (body.method === 'tools/call') {
    const tool = toolByName.get(params.name);
    const given = params.arguments && typeof params.arguments === 'object' ? params.arguments : {};
    for (const [argument, schema] of Object.entries(tool?.inputSchema.properties ?? {})) {
      const headerName = schema['x-mcp-header'];
      if (!headerName) continue;
      const raw = header(`Mcp-Param-${headerName}`);
      const value = given[argument];
      if (value === undefined || value === null) {
        if (raw !== undefined)
          throw mismatch(`Mcp-Param-${headerName} names an argument the body does not have`);
        continue;
      }
      if (raw === undefined) throw mismatch(`the request needs the Mcp-Param-${headerName} header`);
      const decoded = headerValue(raw);
      if (decoded === null) throw mismatch(`Mcp-Param-${headerName} is not valid Base64`);
      if (decoded !== String(value))
        throw mismatch(`the Mcp-Param-${headerName} header does not match arguments.${argument}`);
    }
  }
}

// HTTP status of a 2026-07-28 error: 404 for a method not found, 400 for what the
// revision calls a bad request, 200 for the rest.
function statusOf(code) {
  if (code === Code.MethodNotFound) return 404;
  if ([Code.HeaderMismatch, Code.MissingCapability, Code.UnsupportedVersion].includes(code))
    return 400;
  if (code === Code.InvalidRequest || code === Code.ParseError) return 400;
  return 200;
}

// One 2026-07-28 POST: checked as the revision requires, then answered as JSON, or as an
// event stream once the request has something to send before its answer.
async function serveStateless(request, response, body) {
  const id = body.id;
  if (typeof body.method !== 'string') {
    if ('result' in body || 'error' in body) return response.writeHead(202).end();
    return sendJson(response, 400, errorMessage(id, Code.InvalidRequest, 'missing method'));
  }
  if (!('id' in body)) return response.writeHead(202).end(); // a notification
  const refuse = (error) =>
    sendJson(
      response,
      error.code === Code.InvalidParams ? 400 : statusOf(error.code),
      errorMessage(id, error.code, error.message, error.data)
    );
  const params = body.params ?? {};
  if (typeof params !== 'object' || Array.isArray(params))
    return refuse(invalidParams('params must be an object'));
  const meta = params._meta;
  if (!meta || typeof meta !== 'object' || Array.isArray(meta))
    return refuse(invalidParams('a 2026-07-28 request needs params._meta'));
  for (const key of [META_VERSION, META_CAPABILITIES]) {
    if (!(key in meta)) return refuse(invalidParams(`params._meta needs ${key}`));
  }
  const version = request.headers['mcp-protocol-version']?.trim();
  if (version === undefined)
    return refuse(
      rpcError(Code.HeaderMismatch, 'a 2026-07-28 request needs the MCP-Protocol-Version header')
    );
  if (version !== meta[META_VERSION])
    return refuse(
      rpcError(
        Code.HeaderMismatch,
        "the MCP-Protocol-Version header does not match _meta's protocolVersion"
      )
    );
  if (version !== REV_2026) {
    if (SUPPORTED_PROTOCOL_VERSIONS.includes(version))
      return refuse(
        rpcError(Code.InvalidRequest, `revision ${version} needs a session: send initialize first`)
      );
    return refuse(
      rpcError(Code.UnsupportedVersion, `unsupported protocol version ${version}`, {
        supported: SUPPORTED_VERSIONS,
        requested: version
      })
    );
  }
  try {
    checkHeaders(request, body, params);
  } catch (error) {
    return refuse(error);
  }

  const abort = new AbortController();
  response.on('close', () => {
    if (!response.writableFinished) abort.abort();
  });
  let streaming = false;
  const event = (message) => response.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  const notify = async (notification) => {
    if (abort.signal.aborted || response.writableEnded) return;
    if (!streaming) {
      streaming = true;
      response.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    }
    event({ jsonrpc: '2.0', ...notification });
  };
  const answer = (message, status) => {
    if (abort.signal.aborted || response.writableEnded) return;
    if (!streaming) return sendJson(response, status, message);
    event(message);
    response.end();
  };
  const call = newCall(body, {
    signal: abort.signal,
    notify,
    // 2026-07-28 has no requests from the server during a call: such tools are not
    // served at that revision, so this is never reached.
    request: async () => {
      throw rpcError(Code.Internal, 'a 2026-07-28 request cannot be asked anything mid-call');
    }
  });
  try {
    answer({ jsonrpc: '2.0', id, result: await handle(call) }, 200);
  } catch (error) {
    const code = Number.isInteger(error.code) ? error.code : Code.Internal;
    answer(errorMessage(id, code, error.message ?? String(error), error.data), statusOf(code));
  }
}

async function serveHttp(portFile) {
  const { StreamableHTTPServerTransport } =
    await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const sessions = new Map();

  async function route(request, response) {
    if (new URL(request.url, 'http://localhost').pathname !== '/mcp')
      return response.writeHead(404).end();
    // DNS rebinding: a page elsewhere must not reach a loopback server by name.
    const origin = request.headers.origin;
    if (!loopbackHost(request.headers.host) || (origin !== undefined && !loopbackOrigin(origin)))
      return sendJson(response, 403, errorMessage(null, -32000, 'Host or Origin is not loopback'));

    const sessionId = request.headers['mcp-session-id'];
    let body;
    if (request.method === 'POST') {
      const raw = await readBody(request);
      try {
        body = JSON.parse(raw);
      } catch {
        return sendJson(response, 400, errorMessage(null, Code.ParseError, 'parse error'));
      }
    }
    if (sessionId !== undefined) {
      const transport = sessions.get(sessionId);
      if (!transport)
        return sendJson(response, 404, errorMessage(body?.id, -32001, 'Session not found'));
      return transport.handleRequest(request, response, body);
    }
    if (request.method !== 'POST')
      return sendJson(response, 405, errorMessage(null, -32000, 'Method not allowed'), {
        Allow: 'POST'
      });
    if (!body || typeof body !== 'object' || Array.isArray(body))
      return sendJson(
        response,
        400,
        errorMessage(null, Code.InvalidRequest, 'expected one JSON-RPC object')
      );
    if (isStateless(request, body)) return serveStateless(request, response, body);

    // An older caller's initialize: a session of its own.
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new MemoryEventStore(),
      retryInterval: 1000,
      onsessioninitialized: (id) => sessions.set(id, transport),
      onsessionclosed: (id) => sessions.delete(id)
    });
    transport.onclose = () => sessions.delete(transport.sessionId);
    await newServer().connect(transport);
    return transport.handleRequest(request, response, body);
  }

  const listener = createServer((request, response) => {
    route(request, response).catch((error) => {
      console.error(`computer: ${error.stack ?? error}`);
      if (!response.headersSent)
        sendJson(response, 500, errorMessage(null, Code.Internal, String(error.message ?? error)));
      else response.destroy();
    });
  });
  listener.listen(0, '127.0.0.1', () => {
    writeFileSync(portFile, String(listener.address().port));
    console.error(`computer: serving Streamable HTTP on port ${listener.address().port}`);
  });
}

export { serveHttp };
