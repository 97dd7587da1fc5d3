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
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { crc32, deflateSync } from 'node:zlib';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  InitializeRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS
} from '@modelcontextprotocol/sdk/types.js';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    'secret-file': { type: 'string' },
    stdio: { type: 'boolean' },
    'http-port-file': { type: 'string' }
  }
});
if (!args.stdio && !args['http-port-file'] && (!args.url || !args['secret-file'])) {
  console.error(
    'usage: computer.mjs --url ws://HOST:PORT/vm/attach --secret-file FILE | --stdio | ' +
      '--http-port-file FILE'
  );
  process.exit(2);
}

const SERVER_INFO = { name: 'switchboard-conformance-computer', version: '2.0.0' };
const REV_2026 = '2026-07-28';
const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
const META_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel';
const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
const META_SUBSCRIPTION = 'io.modelcontextprotocol/subscriptionId';
// Every revision served: the older ones through initialize and a session, 2026-07-28 per
// request.
const SUPPORTED_VERSIONS = [...SUPPORTED_PROTOCOL_VERSIONS, REV_2026].sort();

const Code = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  Internal: -32603,
  HeaderMismatch: -32020,
  MissingCapability: -32021,
  UnsupportedVersion: -32022
};

// A JSON-RPC error of ours, the answer to the request: its wire message is exactly
// `message` (the SDK's McpError would prefix "MCP error <code>: ").
function rpcError(code, message, data) {
  return Object.assign(new Error(message), {
    code,
    answer: true,
    ...(data === undefined ? {} : { data })
  });
}

const invalidParams = (message, data) => rpcError(Code.InvalidParams, message, data);

// ---- media made here: a 1x1 red PNG and 0.1 s of silent 8 kHz mono WAV ----

function pngChunk(type, data) {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'ascii');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

function redPixelPng() {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(1, 0); // width
  header.writeUInt32BE(1, 4); // height
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  const scanline = Buffer.from([0, 255, 0, 0]); // filter byte, then R G B
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(scanline)),
    pngChunk('IEND', Buffer.alloc(0))
  ]).toString('base64');
}

function silentWav() {
  const rate = 8000;
  const samples = rate / 10;
  const data = samples * 2;
  const out = Buffer.alloc(44 + data);
  out.write('RIFF', 0, 'ascii');
  out.writeUInt32LE(36 + data, 4);
  out.write('WAVEfmt ', 8, 'ascii');
  out.writeUInt32LE(16, 16); // fmt chunk size
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(1, 22); // mono
  out.writeUInt32LE(rate, 24);
  out.writeUInt32LE(rate * 2, 28); // bytes per second
  out.writeUInt16LE(2, 32); // block align
  out.writeUInt16LE(16, 34); // bits per sample
  out.write('data', 36, 'ascii');
  out.writeUInt32LE(data, 40);
  return out.toString('base64');
}

const PNG = redPixelPng();
const WAV = silentWav();

// ---- logging levels, in order of severity ----

const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

// ---- requestState: opaque to the caller, signed so that a changed one is refused ----

const STATE_KEY = randomBytes(32);
const mac = (payload) => createHmac('sha256', STATE_KEY).update(payload).digest('base64url');

function sealState(tool, data) {
  const payload = Buffer.from(JSON.stringify({ tool, data })).toString('base64url');
  return `${payload}.${mac(payload)}`;
}

// The data sealed for `tool`, or -32602 when the state was not made here for it.
function openState(tool, state) {
  const refuse = () => invalidParams('requestState failed its integrity check', { tool });
  if (typeof state !== 'string') throw invalidParams('requestState must be a string');
  const [payload, signature, extra] = state.split('.');
  if (!payload || !signature || extra !== undefined) throw refuse();
  const want = Buffer.from(mac(payload));
  const got = Buffer.from(signature);
  if (want.length !== got.length || !timingSafeEqual(want, got)) throw refuse();
  const sealed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  if (sealed.tool !== tool) throw refuse();
  return sealed.data;
}

// ---- what the caller may be asked (InputRequiredResult entries) ----

const ask = {
  elicit: (message, properties) => ({
    method: 'elicitation/create',
    params: {
      message,
      requestedSchema: { type: 'object', properties, required: Object.keys(properties) }
    }
  }),
  sample: (prompt, maxTokens) => ({
    method: 'sampling/createMessage',
    params: {
      messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
      maxTokens
    }
  }),
  roots: () => ({ method: 'roots/list', params: {} })
};

// Which client capability each kind of input request needs.
const CAPABILITY_OF = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots'
};

// The answers a retry brings, checked: an object (or absent); each answer, when given,
// an object. A malformed one is a protocol error (-32602), not a reason to ask again.
function inputResponsesOf(params) {
  if (!('inputResponses' in params) || params.inputResponses === undefined) return {};
  const responses = params.inputResponses;
  if (responses === null || typeof responses !== 'object' || Array.isArray(responses))
    throw invalidParams('inputResponses must be an object of the answers to inputRequests');
  for (const [key, value] of Object.entries(responses)) {
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      throw invalidParams(`inputResponses.${key} must be the result of the request it answers`);
  }
  return responses;
}

// What an elicitation answer accepted: its content, or nothing when declined/cancelled.
function accepted(answer) {
  return answer?.action === 'accept' && answer.content && typeof answer.content === 'object'
    ? answer.content
    : null;
}

const sampledText = (answer) =>
  typeof answer?.content?.text === 'string' ? answer.content.text : JSON.stringify(answer);

// Gathers the answers named in `wanted` (key -> input request): those missing are asked
// for (an InputRequiredResult, with `state` sealed in requestState if given); when all
// are there, `finish(answers)` makes the complete result. Unknown keys are ignored.
function gather(call, wanted, finish, state) {
  const responses = inputResponsesOf(call.params);
  const missing = Object.entries(wanted).filter(([key]) => responses[key] === undefined);
  if (missing.length === 0) return finish(responses);
  return {
    resultType: 'input_required',
    inputRequests: Object.fromEntries(missing),
    ...(state === undefined ? {} : { requestState: sealState(call.params.name, state) })
  };
}

// ---- the tools, with the names, arguments and texts the suite's scenarios expect ----

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value) => ({ type: 'text', text: value });
const noArguments = { type: 'object', properties: {} };
const BOTH = ['2025', '2026'];

