// A dial-out computer for the conformance run: it dials the switchboard's /vm/attach
// WebSocket and serves, with the official SDK's Server, every tool, resource, prompt and
// completion the suite's server scenarios call (the suite's "everything server" fixtures).
// Exits when the socket closes.
// With --stdio it is instead a plain stdio MCP server (the SDK's stdio transport), and
// with --http-port-file a Streamable HTTP one on a loopback port it writes to that file
// (the SDK's transport, one session at a time): both for switchboard-connect to attach.
//
//   node computer.mjs --url ws://127.0.0.1:PORT/vm/attach --secret-file FILE
//   node computer.mjs --stdio
//   node computer.mjs --http-port-file FILE
//
// The SDK's low-level Server (not McpServer) because the tool schemas here are plain JSON
// Schema, sent exactly as written: json_schema_2020_12_tool must keep $schema, $defs and
// additionalProperties, which McpServer's zod conversion would not.
import { readFileSync, writeFileSync } from 'node:fs';
import { crc32, deflateSync } from 'node:zlib';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema
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

// ---- the tools, with the names, arguments and texts the suite's scenarios expect ----

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value) => ({ type: 'text', text: value });
const noArguments = { type: 'object', properties: {} };

const server = new Server(
  { name: 'switchboard-conformance-computer', version: '1.0.0' },
  {
    capabilities: {
      tools: { listChanged: false },
      logging: {},
      resources: { subscribe: true, listChanged: false },
      prompts: { listChanged: false },
      completions: {}
    }
  }
);

const tools = [
  {
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
    run: async (_arguments, _request, extra) => {
      // Honours the level a logging/setLevel set, as sendLoggingMessage would; and sent as
      // related to the call, as the specification recommends, so that over Streamable
      // HTTP they travel on the call's own stream, before its result (on one socket it is
      // all the same).
      const log = async (data) => {
        if (server.isMessageIgnored('info', extra.sessionId)) return;
        await extra.sendNotification({
          method: 'notifications/message',
          params: { level: 'info', logger: 'conformance-computer', data }
        });
      };
      await log('Tool execution started');
      await sleep(50);
      await log('Tool processing data');
      await sleep(50);
      await log('Tool execution completed');
      return { content: [text('Tool with logging executed successfully')] };
    }
  },
  {
    name: 'test_tool_with_progress',
    description: 'Reports progress 0, 50 and 100 of 100 when given a progress token',
    inputSchema: noArguments,
    run: async (_arguments, request, extra) => {
      const token = request.params._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (progress) await sleep(50);
        if (token === undefined) continue;
        await extra.sendNotification({
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
    // The suite's SSE polling scenario calls it. A computer cannot close the caller's
    // stream (the switchboard has no resumable streams), so it simply answers.
    name: 'test_reconnection',
    description: 'Answers after a short pause',
    inputSchema: noArguments,
    run: async () => {
      await sleep(100);
      return { content: [text('Reconnection test completed successfully.')] };
    }
  },
  {
    name: 'test_sampling',
    description: 'Asks the caller for an LLM completion',
    inputSchema: {
      type: 'object',
      properties: { prompt: { type: 'string', description: 'The prompt to send to the LLM' } },
      required: ['prompt']
    },
    run: async ({ prompt }) => {
      const result = await server.createMessage({
        messages: [{ role: 'user', content: { type: 'text', text: String(prompt) } }],
        maxTokens: 100
      });
      const reply = result.content?.type === 'text' ? result.content.text : JSON.stringify(result);
      return { content: [text(`LLM response: ${reply}`)] };
    }
  },
  {
    name: 'test_elicitation',
    description: 'Asks the caller for a user name and email',
    inputSchema: {
      type: 'object',
      properties: { message: { type: 'string', description: 'The message to show the user' } },
      required: ['message']
    },
    run: async ({ message }) => {
      const result = await server.elicitInput({
        message: String(message),
        requestedSchema: {
          type: 'object',
          properties: {
            username: { type: 'string', description: "User's response" },
            email: { type: 'string', description: "User's email address" }
          },
          required: ['username', 'email']
        }
      });
      return { content: [text(`User response: ${describe(result)}`)] };
    }
  },
  {
    name: 'test_elicitation_sep1034_defaults',
    description: 'Elicitation whose schema has a default for every primitive type',
    inputSchema: noArguments,
    run: async () => {
      const result = await server.elicitInput({
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
      });
      return { content: [text(`Elicitation completed: ${describe(result)}`)] };
    }
  },
  {
    name: 'test_elicitation_sep1330_enums',
    description: 'Elicitation with all five enum schema variants',
    inputSchema: noArguments,
    run: async () => {
      const result = await server.elicitInput({
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
      });
      return { content: [text(`Elicitation completed: ${describe(result)}`)] };
    }
  },
  {
    name: 'json_schema_2020_12_tool',
    description: 'Tool with JSON Schema 2020-12 features',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: {
        address: {
          type: 'object',
          properties: { street: { type: 'string' }, city: { type: 'string' } }
        }
      },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false
    },
    run: async (toolArguments) => ({ content: [text(JSON.stringify(toolArguments))] })
  }
];

function describe(result) {
  return `action=${result.action}, content=${JSON.stringify(result.content ?? {})}`;
}

const byName = new Map(tools.map((tool) => [tool.name, tool]));
server.onerror = (error) => console.error(`computer: ${error.message ?? error}`);

server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema }))
}));

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const tool = byName.get(request.params.name);
  if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
  try {
    return await tool.run(request.params.arguments ?? {}, request, extra);
  } catch (error) {
    // A failure inside a tool (say, the caller could not be asked) is the tool's result.
    return { isError: true, content: [text(`${tool.name} failed: ${error.message ?? error}`)] };
  }
});

