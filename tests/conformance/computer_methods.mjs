// One request to the conformance computer (computer.mjs), as every transport hands it
// over: its revision's facts, its method, and the SDK's Server that serves a connection.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { InitializeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  Code,
  LEVELS,
  META_CAPABILITIES,
  META_LOG_LEVEL,
  META_SERVER_INFO,
  META_SUBSCRIPTION,
  META_VERSION,
  REV_2026,
  SERVER_INFO,
  SUPPORTED_VERSIONS,
  invalidParams,
  rpcError,
  text
} from './computer_wire.mjs';
import { tools } from './computer_tools.mjs';
import { TASKS_EXTENSION, TASK_METHODS, servedAt, toolByName } from './computer_tasks.mjs';
import {
  WATCHED,
  listens,
  promptByName,
  prompts,
  readResource,
  resources,
  statefulServers,
  templates,
  watch
} from './computer_content.mjs';

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

// With `modernOnly`, it speaks only 2026-07-28, as the official v2 SDK's server does with
// `legacy: "reject"`: an initialize (or any request) that does not name that revision is
// answered -32022 naming it as the one supported.
function newServer({ modernOnly = false } = {}) {
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
    if (modernOnly) throw unsupportedVersion(request.params?.protocolVersion);
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
  server.fallbackRequestHandler = (request, extra) => {
    if (modernOnly && request.params?._meta?.[META_VERSION] !== REV_2026)
      throw unsupportedVersion(request.params?._meta?.[META_VERSION]);
    return handle(
      newCall(request, {
        signal: extra.signal,
        notify: (notification) => extra.sendNotification(notification),
        request: (message, schema) => extra.sendRequest(message, schema),
        closeStream: extra.closeSSEStream,
        sessionLogLevel: () => logLevel,
        session
      })
    );
  };
  server.onerror = (error) => console.error(`computer: ${error.message ?? error}`);
  statefulServers.add(server);
  server.onclose = () => {
    statefulServers.delete(server);
    subscribed.clear();
    watch(watcher, false);
  };
  return server;
}

function unsupportedVersion(requested) {
  return rpcError(Code.UnsupportedVersion, `Unsupported protocol version: ${requested}`, {
    supported: [REV_2026],
    ...(requested === undefined ? {} : { requested })
  });
}

export { handle, newCall, newServer };