// Each tool: what tools/list shows, the revisions it is listed and callable at, and
// run(arguments, call) -> result. `call` is the request as one handler sees it on any
// transport (see `newCall`).
const tools = [
  {
    // First in the list: the suite's header checks call the first tool with no arguments.
    name: 'test_simple_text',
    description: 'Returns one text item',
    inputSchema: noArguments,
    run: async () => ({ content: [text('This is a simple text response for testing.')] })
  },
  {
    name: 'test_image_content',
    description: 'Returns a 1x1 red PNG',
    inputSchema: noArguments,
    run: async () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] })
  },
  {
    name: 'test_audio_content',
    description: 'Returns a short silent WAV',
    inputSchema: noArguments,
    run: async () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] })
  },
  {
    name: 'test_embedded_resource',
    description: 'Returns an embedded text resource',
    inputSchema: noArguments,
    run: async () => ({
      content: [
        {
          type: 'resource',
          resource: {
            uri: 'test://embedded-resource',
            mimeType: 'text/plain',
            text: 'This is an embedded resource content.'
          }
        }
      ]
    })
  },
  {
    name: 'test_multiple_content_types',
    description: 'Returns text, an image and a resource',
    inputSchema: noArguments,
    run: async () => ({
      content: [
        text('Multiple content types test:'),
        { type: 'image', data: PNG, mimeType: 'image/png' },
        {
          type: 'resource',
          resource: {
            uri: 'test://mixed-content-resource',
            mimeType: 'application/json',
            text: JSON.stringify({ test: 'data', value: 123 })
          }
        }
      ]
    })
  },
  {
    name: 'test_tool_with_logging',
    description: 'Sends three info log messages while it runs',
    inputSchema: noArguments,
    run: async (_arguments, call) => {
      await call.log('info', 'Tool execution started');
      await sleep(50);
      await call.log('info', 'Tool processing data');
      await sleep(50);
      await call.log('info', 'Tool execution completed');
      return { content: [text('Tool with logging executed successfully')] };
    }
  },
  {
    name: 'test_tool_with_progress',
    description: 'Reports progress 0, 50 and 100 of 100 when given a progress token',
    inputSchema: noArguments,
    run: async (_arguments, call) => {
      const token = call.params._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (progress) await sleep(50);
        if (token === undefined) continue;
        await call.notify({
          method: 'notifications/progress',
          params: {
            progressToken: token,
            progress,
            total: 100,
            message: `Completed step ${progress} of 100`
          }
        });
      }
      return { content: [text(`Progress reported for token ${JSON.stringify(token ?? null)}`)] };
    }
  },
  {
    name: 'test_error_handling',
    description: 'Always fails with isError',
    inputSchema: noArguments,
    run: async () => ({
      isError: true,
      content: [text('This tool intentionally returns an error for testing')]
    })
  },
  {
    name: 'json_schema_2020_12_tool',
    description: 'Tool with JSON Schema 2020-12 features',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: {
        address: {
          $anchor: 'addressDef',
          type: 'object',
          properties: { street: { type: 'string' }, city: { type: 'string' } }
        }
      },
      properties: {
        name: { type: 'string' },
        address: { $ref: '#/$defs/address' },
        contactMethod: { type: 'string', enum: ['phone', 'email'] },
        phone: { type: 'string' },
        email: { type: 'string' }
      },
      allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
      if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
      then: { required: ['phone'] },
      else: { required: ['email'] },
      additionalProperties: false
    },
    run: async (toolArguments) => ({ content: [text(JSON.stringify(toolArguments))] })
  },
  {
    // A 2026-07-28 caller repeats `region` in the Mcp-Param-Region header (SEP-2243);
    // over HTTP the two must agree (checked where the headers are seen).
    name: 'test_header_param',
    description: 'Echoes its region, which a 2026-07-28 caller also sends as Mcp-Param-Region',
    inputSchema: {
      type: 'object',
      properties: {
        region: { type: 'string', description: 'Any text', 'x-mcp-header': 'Region' }
      },
      required: ['region']
    },
    run: async ({ region }) => ({ content: [text(`Region: ${region}`)] })
  },

  // -- 2025 only: the server asks the caller during the call, or closes its stream --

  {
    // The suite's SSE polling scenario calls it: over HTTP it closes the call's event
    // stream at once (the caller resumes it with Last-Event-ID), then answers.
    name: 'test_reconnection',
    revisions: ['2025'],
    description: 'Closes its event stream, then answers after a pause',
    inputSchema: noArguments,
    // Through a switchboard, which cannot be asked to close its caller's stream, the pause
    // outlasts the poll_secs after which the switchboard ends a quiet call's stream itself.
    run: async (_arguments, call) => {
      call.closeStream?.();
      await sleep(1500);
      return { content: [text('Reconnection test completed successfully.')] };
    }
  },
  {
    name: 'test_sampling',
    revisions: ['2025'],
    description: 'Asks the caller for an LLM completion',
    inputSchema: {
      type: 'object',
      properties: { prompt: { type: 'string', description: 'The prompt to send to the LLM' } },
      required: ['prompt']
    },
    run: async ({ prompt }, call) => {
      const result = await call.request(ask.sample(String(prompt), 100), CreateMessageResultSchema);
      return { content: [text(`LLM response: ${sampledText(result)}`)] };
    }
  },
  {
    name: 'test_elicitation',
    revisions: ['2025'],
    description: 'Asks the caller for a user name and email',
    inputSchema: {
      type: 'object',
      properties: { message: { type: 'string', description: 'The message to show the user' } },
      required: ['message']
    },
    run: async ({ message }, call) => {
      const result = await call.request(
        {
          method: 'elicitation/create',
          params: {
            message: String(message),
            requestedSchema: {
              type: 'object',
              properties: {
                username: { type: 'string', description: "User's response" },
                email: { type: 'string', description: "User's email address" }
              },
              required: ['username', 'email']
            }
          }
        },
        ElicitResultSchema
      );
      return { content: [text(`User response: ${describe(result)}`)] };
    }
  },
  {
    name: 'test_elicitation_sep1034_defaults',
    revisions: ['2025'],
    description: 'Elicitation whose schema has a default for every primitive type',
    inputSchema: noArguments,
    run: async (_arguments, call) => {
      const result = await call.request(
        {
          method: 'elicitation/create',
          params: {
            message: 'Please review and update the form fields with defaults',
            requestedSchema: {
              type: 'object',
              properties: {
                name: { type: 'string', description: 'User name', default: 'John Doe' },
                age: { type: 'integer', description: 'User age', default: 30 },
                score: { type: 'number', description: 'User score', default: 95.5 },
                status: {
                  type: 'string',
                  description: 'User status',
                  enum: ['active', 'inactive', 'pending'],
                  default: 'active'
                },
                verified: { type: 'boolean', description: 'Verification status', default: true }
              }
            }
          }
        },
        ElicitResultSchema
      );
      return { content: [text(`Elicitation completed: ${describe(result)}`)] };
    }
  },
  {
    name: 'test_elicitation_sep1330_enums',
    revisions: ['2025'],
    description: 'Elicitation with all five enum schema variants',
    inputSchema: noArguments,
    run: async (_arguments, call) => {
      const result = await call.request(
        {
          method: 'elicitation/create',
          params: {
            message: 'Please pick from each kind of list',
            requestedSchema: {
              type: 'object',
              properties: {
                untitledSingle: {
                  type: 'string',
                  description: 'Untitled single-select',
                  enum: ['option1', 'option2', 'option3']
                },
                titledSingle: {
                  type: 'string',
                  description: 'Titled single-select',
                  oneOf: [
                    { const: 'value1', title: 'First Option' },
                    { const: 'value2', title: 'Second Option' },
                    { const: 'value3', title: 'Third Option' }
                  ]
                },
                legacyEnum: {
                  type: 'string',
                  description: 'Legacy titled single-select',
                  enum: ['opt1', 'opt2', 'opt3'],
                  enumNames: ['Option One', 'Option Two', 'Option Three']
                },
                untitledMulti: {
                  type: 'array',
                  description: 'Untitled multi-select',
                  items: { type: 'string', enum: ['option1', 'option2', 'option3'] }
                },
                titledMulti: {
                  type: 'array',
                  description: 'Titled multi-select',
                  items: {
                    anyOf: [
                      { const: 'value1', title: 'First Choice' },
                      { const: 'value2', title: 'Second Choice' },
                      { const: 'value3', title: 'Third Choice' }
                    ]
                  }
                }
              }
            }
          }
        },
        ElicitResultSchema
      );
      return { content: [text(`Elicitation completed: ${describe(result)}`)] };
    }
  },

  // -- 2026-07-28 only: what the stateless revision checks --

  {
    name: 'test_missing_capability',
    revisions: ['2026'],
    description: 'Needs the sampling capability: -32021 when the request does not declare it',
    inputSchema: noArguments,
    requires: ['sampling'],
    run: async () => ({ content: [text('The request declared sampling.')] })
  },
  {
    // Elicitation the 2026-07-28 way: on the call's own stream nothing but notifications
    // and the answer, which asks through inputRequests instead of a request of its own.
    name: 'test_streaming_elicitation',
    revisions: ['2026'],
    description: 'Asks for a confirmation through an InputRequiredResult, never a request',
    inputSchema: noArguments,
    requires: ['elicitation'],
    run: async (_arguments, call) => {
      const token = call.params._meta?.progressToken;
      if (token !== undefined)
        await call.notify({
          method: 'notifications/progress',
          params: { progressToken: token, progress: 1, total: 2, message: 'Asking' }
        });
      return gather(
        call,
        { confirm: ask.elicit('Proceed?', { ok: { type: 'boolean' } }) },
        ({ confirm }) => ({ content: [text(`Confirmed: ${accepted(confirm)?.ok === true}`)] })
      );
    }
  },
  {
    name: 'test_logging_tool',
    revisions: ['2026'],
    description: "Logs one info message, only when the request's _meta asks for a log level",
    inputSchema: noArguments,
    run: async (_arguments, call) => {
      await call.log('info', 'test_logging_tool ran');
      return { content: [text('Logged where the request asked for it.')] };
    }
  },
  {
    name: 'test_trigger_tool_change',
    revisions: ['2026'],
    description: 'Announces notifications/tools/list_changed to the listening subscriptions',
    inputSchema: noArguments,
    run: async () => {
      announce('toolsListChanged', 'notifications/tools/list_changed');
      return { content: [text('Tool list change announced.')] };
    }
  },
  {
    name: 'test_trigger_prompt_change',
    revisions: ['2026'],
    description: 'Announces notifications/prompts/list_changed to the listening subscriptions',
    inputSchema: noArguments,
    run: async () => {
      announce('promptsListChanged', 'notifications/prompts/list_changed');
      return { content: [text('Prompt list change announced.')] };
    }
  },
  {
    name: 'test_input_required_result_elicitation',
    revisions: ['2026'],
    description: "Asks the caller's user for a name, then greets them",
    inputSchema: noArguments,
    requires: ['elicitation'],
    run: async (_arguments, call) =>
      gather(
        call,
        { user_name: ask.elicit('What is your name?', { name: { type: 'string' } }) },
        ({ user_name }) => {
          const name = accepted(user_name)?.name;
          return { content: [text(name ? `Hello, ${name}!` : 'No name was given.')] };
        }
      )
  },
  {
    name: 'test_input_required_result_sampling',
    revisions: ['2026'],
    description: "Asks the caller's LLM a question, then quotes the answer",
    inputSchema: noArguments,
    requires: ['sampling'],
    run: async (_arguments, call) =>
      gather(
        call,
        { capital_question: ask.sample('What is the capital of France?', 100) },
        ({ capital_question }) => ({
          content: [text(`The LLM answered: ${sampledText(capital_question)}`)]
        })
      )
  },
  {
    name: 'test_input_required_result_list_roots',
    revisions: ['2026'],
    description: "Asks for the caller's roots, then lists them",
    inputSchema: noArguments,
    requires: ['roots'],
    run: async (_arguments, call) =>
      gather(call, { client_roots: ask.roots() }, ({ client_roots }) => {
        const roots = Array.isArray(client_roots.roots) ? client_roots.roots : [];
        return { content: [text(`Roots: ${roots.map((root) => root.uri).join(', ') || 'none'}`)] };
      })
  },
  {
    name: 'test_input_required_result_request_state',
    revisions: ['2026'],
    description: 'Asks for a confirmation and keeps its progress in requestState',
    inputSchema: noArguments,
    requires: ['elicitation'],
    run: async (_arguments, call) => {
      const { params } = call;
      // A retry must bring back the state this tool sealed.
      if (inputResponsesOf(params).confirm !== undefined) {
        if (!('requestState' in params))
          throw invalidParams('a retry of this tool must echo its requestState');
        openState(params.name, params.requestState);
      }
      return gather(
        call,
        { confirm: ask.elicit('Please confirm', { ok: { type: 'boolean' } }) },
        ({ confirm }) => ({
          content: [text(`state-ok: confirmed=${accepted(confirm)?.ok === true}`)]
        }),
        { step: 'confirm' }
      );
    }
  },
  {
    name: 'test_input_required_result_multiple_inputs',
    revisions: ['2026'],
    description: 'Asks for a name, a greeting and the roots at once',
    inputSchema: noArguments,
    requires: ['elicitation', 'sampling', 'roots'],
    run: async (_arguments, call) => {
      if ('requestState' in call.params) openState(call.params.name, call.params.requestState);
      return gather(
        call,
        {
          user_name: ask.elicit('What is your name?', { name: { type: 'string' } }),
          greeting: ask.sample('Generate a greeting', 50),
          client_roots: ask.roots()
        },
        ({ user_name, greeting, client_roots }) => ({
          content: [
            text(
              `${sampledText(greeting)} ${accepted(user_name)?.name ?? 'stranger'}; ` +
                `${client_roots.roots?.length ?? 0} root(s)`
            )
          ]
        }),
        { step: 'all' }
      );
    }
  },
  {
    name: 'test_input_required_result_multi_round',
    revisions: ['2026'],
    description: 'Asks for a name, then for a favourite colour, then answers',
    inputSchema: noArguments,
    requires: ['elicitation'],
    run: async (_arguments, call) => {
      const { params } = call;
      const state = 'requestState' in params ? openState(params.name, params.requestState) : null;
      const responses = inputResponsesOf(params);
      if (state?.round === 2) {
        return gather(
          call,
          { step2: ask.elicit('What is your favourite colour?', { color: { type: 'string' } }) },
          ({ step2 }) => ({
            content: [text(`${state.name} likes ${accepted(step2)?.color ?? 'no colour'}`)]
          }),
          state
        );
      }
      const step1 = ask.elicit('What is your name?', { name: { type: 'string' } });
      if (responses.step1 === undefined) return gather(call, { step1 }, () => null, { round: 1 });
      const name = accepted(responses.step1)?.name ?? 'someone';
      return {
        resultType: 'input_required',
        inputRequests: {
          step2: ask.elicit('What is your favourite colour?', { color: { type: 'string' } })
        },
        requestState: sealState(params.name, { round: 2, name })
      };
    }
  },
  {
    name: 'test_input_required_result_tampered_state',
    revisions: ['2026'],
    description: 'Keeps signed requestState and refuses one that was changed',
    inputSchema: noArguments,
    requires: ['elicitation'],
    run: async (_arguments, call) => {
      const { params } = call;
      if ('requestState' in params) openState(params.name, params.requestState);
      else if (inputResponsesOf(params).confirm !== undefined)
        throw invalidParams('a retry of this tool must echo its requestState');
      return gather(
        call,
        { confirm: ask.elicit('Please confirm', { ok: { type: 'boolean' } }) },
        () => ({ content: [text('The state was intact.')] }),
        { step: 'confirm' }
      );
    }
  },
  {
    name: 'test_input_required_result_capabilities',
    revisions: ['2026'],
    description: 'Asks only through what the request declares it can answer',
    inputSchema: noArguments,
    run: async (_arguments, call) => {
      const possible = {
        user_name: ask.elicit('What is your name?', { name: { type: 'string' } }),
        sample_request: ask.sample('Say hello', 20),
        roots_request: ask.roots()
      };
      const wanted = Object.fromEntries(
        Object.entries(possible).filter(([, request]) =>
          call.declares(CAPABILITY_OF[request.method])
        )
      );
      if (Object.keys(wanted).length === 0)
        throw rpcError(Code.MissingCapability, 'this tool needs elicitation, sampling or roots', {
          requiredCapabilities: { sampling: {} }
        });
      return gather(call, wanted, (answers) => ({
        content: [text(`Answered: ${Object.keys(answers).sort().join(', ')}`)]
      }));
    }
  }
];

