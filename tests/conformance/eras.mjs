// One caller of the era matrix (docs/protocol.md, "Eras"): an official SDK client talks
// to a computer through the switchboard and runs the same scenario whatever its revision,
// failing on the first thing that differs from what a server of its own era would answer.
//
//   node eras.mjs URL CLIENT COMPUTER
//
// URL is the switchboard's /mcp/<computer> behind proxy.mjs (which adds the token).
// CLIENT is one of
//   v1            @modelcontextprotocol/sdk 1.x (handshake era only)
//   v2-legacy     @modelcontextprotocol/client 2.x, versionNegotiation "legacy"
//   v2-auto       @modelcontextprotocol/client 2.x, versionNegotiation "auto"
//   v2-2026       @modelcontextprotocol/client 2.x, pinned to 2026-07-28
// and COMPUTER the computer behind the switchboard: `handshake` for server-everything (on
// the v1 SDK), `stateless` for modern_computer.mjs (2026-07-28 only), `both` for
// computer.mjs, the conformance run's computer (it serves the suite's fixtures in both
// eras, answering each request in its own).
import assert from "node:assert/strict";

const [url, kind, computer] = process.argv.slice(2);
const kinds = ["v1", "v2-legacy", "v2-auto", "v2-2026"];
const computers = ["handshake", "stateless", "both"];
if (!url || !kinds.includes(kind) || !computers.includes(computer)) {
  console.error(`usage: node eras.mjs URL ${kinds.join("|")} ${computers.join("|")}`);
  process.exit(2);
}

const info = { name: `switchboard-eras-${kind}`, version: "1.0.0" };
const capabilities = { elicitation: {}, sampling: {} };
// Members only the 2026-07-28 revision has: a caller of an older one never gets them.
const modernMembers = ["resultType", "ttlMs", "cacheScope"];

async function v1Client() {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import(
    "@modelcontextprotocol/sdk/client/streamableHttp.js"
  );
  const types = await import("@modelcontextprotocol/sdk/types.js");
  const client = new Client(info, { capabilities });
  const onRequest = (method, handler) => {
    const schema = {
      "elicitation/create": types.ElicitRequestSchema,
      "sampling/createMessage": types.CreateMessageRequestSchema,
    }[method];
    client.setRequestHandler(schema, handler);
  };
  const onNotification = (method, handler) => {
    const schema = {
      "notifications/message": types.LoggingMessageNotificationSchema,
      "notifications/tools/list_changed": types.ToolListChangedNotificationSchema,
      "notifications/resources/updated": types.ResourceUpdatedNotificationSchema,
    }[method];
    client.setNotificationHandler(schema, handler);
  };
  // v1 takes a result schema before the options.
  const callTool = (params, options) => client.callTool(params, undefined, options);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return { client, onRequest, onNotification, callTool, modern: false };
}

async function v2Client() {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const versionNegotiation = {
    "v2-legacy": { mode: "legacy" },
    "v2-auto": { mode: "auto" },
    "v2-2026": { mode: { pin: "2026-07-28" } },
  }[kind];
  const client = new Client(info, { capabilities, versionNegotiation });
  const onRequest = (method, handler) => client.setRequestHandler(method, handler);
  const onNotification = (method, handler) => client.setNotificationHandler(method, handler);
  const callTool = (params, options) => client.callTool(params, options);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const era = client.getProtocolEra();
  const expected = kind === "v2-legacy" ? "legacy" : "modern";
  assert.equal(era, expected, `the client negotiated the ${era} era`);
  return { client, onRequest, onNotification, callTool, modern: era === "modern" };
}

const { client, onRequest, onNotification, callTool, modern } =
  kind === "v1" ? await v1Client() : await v2Client();