// ---- resources: two static ones, one that changes while watched, and a template ----

const WATCHED = 'test://watched-resource';
let watchedRevision = 1;

// Each has what resources/list shows and read(uri), its contents entry.
const resources = [
  {
    uri: 'test://static-text',
    name: 'static-text',
    title: 'Static Text Resource',
    description: 'A fixed text',
    mimeType: 'text/plain',
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
    read: (uri) => ({ uri, mimeType: 'image/png', blob: PNG })
  },
  {
    uri: WATCHED,
    name: 'watched-resource',
    title: 'Watched Resource',
    description: 'A text that changes every second while someone is subscribed to it',
    mimeType: 'text/plain',
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
    match: (uri) => /^test:\/\/template\/([^/]+)\/data$/.exec(uri)?.slice(1),
    read: (uri, [id]) => ({
      uri,
      mimeType: 'application/json',
      text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` })
    }),
    complete: { id: ['123', '456', '789'] }
  }
];

// A -32602 whose wire message is exactly `message` (McpError's would start "MCP error
// -32602: "), so that an unknown item reads as the switchboard's answer beyond a grant.
function invalidParams(message, data) {
  return Object.assign(new Error(message), { code: ErrorCode.InvalidParams, data });
}

// The contents entry of uri, a static resource or one a template makes; -32602 with the
// URI otherwise (never an empty contents).
function readResource(uri) {
  const resource = resources.find((candidate) => candidate.uri === uri);
  if (resource) return resource.read(uri);
  for (const template of templates) {
    const variables = template.match(uri);
    if (variables) return template.read(uri, variables);
  }
  throw invalidParams('Resource not found', { uri });
}

server.setRequestHandler(ListResourcesRequestSchema, async () => ({
  resources: resources.map(({ read, ...listed }) => listed)
}));

server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
  resourceTemplates: templates.map(({ match, read, complete, ...listed }) => listed)
}));

server.setRequestHandler(ReadResourceRequestSchema, async (request) => ({
  contents: [readResource(request.params.uri)]
}));

// While the one session (WebSocket, stdio or HTTP) is subscribed to the watched resource,
// it changes every second and each change is announced; only it ever changes, so other
// subscriptions are kept but never notified. A new HTTP session starts with none.
const subscriptions = new Set();
let ticker = null;

function watch() {
  if (subscriptions.has(WATCHED) && !ticker) {
    ticker = setInterval(() => {
      watchedRevision += 1;
      // Nowhere to send it (an HTTP session with no GET stream) is no error of ours.
      server.sendResourceUpdated({ uri: WATCHED }).catch(() => {});
    }, 1000);
  } else if (!subscriptions.has(WATCHED) && ticker) {
    clearInterval(ticker);
    ticker = null;
  }
}

server.setRequestHandler(SubscribeRequestSchema, async (request) => {
  readResource(request.params.uri); // only what exists may be watched
  subscriptions.add(request.params.uri);
  watch();
  return {};
});

server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
  subscriptions.delete(request.params.uri);
  watch();
  return {};
});

server.onclose = () => {
  subscriptions.clear();
  watch();
};

// ---- prompts, with the names, arguments and messages the suite's scenarios expect ----

const user = (content) => ({ role: 'user', content });

// Each has what prompts/list shows, get(arguments), its messages, and complete, the
// candidates completion/complete offers for each argument.
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
  }
];

const promptByName = new Map(prompts.map((prompt) => [prompt.name, prompt]));

server.setRequestHandler(ListPromptsRequestSchema, async () => ({
  prompts: prompts.map(({ get, complete, ...listed }) => listed)
}));

server.setRequestHandler(GetPromptRequestSchema, async (request) => {
  const { name } = request.params;
  const prompt = promptByName.get(name);
  if (!prompt) throw invalidParams('Prompt not found', { name });
  const given = request.params.arguments ?? {};
  for (const argument of prompt.arguments ?? []) {
    if (argument.required && given[argument.name] === undefined)
      throw invalidParams(`Missing required argument: ${argument.name}`);
  }
  return { description: prompt.description, messages: prompt.get(given) };
});

// ---- completion: the candidates of a prompt's argument or a template's variable that
// start with what the caller typed so far ----

server.setRequestHandler(CompleteRequestSchema, async (request) => {
  const { ref, argument } = request.params;
  const owner =
    ref.type === 'ref/prompt'
      ? promptByName.get(ref.name)
      : templates.find((template) => template.uriTemplate === ref.uri) ??
        resources.find((resource) => resource.uri === ref.uri);
  if (!owner) {
    if (ref.type === 'ref/prompt') throw invalidParams('Prompt not found', { name: ref.name });
    throw invalidParams('Resource not found', { uri: ref.uri });
  }
  const values = (owner.complete?.[argument.name] ?? []).filter((value) =>
    value.startsWith(argument.value)
  );
  return { completion: { values, total: values.length, hasMore: false } };
});

// ---- stdio: serve until stdin ends ----

if (args.stdio) {
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  await server.connect(new StdioServerTransport());
} else if (args['http-port-file']) {
  await serveHttp(args['http-port-file']);
} else {
  dial();
}

// ---- Streamable HTTP: one session at a time; a new initialize ends the last one ----

async function serveHttp(portFile) {
  const { StreamableHTTPServerTransport } = await import(
    '@modelcontextprotocol/sdk/server/streamableHttp.js'
  );
  const { createServer } = await import('node:http');
  const { randomUUID } = await import('node:crypto');
  let current = null;
  const listener = createServer(async (request, response) => {
    const session = request.headers['mcp-session-id'];
    if (!session && request.method === 'POST') {
      if (current) await server.close();
      current = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
      await server.connect(current);
    } else if (!current || session !== current.sessionId) {
      response.writeHead(404).end();
      return;
    }
    await current.handleRequest(request, response);
  });
  listener.listen(0, '127.0.0.1', () => {
    writeFileSync(portFile, String(listener.address().port));
    console.error(`computer: serving Streamable HTTP on port ${listener.address().port}`);
  });
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
    server.connect(transport).catch((error) => {
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