function describe(result) {
  return `action=${result.action}, content=${JSON.stringify(result.content ?? {})}`;
}

// ---- tasks (the io.modelcontextprotocol/tasks extension, SEP-2663; 2026-07-28 only) ----
//
// A tool that supports tasks runs as one when the request declares the extension in its
// clientCapabilities: the call answers at once with a CreateTaskResult, and the caller
// polls tasks/get (the result or error inlined once terminal), answers a parked task's
// inputRequests with tasks/update, and stops it with tasks/cancel. Without the extension a
// task-optional tool runs as a plain call and a task-required one is -32021. Tasks live in
// this process for their ttlMs, whoever asks (the switchboard keeps callers apart).

const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const TASK_TTL_MS = 300_000;
const TASK_POLL_MS = 200;
const taskTable = new Map();

const needsTasks = () =>
  rpcError(Code.MissingCapability, `this request needs the ${TASKS_EXTENSION} extension`, {
    requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } }
  });

const mintKey = (purpose) => `${purpose}-${randomBytes(4).toString('hex')}`;

// Starts `work(task)` as a task and returns its CreateTaskResult. `work` returns the
// tool's result, throws a JSON-RPC error (the task fails), or ends when task.signal aborts
// (cancelled); task.ask(requests) parks it until tasks/update has answered every key.
function startTask(work) {
  const now = new Date().toISOString();
  const abort = new AbortController();
  const task = {
    taskId: randomUUID(),
    status: 'working',
    createdAt: now,
    lastUpdatedAt: now,
    signal: abort.signal,
    abort: () => abort.abort(),
    pending: null // { requests, answers, resolve } while parked
  };
  const set = (fields) => {
    Object.assign(task, fields, { lastUpdatedAt: new Date().toISOString() });
  };
  task.ask = (requests) =>
    new Promise((resolve, reject) => {
      task.pending = { requests: { ...requests }, answers: {}, resolve };
      set({ status: 'input_required' });
      abort.signal.addEventListener('abort', () => reject(abort.signal.reason), { once: true });
    });
  task.answer = (responses) => {
    const pending = task.pending;
    if (!pending) return;
    for (const [key, value] of Object.entries(responses)) {
      if (!(key in pending.requests)) continue; // not asked (any more): ignored
      pending.answers[key] = value;
      delete pending.requests[key];
    }
    if (Object.keys(pending.requests).length === 0) {
      task.pending = null;
      set({ status: 'working' });
      pending.resolve(pending.answers);
    }
  };
  taskTable.set(task.taskId, task);
  setTimeout(() => taskTable.delete(task.taskId), TASK_TTL_MS).unref();
  Promise.resolve()
    .then(() => work(task))
    .then(
      (result) => {
        if (!abort.signal.aborted) set({ status: 'completed', result });
      },
      (error) => {
        if (abort.signal.aborted) return;
        const code = Number.isInteger(error?.code) ? error.code : Code.Internal;
        set({ status: 'failed', error: { code, message: error?.message ?? String(error) } });
      }
    );
  return { resultType: 'task', ...taskView(task, false) };
}

