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
// and COMPUTER the era of the computer behind the switchboard: `handshake` for
// server-everything (on the v1 SDK), `stateless` for modern_computer.mjs (2026-07-28 only).
import assert from "node:assert/strict";

const [url, kind, computer] = process.argv.slice(2);
const kinds = ["v1", "v2-legacy", "v2-auto", "v2-2026"];
const computers = ["handshake", "stateless"];
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

await step("tools/list", async () => {
  const { tools } = inItsEra(await client.listTools(), "tools/list", modern);
  const names = tools.map((tool) => tool.name);
  for (const name of ["echo", "get-sum", "trigger-long-running-operation"]) {
    assert.ok(names.includes(name), `tools/list lacks ${name}: ${names.join(", ")}`);
  }
});

await step("tools/call", async () => {
  const result = await client.callTool({ name: "echo", arguments: { message: kind } });
  inItsEra(result, "tools/call", modern);
  assert.deepEqual(result.content, [{ type: "text", text: `Echo: ${kind}` }]);
});

await step("tools/call with progress", async () => {
  const progress = [];
  const result = await callTool(
    { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 2 } },
    { onprogress: (event) => progress.push(event.progress) },
  );
  inItsEra(result, "tools/call", modern);
  assert.ok(!result.isError, JSON.stringify(result));
  assert.deepEqual(progress, [1, 2], "the progress notifications");
});

await step("resources/list and read", async () => {
  const { resources } = inItsEra(await client.listResources(), "resources/list", modern);
  const document = resources.find((r) => r.uri.startsWith("demo://resource/static/document/"));
  assert.ok(document, `resources/list: ${JSON.stringify(resources.map((r) => r.uri))}`);
  const { contents } = inItsEra(
    await client.readResource({ uri: document.uri }),
    "resources/read",
    modern,
  );
  assert.equal(contents[0].uri, document.uri);
  assert.ok(contents[0].text.length > 0);
});

// A handshake-era caller subscribes and gets the update on its session's stream; a
// 2026-07-28 caller listens and gets it on that request's stream (docs/protocol.md,
// "Subscriptions"), whichever era the computer follows resources in.
await step("subscribe and get an update", async () => {
  const { resources } = await client.listResources();
  const uri = resources.find((r) => r.uri.startsWith("demo://resource/static/document/")).uri;
  const update = nextNotification("notifications/resources/updated", (p) => p.uri === uri, 20);
  let listening;
  if (modern) {
    listening = await client.listen({ resourceSubscriptions: [uri] });
    assert.deepEqual(listening.honoredFilter.resourceSubscriptions, [uri]);
  } else {
    inItsEra(await client.subscribeResource({ uri }), "resources/subscribe", modern);
  }
  await turnOn("toggle-subscriber-updates");
  await update;
  await turnOff("toggle-subscriber-updates");
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
  await turnOn("toggle-simulated-logging", params);
  assert.ok(logged.length > 0, "no log message reached the caller during the call");
  await turnOff("toggle-simulated-logging");
});

await step("resources/templates/list", async () => {
  const { resourceTemplates } = inItsEra(
    await client.listResourceTemplates(),
    "resources/templates/list",
    modern,
  );
  const templates = resourceTemplates.map((t) => t.uriTemplate);
  assert.ok(templates.includes("demo://resource/dynamic/text/{resourceId}"), `${templates}`);
});

await step("prompts/list and get", async () => {
  const { prompts } = inItsEra(await client.listPrompts(), "prompts/list", modern);
  assert.ok(prompts.some((p) => p.name === "simple-prompt"), JSON.stringify(prompts));
  const { messages } = inItsEra(
    await client.getPrompt({ name: "simple-prompt" }),
    "prompts/get",
    modern,
  );
  assert.equal(messages[0].role, "user");
});

await step("completion/complete", async () => {
  const result = await client.complete({
    ref: { type: "ref/prompt", name: "completable-prompt" },
    argument: { name: "department", value: "S" },
  });
  inItsEra(result, "completion/complete", modern);
  assert.deepEqual(result.completion.values, ["Sales", "Support"]);
});

await step("cancel a call", async () => {
  const aborted = new AbortController();
  const call = callTool(
    { name: "trigger-long-running-operation", arguments: { duration: 20, steps: 20 } },
    { signal: aborted.signal, onprogress: () => aborted.abort("enough") },
  );
  await assert.rejects(call, "the cancelled call is rejected, not answered");
  const result = await client.callTool({ name: "echo", arguments: { message: "after" } });
  assert.deepEqual(result.content, [{ type: "text", text: "Echo: after" }]);
});

// What a computer asks during a call reaches the caller in the caller's own era
// (docs/protocol.md, "Input required"): a handshake-era caller gets requests on the call's
// stream, a 2026-07-28 caller input-required results, which the v2 client fulfils through
// the same handlers and retries; whichever era the computer asked in. server-everything
// offers these tools only to a client that declared the capabilities.
{
  await step("elicitation during tools/call", async () => {
    onRequest("elicitation/create", async () => ({
      action: "accept",
      content: { name: kind, check: true, email: "a@example.com" },
    }));
    const result = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
    assert.ok(!result.isError, JSON.stringify(result));
    assert.match(JSON.stringify(result.content), new RegExp(kind));
  });
  await step("sampling during tools/call", async () => {
    onRequest("sampling/createMessage", async () => ({
      model: "eras",
      role: "assistant",
      content: { type: "text", text: `sampled by ${kind}` },
    }));
    const result = await client.callTool({
      name: "trigger-sampling-request",
      arguments: { prompt: "hello", maxTokens: 10 },
    });
    assert.ok(!result.isError, JSON.stringify(result));
    assert.match(JSON.stringify(result.content), new RegExp(`sampled by ${kind}`));
  });
}

await client.close();
console.log(`eras ${kind}: ${steps.join(", ")}`);