// The first notification of `method` whose params satisfy `wanted`, within `seconds`.
function nextNotification(method, wanted, seconds) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no ${method} within ${seconds} s`)),
      seconds * 1000,
    );
    onNotification(method, (notification) => {
      if (!wanted(notification.params)) return;
      clearTimeout(timer);
      resolve(notification.params);
    });
  });
}

const textOf = (result) => result.content.map((block) => block.text).join("");

// What each computer offers for each step of the one scenario: server-everything's names
// (modern_computer.mjs gives its tools the same ones), or the conformance fixtures of
// computer.mjs, some of which exist in one era only.
const everything = {
  tools: ["echo", "get-sum", "trigger-long-running-operation"],
  simple: {
    call: { name: "echo", arguments: { message: kind } },
    answer: `Echo: ${kind}`,
  },
  progress: {
    call: { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 2 } },
    values: [1, 2],
  },
  long: { name: "trigger-long-running-operation", arguments: { duration: 20, steps: 20 } },
  document: "demo://resource/static/document/",
  template: "demo://resource/dynamic/text/{resourceId}",
  // A toggle turns the behaviour on with one call and off with the next.
  updates: { toggle: "toggle-subscriber-updates" },
  logging: { toggle: "toggle-simulated-logging" },
  // server-everything has no tool that changes its tool list; modern_computer.mjs has.
  listChange:
    computer === "stateless" ? { name: "trigger-tool-list-change", arguments: {} } : undefined,
  prompt: "simple-prompt",
  completion: {
    ref: { type: "ref/prompt", name: "completable-prompt" },
    argument: { name: "department", value: "S" },
    values: ["Sales", "Support"],
  },
  elicitation: {
    call: { name: "trigger-elicitation-request", arguments: {} },
    content: { name: kind, check: true, email: "a@example.com" },
  },
  sampling: {
    call: { name: "trigger-sampling-request", arguments: { prompt: "hello", maxTokens: 10 } },
  },
};
const fixtures = {
  tools: ["test_simple_text", "test_tool_with_progress", "test_tool_with_logging"],
  simple: {
    call: { name: "test_simple_text", arguments: {} },
    answer: "This is a simple text response for testing.",
  },
  progress: { call: { name: "test_tool_with_progress", arguments: {} }, values: [0, 50, 100] },
  long: { name: "test_tool_with_progress", arguments: {} },
  document: "test://static-text",
  template: "test://template/{id}/data",
  // It changes every second while anyone follows it.
  updates: { uri: "test://watched-resource" },
  logging: { call: { name: "test_tool_with_logging", arguments: {} } },
  // Offered to 2026-07-28 callers only.
  listChange: modern ? { name: "test_trigger_tool_change", arguments: {} } : undefined,
  prompt: "test_simple_prompt",
  completion: {
    ref: { type: "ref/prompt", name: "test_prompt_with_arguments" },
    argument: { name: "arg1", value: "test" },
    values: ["testValue1"],
  },
  // The older revisions' tools ask with a request, 2026-07-28's with an input-required
  // result.
  elicitation: modern
    ? { call: { name: "test_input_required_result_elicitation", arguments: {} },
        content: { name: kind } }
    : { call: { name: "test_elicitation", arguments: { message: "Who?" } },
        content: { username: kind, email: "a@example.com" } },
  sampling: {
    call: modern
      ? { name: "test_input_required_result_sampling", arguments: {} }
      : { name: "test_sampling", arguments: { prompt: "hello" } },
  },
};
const offers = computer === "both" ? fixtures : everything;

// server-everything's toggles are per session, and through switchboard-connect every
// caller shares one: turned on with a call, and again when an earlier caller left it on.
async function turnOn(name, params = {}) {
  for (let attempt = 0; attempt < 2; attempt++) {
    const result = await client.callTool({ name, arguments: {}, ...params });
    if (textOf(result).startsWith("Started")) return;
  }
  throw new Error(`${name} did not turn on`);
}

async function turnOff(name) {
  const result = await client.callTool({ name, arguments: {} });
  assert.match(textOf(result), /^Stopped/, `${name} did not turn off`);
}

// A handshake-era caller's result carries none of the 2026-07-28 members.
function inItsEra(result, what, modern) {
  if (modern) return result;
  for (const member of modernMembers) {
    assert.ok(!(member in result), `${what}: a ${kind} caller got ${member}`);
  }
  return result;
}

const steps = [];
async function step(name, run) {
  try {
    await run();
    steps.push(name);
  } catch (error) {
    console.error(`eras ${kind}: ${name} failed after ${steps.join(", ") || "nothing"}:`);
    console.error(error?.stack ?? error);
    process.exit(1);
  }
}

await step("tools/list", async () => {
  const { tools } = inItsEra(await client.listTools(), "tools/list", modern);
  const names = tools.map((tool) => tool.name);
  for (const name of offers.tools) {
    assert.ok(names.includes(name), `tools/list lacks ${name}: ${names.join(", ")}`);
  }
});

await step("tools/call", async () => {
  const result = await client.callTool(offers.simple.call);
  inItsEra(result, "tools/call", modern);
  assert.deepEqual(result.content, [{ type: "text", text: offers.simple.answer }]);
});

await step("tools/call with progress", async () => {
  const progress = [];
  const result = await callTool(offers.progress.call, {
    onprogress: (event) => progress.push(event.progress),
  });
  inItsEra(result, "tools/call", modern);
  assert.ok(!result.isError, JSON.stringify(result));
  assert.deepEqual(progress, offers.progress.values, "the progress notifications");
});

let documentUri;
await step("resources/list and read", async () => {
  const { resources } = inItsEra(await client.listResources(), "resources/list", modern);
  documentUri = resources.find((r) => r.uri.startsWith(offers.document))?.uri;
  assert.ok(documentUri, `resources/list: ${JSON.stringify(resources.map((r) => r.uri))}`);
  const { contents } = inItsEra(
    await client.readResource({ uri: documentUri }),
    "resources/read",
    modern,
  );
  assert.equal(contents[0].uri, documentUri);
  assert.ok(contents[0].text.length > 0);
});

// A handshake-era caller subscribes and gets the update on its session's stream; a
// 2026-07-28 caller listens and gets it on that request's stream (docs/protocol.md,
// "Subscriptions"), whichever era the computer follows resources in.
await step("subscribe and get an update", async () => {
  const uri = offers.updates.uri ?? documentUri;
  const update = nextNotification("notifications/resources/updated", (p) => p.uri === uri, 20);
  let listening;
  if (modern) {
    listening = await client.listen({ resourceSubscriptions: [uri] });
    assert.deepEqual(listening.honoredFilter.resourceSubscriptions, [uri]);
  } else {
    inItsEra(await client.subscribeResource({ uri }), "resources/subscribe", modern);
  }
  if (offers.updates.toggle) await turnOn(offers.updates.toggle);
  await update;
  if (offers.updates.toggle) await turnOff(offers.updates.toggle);
  if (modern) await listening.close();
  else await client.unsubscribeResource({ uri });
});

// Each era asks for log messages its own way: the older ones for the session with
// logging/setLevel, 2026-07-28 on each request in _meta. Either way the messages the
// computer logs during a call reach that call's caller.
await step("logging during tools/call", async () => {
  const logged = [];
  onNotification("notifications/message", (notification) => logged.push(notification.params));
  let params = {};
  if (modern) params = { _meta: { "io.modelcontextprotocol/logLevel": "debug" } };
  else inItsEra(await client.setLoggingLevel("debug"), "logging/setLevel", modern);
  if (offers.logging.toggle) {
    await turnOn(offers.logging.toggle, params);
  } else {
    const result = await client.callTool({ ...offers.logging.call, ...params });
    assert.ok(!result.isError, JSON.stringify(result));
  }
  assert.ok(logged.length > 0, "no log message reached the caller during the call");
  if (offers.logging.toggle) await turnOff(offers.logging.toggle);
});

// A change to the tool list reaches a handshake-era caller on its session's stream and a
// 2026-07-28 caller that listens for it, whichever era the computer announced it in.
if (offers.listChange) {
  await step("a tool list change", async () => {
    const changed = nextNotification("notifications/tools/list_changed", () => true, 20);
    let listening;
    if (modern) {
      listening = await client.listen({ toolsListChanged: true });
      assert.equal(listening.honoredFilter.toolsListChanged, true);
    }
    const result = await client.callTool(offers.listChange);
    assert.ok(!result.isError, JSON.stringify(result));
    await changed;
    if (modern) await listening.close();
  });
}

await step("resources/templates/list", async () => {
  const { resourceTemplates } = inItsEra(
    await client.listResourceTemplates(),
    "resources/templates/list",
    modern,
  );
  const templates = resourceTemplates.map((t) => t.uriTemplate);
  assert.ok(templates.includes(offers.template), `${templates}`);
});

await step("prompts/list and get", async () => {
  const { prompts } = inItsEra(await client.listPrompts(), "prompts/list", modern);
  assert.ok(prompts.some((p) => p.name === offers.prompt), JSON.stringify(prompts));
  const { messages } = inItsEra(
    await client.getPrompt({ name: offers.prompt }),
    "prompts/get",
    modern,
  );
  assert.equal(messages[0].role, "user");
});

await step("completion/complete", async () => {
  const { ref, argument, values } = offers.completion;
  const result = await client.complete({ ref, argument });
  inItsEra(result, "completion/complete", modern);
  assert.deepEqual(result.completion.values, values);
});

await step("cancel a call", async () => {
  const aborted = new AbortController();
  const call = callTool(offers.long, {
    signal: aborted.signal,
    onprogress: () => aborted.abort("enough"),
  });
  await assert.rejects(call, "the cancelled call is rejected, not answered");
  const result = await client.callTool(offers.simple.call);
  assert.deepEqual(result.content, [{ type: "text", text: offers.simple.answer }]);
});

// What a computer asks during a call reaches the caller in the caller's own era
// (docs/protocol.md, "Input required"): a handshake-era caller gets requests on the call's
// stream, a 2026-07-28 caller input-required results, which the v2 client fulfils through
// the same handlers and retries; whichever era the computer asked in. server-everything
// offers these tools only to a client that declared the capabilities.
await step("elicitation during tools/call", async () => {
  onRequest("elicitation/create", async () => ({
    action: "accept",
    content: offers.elicitation.content,
  }));
  const result = await client.callTool(offers.elicitation.call);
  assert.ok(!result.isError, JSON.stringify(result));
  assert.match(JSON.stringify(result.content), new RegExp(kind));
});
await step("sampling during tools/call", async () => {
  onRequest("sampling/createMessage", async () => ({
    model: "eras",
    role: "assistant",
    content: { type: "text", text: `sampled by ${kind}` },
  }));
  const result = await client.callTool(offers.sampling.call);
  assert.ok(!result.isError, JSON.stringify(result));
  assert.match(JSON.stringify(result.content), new RegExp(`sampled by ${kind}`));
});

await client.close();
console.log(`eras ${kind} (${computer}): ${steps.join(", ")}`);