// What tasks/get shows (and, without the inlined parts, CreateTaskResult).
function taskView(task, detailed = true) {
  const view = {
    taskId: task.taskId,
    status: task.status,
    createdAt: task.createdAt,
    lastUpdatedAt: task.lastUpdatedAt,
    ttlMs: TASK_TTL_MS,
    pollIntervalMs: TASK_POLL_MS
  };
  if (!detailed) return view;
  if (task.status === 'completed') view.result = task.result;
  if (task.status === 'failed') view.error = task.error;
  if (task.status === 'input_required' && task.pending)
    view.inputRequests = { ...task.pending.requests };
  return view;
}

// A pause a cancel ends early.
const pause = (ms, signal) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(new Error('cancelled'));
      },
      { once: true }
    );
  });

// A tool with task support: run(arguments, call, task) runs as a task when the request
// declares the extension (task set), else as a plain call (task null) if support is
// optional; -32021 if it is required.
function taskTool({ support, run, ...tool }) {
  return {
    ...tool,
    revisions: ['2026'],
    run: async (toolArguments, call) => {
      if (!call.declaresExtension(TASKS_EXTENSION)) {
        if (support === 'required') throw needsTasks();
        return run(toolArguments, call, null);
      }
      return startTask((task) => run(toolArguments, call, task));
    }
  };
}

