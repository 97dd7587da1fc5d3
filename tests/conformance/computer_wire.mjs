// The conformance computer's wire (computer.mjs): the revisions it serves and their _meta
// keys, its JSON-RPC errors, the media it returns, the signed requestState of a
// 2026-07-28 tool that needs its caller, and what that caller may be asked.
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';

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


// Small helpers every part uses.
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value) => ({ type: 'text', text: value });
const noArguments = { type: 'object', properties: {} };
const BOTH = ['2025', '2026'];

export {
  BOTH,
  CAPABILITY_OF,
  Code,
  LEVELS,
  META_CAPABILITIES,
  META_LOG_LEVEL,
  META_SERVER_INFO,
  META_SUBSCRIPTION,
  META_VERSION,
  PNG,
  REV_2026,
  SERVER_INFO,
  SUPPORTED_VERSIONS,
  WAV,
  accepted,
  ask,
  gather,
  inputResponsesOf,
  invalidParams,
  noArguments,
  openState,
  rpcError,
  sampledText,
  sealState,
  sleep,
  text
};
