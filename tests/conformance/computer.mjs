// The conformance run's computer: it serves every tool, resource, prompt and completion
// the server scenarios of the MCP conformance suite call (the suite's "everything server"
// fixtures), at both revisions the suite speaks:
//
// - 2025-06-18 / 2025-11-25: the stateful wire (initialize, sessions, server->client
//   requests during a call, logging/setLevel, resources/subscribe);
// - 2026-07-28: every request stands alone and names its revision, the caller's
//   capabilities and its log level in params._meta. Results carry `resultType`, lists and
//   reads `ttlMs` and `cacheScope`; a tool that needs the caller asks through an
//   InputRequiredResult (`inputRequests`, a signed `requestState`) and is called again
//   with `inputResponses`; a capability the caller did not declare is -32021;
//   `server/discover`, `subscriptions/listen` and the tasks extension
//   (io.modelcontextprotocol/tasks: tasks/get, tasks/update, tasks/cancel) are served;
//   initialize, ping, logging/setLevel, resources/(un)subscribe, tasks/result and
//   tasks/list are -32601.
//
// Which revision a request is, is decided per request from its own params._meta, on
// every transport. Transports:
//
//   node computer.mjs --url ws://127.0.0.1:PORT/vm/attach --secret-file FILE
//       dials the switchboard's /vm/attach WebSocket (one JSON-RPC message per text
//       frame) and exits when the socket closes;
//   node computer.mjs --stdio
//       a stdio MCP server, for switchboard-connect;
//   node computer.mjs ... --modern-only
//       either of those, speaking 2026-07-28 alone: initialize is refused -32022, as the
//       official v2 SDK's server refuses it with `legacy: "reject"` (the era tests'
//       2026-only computer with tasks, tests/conformance/README.md);
//   node computer.mjs --http-port-file FILE
//       a Streamable HTTP server on a free loopback port (written to FILE) at /mcp: a
//       session per initialize for 2025 callers (the SDK's transport, with an event store
//       so that a stream it closes can be resumed with Last-Event-ID), and, for requests
//       without a session that name 2026-07-28, a handler of our own that checks what
//       that revision requires of the HTTP layer (params._meta, MCP-Protocol-Version,
//       Mcp-Method, Mcp-Name and Mcp-Param-* agreeing with the body) and answers its
//       errors with their HTTP status (400, or 404 for -32601). It refuses a Host or
//       Origin that is not loopback (DNS rebinding). This is what the suite talks to
//       directly, and what switchboard-connect --upstream relays to.
//
// Over a WebSocket or stdio nothing but JSON-RPC exists: what 2026-07-28 asks of HTTP is
// the switchboard's job there. Built on the official SDK's low-level Server, whose
// requests all reach one handler of ours (fallbackRequestHandler), so that the tool
// schemas go out exactly as written and a tools/call keeps its inputResponses and
// requestState (the SDK's own CallToolRequestSchema would strip them).
//
// Its parts, each a module beside this one: computer_wire.mjs (the revisions' constants,
// errors, media, the signed requestState and what a caller may be asked),
// computer_tools.mjs (the tools), computer_tasks.mjs (the tasks extension),
// computer_content.mjs (resources, their watching and listens, prompts),
// computer_methods.mjs (one request through its method, and the SDK's Server) and
// computer_http.mjs (Streamable HTTP at /mcp); this file holds the transports' start.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { newServer } from './computer_methods.mjs';
import { serveHttp } from './computer_http.mjs';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    'secret-file': { type: 'string' },
    stdio: { type: 'boolean' },
    'http-port-file': { type: 'string' },
    'modern-only': { type: 'boolean' }
  }
});
// --modern-only: 2026-07-28 alone, initialize refused (computer_methods.mjs, newServer).
const serverOptions = { modernOnly: args['modern-only'] ?? false };
if (!args.stdio && !args['http-port-file'] && (!args.url || !args['secret-file'])) {
  console.error(
    'usage: computer.mjs --url ws://HOST:PORT/vm/attach --secret-file FILE | --stdio | ' +
      '--http-port-file FILE'
  );
  process.exit(2);
}

// ---- the SDK's Transport over one WebSocket: one JSON-RPC message per text frame ----

class WebSocketTransport {
  #socket;
  #started = false;
  #early = []; // frames that arrive before the SDK calls start()

  constructor(socket) {
    this.#socket = socket;
    socket.on('message', (data, isBinary) => {
      if (isBinary) return this.onerror?.(new Error('binary frame ignored'));
      let message;
      try {
        message = JSON.parse(data.toString('utf8'));
      } catch (error) {
        return this.onerror?.(error);
      }
      if (this.#started) this.onmessage?.(message);
      else this.#early.push(message);
    });
    socket.on('close', () => this.onclose?.());
    socket.on('error', (error) => this.onerror?.(error));
  }

  async start() {
    this.#started = true;
    for (const message of this.#early.splice(0)) this.onmessage?.(message);
  }

  async send(message) {
    if (this.#socket.readyState !== WebSocket.OPEN) throw new Error('socket is not open');
    await new Promise((resolve, reject) =>
      this.#socket.send(JSON.stringify(message), (error) => (error ? reject(error) : resolve()))
    );
  }

  async close() {
    this.#socket.close(1000);
  }
}

// ---- dial once; no redial ----

function dial() {
  const secret = readFileSync(args['secret-file'], 'utf8').trim();
  const socket = new WebSocket(args.url, {
    headers: { Authorization: `Bearer ${secret}` },
    handshakeTimeout: 10_000
  });
  const transport = new WebSocketTransport(socket);

  socket.on('unexpected-response', (_request, response) => {
    console.error(`computer: attach refused with HTTP ${response.statusCode}`);
    process.exit(1);
  });
  socket.on('open', () => {
    console.error(`computer: attached to ${args.url}`);
    newServer(serverOptions)
      .connect(transport)
      .catch((error) => {
        console.error(`computer: ${error.message}`);
        process.exit(1);
      });
  });
  socket.on('close', (code, reason) => {
    console.error(`computer: socket closed (${code} ${reason.toString()})`);
    process.exit(0);
  });
  socket.on('error', (error) => {
    console.error(`computer: ${error.message}`);
    if (socket.readyState !== WebSocket.OPEN) process.exit(1);
  });
}

// ---- start: one transport, as the arguments say ----

if (args.stdio) {
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  await newServer(serverOptions).connect(new StdioServerTransport());
} else if (args['http-port-file']) {
  await serveHttp(args['http-port-file']);
} else {
  dial();
}