const taskTools = [
  {
    name: 'greet',
    revisions: ['2026'],
    description: 'Greets at once (never a task)',
    inputSchema: { type: 'object', properties: { name: { type: 'string' } } },
    run: async ({ name }) => ({ content: [text(`Hello, ${name ?? 'World'}!`)] })
  },
  taskTool({
    name: 'slow_compute',
    support: 'optional',
    description: 'Works for `seconds` seconds (a task when the caller supports tasks)',
    inputSchema: {
      type: 'object',
      properties: { seconds: { type: 'number' }, label: { type: 'string' } }
    },
    run: async ({ seconds = 1, label = '' }, _call, task) => {
      await pause(Math.max(0, Number(seconds) || 0) * 1000, task?.signal);
      return { content: [text(`Computed ${label || 'something'} in ${seconds} s`)] };
    }
  }),
  taskTool({
    name: 'failing_job',
    support: 'required',
    description: 'A task that ends, after a second, with a tool error',
    inputSchema: noArguments,
    run: async (_arguments, _call, task) => {
      await pause(1000, task.signal);
      return { isError: true, content: [text('failing_job failed, as it always does')] };
    }
  }),
  taskTool({
    name: 'protocol_error_job',
    support: 'optional',
    description: 'A task that fails with a JSON-RPC error',
    inputSchema: noArguments,
    run: async (_arguments, _call, task) => {
      await pause(100, task?.signal);
      throw rpcError(Code.Internal, 'protocol_error_job broke, as it always does');
    }
  }),
  taskTool({
    name: 'confirm_delete',
    support: 'optional',
    description: 'Asks the user to confirm deleting `filename`',
    inputSchema: { type: 'object', properties: { filename: { type: 'string' } } },
    requires: ['elicitation'],
    run: async ({ filename = 'a file' }, call, task) => {
      const question = ask.elicit(`Delete ${filename}?`, { confirm: { type: 'boolean' } });
      const verdict = (answer) =>
        accepted(answer)?.confirm === true ? `Deleted ${filename}` : `Kept ${filename}`;
      if (!task)
        return gather(call, { confirm: question }, ({ confirm }) => ({
          content: [text(verdict(confirm))]
        }));
      const answers = await task.ask({ [mintKey('confirm')]: question });
      return { content: [text(verdict(Object.values(answers)[0]))] };
    }
  }),
  taskTool({
    name: 'multi_input',
    support: 'optional',
    description: 'Asks two questions at once',
    inputSchema: noArguments,
    requires: ['elicitation'],
    run: async (_arguments, call, task) => {
      const questions = {
        name: ask.elicit('What is your name?', { name: { type: 'string' } }),
        confirm: ask.elicit('Shall we go on?', { confirm: { type: 'boolean' } })
      };
      const summary = (answers) => ({
        content: [text(`Answered ${Object.keys(answers).length} question(s)`)]
      });
      if (!task) return gather(call, questions, summary);
      return summary(
        await task.ask({
          [mintKey('name')]: questions.name,
          [mintKey('confirm')]: questions.confirm
        })
      );
    }
  }),
  {
    // Gathers a name the 2026-07-28 way, then works on it as a task.
    name: 'test_tool_with_task',
    revisions: ['2026'],
    description: 'Asks for a name, then greets as a task',
    inputSchema: noArguments,
    requires: ['elicitation'],
    run: async (_arguments, call) => {
      if (!call.declaresExtension(TASKS_EXTENSION)) throw needsTasks();
      return gather(
        call,
        { user_name: ask.elicit('What is your name?', { name: { type: 'string' } }) },
        ({ user_name }) =>
          startTask(async (task) => {
            await pause(200, task.signal);
            return { content: [text(`Hello, ${accepted(user_name)?.name ?? 'stranger'}!`)] };
          })
      );
    }
  }
];
tools.push(...taskTools);

// tasks/get, tasks/update and tasks/cancel: only for a request that declares the
// extension; a task this process does not have is -32602.
function taskOf(call, params) {
  if (!call.declaresExtension(TASKS_EXTENSION)) throw needsTasks();
  const task = typeof params.taskId === 'string' ? taskTable.get(params.taskId) : undefined;
  if (!task) throw invalidParams('Task not found', { taskId: params.taskId });
  return task;
}

const TASK_METHODS = {
  'tasks/get': async (call, params) => taskView(taskOf(call, params)),
  'tasks/update': async (call, params) => {
    const task = taskOf(call, params);
    task.answer(inputResponsesOf(params));
    return {};
  },
  'tasks/cancel': async (call, params) => {
    const task = taskOf(call, params);
    if (['working', 'input_required'].includes(task.status)) {
      task.abort();
      task.pending = null;
      Object.assign(task, { status: 'cancelled', lastUpdatedAt: new Date().toISOString() });
    }
    return {};
  }
};

const toolByName = new Map(tools.map((tool) => [tool.name, tool]));
const servedAt = (item, call) => (item.revisions ?? BOTH).includes(call.is2026 ? '2026' : '2025');

// ---- resources: two static ones, one that changes while watched, and a template ----

const WATCHED = 'test://watched-resource';
let watchedRevision = 1;

// Each has what resources/list shows, read(uri), its contents entry, and how long a
// 2026-07-28 caller may keep it.
const resources = [
  {
    uri: 'test://static-text',
    name: 'static-text',
    title: 'Static Text Resource',
    description: 'A fixed text',
    mimeType: 'text/plain',
    cache: { ttlMs: 60_000, cacheScope: 'public' },
    read: (uri) => ({
      uri,
      mimeType: 'text/plain',
      text: 'This is the content of the static text resource.'
    })
  },
  {
    uri: 'test://static-binary',
    name: 'static-binary',
    title: 'Static Binary Resource',
    description: 'A 1x1 red PNG',
    mimeType: 'image/png',
    cache: { ttlMs: 60_000, cacheScope: 'public' },
    read: (uri) => ({ uri, mimeType: 'image/png', blob: PNG })
  },
  {
    uri: WATCHED,
    name: 'watched-resource',
    title: 'Watched Resource',
    description: 'A text that changes every second while someone is subscribed to it',
    mimeType: 'text/plain',
    cache: { ttlMs: 0, cacheScope: 'public' },
    read: (uri) => ({
      uri,
      mimeType: 'text/plain',
      text: `Watched resource, revision ${watchedRevision}`
    })
  }
];

// A template's match(uri) gives its variables, or nothing; complete lists the candidates
// completion/complete offers for each variable.
const templates = [
  {
    uriTemplate: 'test://template/{id}/data',
    name: 'template',
    title: 'Resource Template',
    description: 'JSON data for any id',
    mimeType: 'application/json',
    cache: { ttlMs: 60_000, cacheScope: 'public' },
    match: (uri) => /^test:\/\/template\/([^/]+)\/data$/.exec(uri)?.slice(1),
    read: (uri, [id]) => ({
      uri,
      mimeType: 'application/json',
      text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` })
    }),
    complete: { id: ['123', '456', '789'] }
  }
];

// The contents and cache hints of uri, a static resource or one a template makes;
// -32602 with the URI otherwise (never an empty contents).
function readResource(uri) {
  const resource = resources.find((candidate) => candidate.uri === uri);
  if (resource) return { contents: [resource.read(uri)], cache: resource.cache };
  for (const template of templates) {
    const variables = template.match(uri);
    if (variables) return { contents: [template.read(uri, variables)], cache: template.cache };
  }
  throw invalidParams('Resource not found', { uri });
}

// ---- watching: the watched resource changes every second while anyone watches it ----

// Each watcher is a function of the URI that changed: a 2025 session's subscription, or a
// 2026 subscriptions/listen stream that named the resource.
const watchers = new Set();
let ticker = null;

function watch(watcher, on) {
  if (on) watchers.add(watcher);
  else watchers.delete(watcher);
  if (watchers.size > 0 && !ticker) {
    ticker = setInterval(() => {
      watchedRevision += 1;
      for (const notify of watchers) notify(WATCHED);
    }, 1000);
  } else if (watchers.size === 0 && ticker) {
    clearInterval(ticker);
    ticker = null;
  }
}

// ---- subscriptions/listen streams (2026-07-28): each with what it asked for ----

const listens = new Set();
// The stateful sessions' servers, which announce list changes as the older revisions do
// (on the session's GET stream; a switchboard in front relays them to its listeners).
const statefulServers = new Set();

function announce(filterKey, method) {
  for (const listen of listens) if (listen.filter[filterKey]) listen.send(method);
  for (const server of statefulServers) server.notification({ method }).catch(() => {});
}

// ---- prompts, with the names, arguments and messages the suite's scenarios expect ----

const user = (content) => ({ role: 'user', content });

// Each has what prompts/list shows, get(arguments, call), its messages (or an
// InputRequiredResult), and complete, the candidates completion/complete offers for each
// argument.
const prompts = [
  {
    name: 'test_simple_prompt',
    title: 'Simple Test Prompt',
    description: 'A prompt without arguments',
    get: () => [user(text('This is a simple prompt for testing.'))]
  },
  {
    name: 'test_prompt_with_arguments',
    title: 'Prompt With Arguments',
    description: 'A prompt that quotes its two arguments',
    arguments: [
      { name: 'arg1', description: 'First test argument', required: true },
      { name: 'arg2', description: 'Second test argument', required: true }
    ],
    get: ({ arg1, arg2 }) => [user(text(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`))],
    complete: { arg1: ['testValue1', 'hello'], arg2: ['testValue2', 'world'] }
  },
  {
    name: 'test_prompt_with_embedded_resource',
    title: 'Prompt With Embedded Resource',
    description: 'A prompt that embeds a text resource at the URI it is given',
    arguments: [
      { name: 'resourceUri', description: 'URI of the resource to embed', required: true }
    ],
    get: ({ resourceUri }) => [
      user({
        type: 'resource',
        resource: {
          uri: resourceUri,
          mimeType: 'text/plain',
          text: 'Embedded resource content for testing.'
        }
      }),
      user(text('Please process the embedded resource above.'))
    ],
    complete: { resourceUri: resources.map((resource) => resource.uri) }
  },
  {
    name: 'test_prompt_with_image',
    title: 'Prompt With Image',
    description: 'A prompt that shows a 1x1 red PNG',
    get: () => [
      user({ type: 'image', data: PNG, mimeType: 'image/png' }),
      user(text('Please analyze the image above.'))
    ]
  },
  {
    name: 'test_input_required_result_prompt',
    revisions: ['2026'],
    title: 'Prompt That Asks First',
    description: 'Asks the user for the context the prompt should use',
    requires: ['elicitation'],
    get: (_arguments, call) =>
      gather(
        call,
        {
          user_context: ask.elicit('What context should the prompt use?', {
            context: { type: 'string' }
          })
        },
        ({ user_context }) => [
          user(text(`Use this context: ${accepted(user_context)?.context ?? '(none given)'}`))
        ]
      )
  }
];

const promptByName = new Map(prompts.map((prompt) => [prompt.name, prompt]));

// ---- one request, as every transport hands it to `handle` ----

// The revision's facts about a request, from its own params._meta.
function newCall(request, hooks) {
  const params =
    request.params && typeof request.params === 'object' && !Array.isArray(request.params)
      ? request.params
      : {};
  const meta = params._meta && typeof params._meta === 'object' ? params._meta : {};
  const is2026 = meta[META_VERSION] === REV_2026;
  const capabilities = meta[META_CAPABILITIES] ?? {};
  const call = {
    id: request.id,
    method: request.method,
    params,
    is2026,
    signal: hooks.signal,
    // A 2026 request declares what it can answer per request; a 2025 caller declared it
    // in initialize, which the SDK checks when a request is sent.
    declares: (capability) =>
      !is2026 || (capabilities && typeof capabilities === 'object' && capability in capabilities),
    declaresExtension: (id) => is2026 && Boolean(capabilities?.extensions?.[id]),
    notify: hooks.notify,
    request: hooks.request,
    closeStream: hooks.closeStream,
    // notifications/message at `level`, if the caller asked for that level: per request
    // at 2026-07-28 (_meta logLevel; none means none), per session before it.
    log: async (level, data) => {
      const threshold = is2026 ? meta[META_LOG_LEVEL] : hooks.sessionLogLevel?.();
      if (is2026 && threshold === undefined) return;
      if (threshold !== undefined && LEVELS.indexOf(level) < LEVELS.indexOf(threshold)) return;
      await hooks.notify({
        method: 'notifications/message',
        params: { level, logger: 'conformance-computer', data }
      });
    },
    session: hooks.session
  };
  return call;
}

// Methods 2026-07-28 removed: -32601 for a request of that revision.
const REMOVED_IN_2026 = new Set([
  'initialize',
  'ping',
  'logging/setLevel',
  'resources/subscribe',
  'resources/unsubscribe',
  'tasks/result', // the tasks extension inlines the result in tasks/get
  'tasks/list'
]);

// A 2026 request for something needing a capability it did not declare: -32021.
function requireCapabilities(call, needed = []) {
  const missing = needed.filter((capability) => !call.declares(capability));
  if (missing.length === 0) return;
  throw rpcError(
    Code.MissingCapability,
    `this request needs the client capabilities it did not declare: ${missing.join(', ')}`,
    { requiredCapabilities: Object.fromEntries(missing.map((name) => [name, {}])) }
  );
}

const CACHE_LIST = { ttlMs: 60_000, cacheScope: 'public' };

function discoverResult() {
  return {
    supportedVersions: SUPPORTED_VERSIONS,
    capabilities: {
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      completions: {},
      logging: {},
      extensions: { [TASKS_EXTENSION]: {} }
    },
    instructions: 'The conformance fixtures of the MCP conformance suite.',
    _meta: { [META_SERVER_INFO]: SERVER_INFO },
    ttlMs: 0,
    cacheScope: 'public'
  };
}

// The answer to one request: its result, or a thrown error with a JSON-RPC code.
async function handle(call) {
  const { method, params, is2026 } = call;
  if (is2026 && REMOVED_IN_2026.has(method))
    throw rpcError(Code.MethodNotFound, `method ${method} is not in revision ${REV_2026}`);
  const handler = METHODS[method];
  if (!handler || (handler.only2026 && !is2026))
    throw rpcError(Code.MethodNotFound, `Method not found: ${method}`);
  const result = await handler(call, params);
  if (!is2026) return result;
  // What 2026-07-28 adds to every result, and to lists and reads their cache hints.
  const out = { ...result };
  out.resultType ??= 'complete';
  if (handler.cache) Object.assign(out, { ...handler.cache, ...out });
  return out;
}

const METHODS = {
  ping: async () => ({}),
  'logging/setLevel': async (call, params) => {
    if (!LEVELS.includes(params.level)) throw invalidParams(`unknown level ${params.level}`);
    call.session?.setLogLevel(params.level);
    return {};
  },
  'server/discover': Object.assign(async () => discoverResult(), { only2026: true }),
  'tools/list': Object.assign(
    async (call) => ({
      tools: tools
        .filter((tool) => servedAt(tool, call))
        .map(({ name, description, inputSchema }) => ({ name, description, inputSchema }))
    }),
    { cache: CACHE_LIST }
  ),
  'tools/call': async (call, params) => {
    const tool = toolByName.get(params.name);
    if (!tool || !servedAt(tool, call))
      throw invalidParams(`Unknown tool: ${params.name}`, { name: params.name });
    if (
      params.arguments !== undefined &&
      (typeof params.arguments !== 'object' ||
        params.arguments === null ||
        Array.isArray(params.arguments))
    )
      throw invalidParams('arguments must be an object');
    requireCapabilities(call, tool.requires);
    try {
      return await tool.run(params.arguments ?? {}, call);
    } catch (error) {
      // Our own JSON-RPC errors (a refused state, an undeclared capability) are the answer;
      // any other failure inside a tool (say, the caller could not be asked) is the tool's
      // result.
      if (error.answer) throw error;
      return { isError: true, content: [text(`${tool.name} failed: ${error.message ?? error}`)] };
    }
  },
  'resources/list': Object.assign(
    async () => ({
      resources: resources.map(({ read, cache, ...listed }) => listed)
    }),
    { cache: CACHE_LIST }
  ),
  'resources/templates/list': Object.assign(
    async () => ({
      resourceTemplates: templates.map(({ match, read, complete, cache, ...listed }) => listed)
    }),
    { cache: CACHE_LIST }
  ),
  'resources/read': async (call, params) => {
    if (typeof params.uri !== 'string') throw invalidParams('resources/read needs params.uri');
    const { contents, cache } = readResource(params.uri);
    return call.is2026 ? { contents, ...cache } : { contents };
  },
  'resources/subscribe': async (call, params) => {
    readResource(params.uri); // only what exists may be watched
    call.session?.subscribe(params.uri, true);
    return {};
  },
  'resources/unsubscribe': async (call, params) => {
    call.session?.subscribe(params.uri, false);
    return {};
  },
  'prompts/list': Object.assign(
    async (call) => ({
      prompts: prompts
        .filter((prompt) => servedAt(prompt, call))
        .map(({ get, complete, requires, revisions, ...listed }) => listed)
    }),
    { cache: CACHE_LIST }
  ),
  'prompts/get': async (call, params) => {
    const prompt = promptByName.get(params.name);
    if (!prompt || !servedAt(prompt, call))
      throw invalidParams('Prompt not found', { name: params.name });
    const given = params.arguments ?? {};
    for (const argument of prompt.arguments ?? []) {
      if (argument.required && given[argument.name] === undefined)
        throw invalidParams(`Missing required argument: ${argument.name}`);
    }
    requireCapabilities(call, prompt.requires);
    const got = prompt.get(given, call);
    return Array.isArray(got) ? { description: prompt.description, messages: got } : got;
  },
  // The candidates of a prompt's argument or a template's variable that start with what
  // the caller typed so far.
  'completion/complete': async (_call, params) => {
    const { ref, argument } = params;
    const owner =
      ref?.type === 'ref/prompt'
        ? promptByName.get(ref.name)
        : (templates.find((template) => template.uriTemplate === ref?.uri) ??
          resources.find((resource) => resource.uri === ref?.uri));
    if (!owner) {
      if (ref?.type === 'ref/prompt') throw invalidParams('Prompt not found', { name: ref.name });
      throw invalidParams('Resource not found', { uri: ref?.uri });
    }
    const typed = String(argument?.value ?? '');
    const values = (owner.complete?.[argument?.name] ?? []).filter((value) =>
      value.startsWith(typed)
    );
    return { completion: { values, total: values.length, hasMore: false } };
  },
  // A long-lived request: acknowledged at once, then it carries the notifications it
  // asked for, each tagged with its id, until the caller goes away.
  ...Object.fromEntries(
    Object.entries(TASK_METHODS).map(([method, run]) => [
      method,
      Object.assign(run, { only2026: true })
    ])
  ),
  'subscriptions/listen': Object.assign(
    async (call, params) => {
      const asked = params.notifications;
      if (!asked || typeof asked !== 'object')
        throw invalidParams('subscriptions/listen needs params.notifications');
      const filter = {};
      for (const key of ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'])
        if (asked[key] === true) filter[key] = true;
      const uris = Array.isArray(asked.resourceSubscriptions)
        ? asked.resourceSubscriptions.filter((uri) => {
            try {
              readResource(uri);
              return true;
            } catch {
              return false;
            }
          })
        : [];
      if (uris.length) filter.resourceSubscriptions = uris;
      const tag = { [META_SUBSCRIPTION]: call.id };
      const send = (method, extra = {}) =>
        call.notify({ method, params: { ...extra, _meta: tag } }).catch(() => {});
      await call.notify({
        method: 'notifications/subscriptions/acknowledged',
        params: { notifications: filter, _meta: tag }
      });
      const listen = { filter, send };
      const watcher = (uri) => send('notifications/resources/updated', { uri });
      listens.add(listen);
      if (uris.includes(WATCHED)) watch(watcher, true);
      await new Promise((resolve) => {
        if (call.signal.aborted) resolve();
        else call.signal.addEventListener('abort', resolve, { once: true });
      });
      listens.delete(listen);
      watch(watcher, false);
      return { _meta: tag };
    },
    { only2026: true }
  )
};

// ---- the SDK's Server, one per connection (a socket, stdin, or an HTTP session) ----

function newServer() {
  const server = new Server(SERVER_INFO, {
    capabilities: {
      tools: { listChanged: true },
      logging: {},
      resources: { subscribe: true, listChanged: false },
      prompts: { listChanged: true },
      completions: {},
      // What server/discover offers 2026-07-28 callers, announced here too, so that a
      // switchboard in front knows it.
      extensions: { [TASKS_EXTENSION]: {} }
    }
  });
  // Everything but initialize reaches `handle`, as sent: ping and logging/setLevel too,
  // which are -32601 for a 2026-07-28 request.
  server.removeRequestHandler('ping');
  server.removeRequestHandler('logging/setLevel');
  // A tools/call may carry the 2025-11-25 `task` hint, which the tasks extension says to
  // ignore (the tool decides); the SDK would refuse it, since this server does not offer
  // the 2025-11-25 tasks capability.
  server.assertTaskHandlerCapability = () => {};
  const sdkInitialize = server._oninitialize.bind(server);
  server.setRequestHandler(InitializeRequestSchema, async (request) => {
    if (request.params?._meta?.[META_VERSION] === REV_2026)
      throw rpcError(Code.MethodNotFound, `method initialize is not in revision ${REV_2026}`);
    return sdkInitialize(request);
  });
  let logLevel;
  const subscribed = new Set();
  const watcher = (uri) => {
    // Nowhere to send it (an HTTP session with no GET stream) is no error of ours.
    if (subscribed.has(uri)) server.sendResourceUpdated({ uri }).catch(() => {});
  };
  const session = {
    setLogLevel: (level) => {
      logLevel = level;
    },
    subscribe: (uri, on) => {
      if (on) subscribed.add(uri);
      else subscribed.delete(uri);
      watch(watcher, subscribed.size > 0);
    }
  };
  server.fallbackRequestHandler = (request, extra) =>
    handle(
      newCall(request, {
        signal: extra.signal,
        notify: (notification) => extra.sendNotification(notification),
        request: (message, schema) => extra.sendRequest(message, schema),
        closeStream: extra.closeSSEStream,
        sessionLogLevel: () => logLevel,
        session
      })
    );
  server.onerror = (error) => console.error(`computer: ${error.message ?? error}`);
  statefulServers.add(server);
  server.onclose = () => {
    statefulServers.delete(server);
    subscribed.clear();
    watch(watcher, false);
  };
  return server;
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
    newServer()
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

// ---- start: one transport, as the arguments say ----

if (args.stdio) {
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  await newServer().connect(new StdioServerTransport());
} else if (args['http-port-file']) {
  await serveHttp(args['http-port-file']);
} else {
  dial();
}
