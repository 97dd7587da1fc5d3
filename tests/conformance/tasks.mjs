// Tasks across eras (docs/protocol.md, "Tasks across eras"): a caller of one era runs a task
// through the switchboard on a computer of the other, and sees what a server of its own
// era would show it.
//
//   node tasks.mjs URL CALLER COMPUTER
//
// URL is the switchboard's /mcp/<computer> behind proxy.mjs (which adds the token).
// CALLER is
//   v1     @modelcontextprotocol/sdk 1.x, the handshake era's tasks (2025-11-25) through its
//          own experimental task API: callToolStream, getTask, cancelTask;
//   2026   a 2026-07-28 caller of the tasks extension, written here on fetch: the official
//          v2 client has no API for that extension (in its modern era it refuses
//          tasks/update and takes no task as a tools/call result), so nothing real fits;
// and COMPUTER the computer behind the switchboard: `handshake` for server-everything (its
// task tool simulate-research-query, asking the caller during the task when ambiguous),
// `stateless` for `computer.mjs --modern-only` (the extension's slow_compute and
// confirm_delete, which asks).
import assert from "node:assert/strict";

const [url, caller, computer] = process.argv.slice(2);
if (!url || !["v1", "2026"].includes(caller) || !["handshake", "stateless"].includes(computer)) {
  console.error("usage: node tasks.mjs URL v1|2026 handshake|stateless");
  process.exit(2);
}

const seconds = (count) => count * 1000;
const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

// What each computer offers for the scenario: a task that ends by itself, one that asks its
// caller a question first (and the answer it then reports), and one long enough to cancel.
const tools = {
  handshake: {
    quick: { name: "simulate-research-query", arguments: { topic: "tides" } },
    quickAnswer: "Research Report: tides",
    asks: { name: "simulate-research-query", arguments: { topic: "python", ambiguous: true } },
    answer: { interpretation: "programming" },
    askedAnswer: "python (programming)",
    long: { name: "simulate-research-query", arguments: { topic: "a long one" } },
  },
  stateless: {
    quick: { name: "slow_compute", arguments: { seconds: 1, label: "tides" } },
    quickAnswer: "Computed tides in 1 s",
    asks: { name: "confirm_delete", arguments: { filename: "notes.txt" } },
    answer: { confirm: true },
    askedAnswer: "Deleted notes.txt",
    long: { name: "slow_compute", arguments: { seconds: 60 } },
  },
}[computer];

const textOf = (result) => result.content.map((block) => block.text).join("");

// ---- the handshake era, through the official v1 SDK ----

async function handshakeCaller() {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import(
    "@modelcontextprotocol/sdk/client/streamableHttp.js"
  );
  const types = await import("@modelcontextprotocol/sdk/types.js");
  const client = new Client(
    { name: "switchboard-tasks-v1", version: "1.0.0" },
    { capabilities: { elicitation: {} } },
  );
  const asked = [];
  client.setRequestHandler(types.ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return { action: "accept", content: tools.answer };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));

  // The computer's tasks, in this era's capability, whichever era it speaks.
  const offered = client.getServerCapabilities().tasks;
  assert.ok(offered?.requests?.tools?.call, `tasks offered: ${JSON.stringify(offered)}`);
  assert.ok(offered.cancel, "tasks/cancel offered");
  // A 2026-only computer has no tasks/list, so none is offered.
  assert.equal(offered.list !== undefined, computer === "handshake", "tasks/list offered");
  await client.listTools();

  // Runs `call` as a task to its end: every message the stream yields.
  const run = async (call) => {
    const messages = [];
    const stream = client.experimental.tasks.callToolStream(call, types.CallToolResultSchema, {
      task: { ttl: seconds(60) },
      timeout: seconds(30),
    });
    for await (const message of stream) messages.push(message);
    return messages;
  };
  const resultOf = (messages) => {
    const last = messages.at(-1);
    assert.equal(last.type, "result", `the task ended with ${JSON.stringify(last)}`);
    return last.result;
  };

  const quick = await run(tools.quick);
  const created = quick.find((message) => message.type === "taskCreated");
  assert.ok(created, "a CreateTaskResult, nested under `task`");
  assert.equal(typeof created.task.taskId, "string");
  for (const member of ["resultType", "ttlMs", "pollIntervalMs"])
    assert.ok(!(member in created.task), `no ${member} in a task of the handshake era`);
  assert.ok("ttl" in created.task, "the handshake era's ttl");
  assert.ok(
    quick.some((message) => message.type === "taskStatus"),
    "tasks/get answered with the task",
  );
  assert.ok(textOf(resultOf(quick)).includes(tools.quickAnswer), "the task's result");

  // What the task asks during its run reaches this caller as a request, and the answer
  // reaches the task.
  const asking = await run(tools.asks);
  assert.equal(asked.length, 1, "one elicitation asked of the caller");
  assert.ok(textOf(resultOf(asking)).includes(tools.askedAnswer), "the task saw the answer");

  // A task cancelled: tasks/cancel answers with the task, and it stays cancelled.
  const stream = client.experimental.tasks.callToolStream(tools.long, types.CallToolResultSchema, {
    task: { ttl: seconds(60) },
  });
  const first = (await stream.next()).value;
  assert.equal(first.type, "taskCreated");
  const cancelled = await client.experimental.tasks.cancelTask(first.task.taskId);
  assert.equal(cancelled.taskId, first.task.taskId);
  assert.equal(cancelled.status, "cancelled");
  const after = await client.experimental.tasks.getTask(first.task.taskId);
  assert.equal(after.status, "cancelled");
  await stream.return();

  // Another client's task, or none, is the same: no such task.
  await assert.rejects(client.experimental.tasks.getTask("no-such-task"), /no such task/);
  await client.close();
}

// ---- 2026-07-28 and its tasks extension, as a caller of that revision writes it ----

let nextId = 1;

async function modernRequest(method, params, name) {
  const id = nextId++;
  const body = {
    jsonrpc: "2.0",
    id,
    method,
    params: {
      ...params,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
          elicitation: {},
          extensions: { [TASKS_EXTENSION]: {} },
        },
        "io.modelcontextprotocol/clientInfo": { name: "switchboard-tasks-2026", version: "1" },
      },
    },
  };
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": method,
  };
  if (name !== undefined) headers["mcp-name"] = name;
  const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await response.text();
  const type = response.headers.get("content-type") ?? "";
  const messages = type.startsWith("text/event-stream")
    ? text
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => JSON.parse(line.slice(5)))
    : [JSON.parse(text)];
  const reply = messages.find((message) => message.id === id);
  assert.ok(reply, `${method}: no reply in ${text.slice(0, 300)}`);
  return reply;
}

async function modernCaller() {
  const discovered = await modernRequest("server/discover", {});
  assert.deepEqual(
    discovered.result.capabilities.extensions?.[TASKS_EXTENSION],
    {},
    "the tasks extension offered",
  );
  // The switchboard learns from the list which tools may run as tasks on a handshake-era
  // computer.
  await modernRequest("tools/list", {});

  const start = async (call) => {
    const reply = await modernRequest("tools/call", call, call.name);
    const task = reply.result;
    assert.equal(task?.resultType, "task", `a task: ${JSON.stringify(reply)}`);
    assert.equal(typeof task.taskId, "string");
    assert.ok(!("task" in task) && !("ttl" in task), "the extension's shape, not 2025's");
    for (const member of ["ttlMs", "pollIntervalMs"].filter((key) => key in task))
      assert.ok(Number.isInteger(task[member]), `${member} is milliseconds`);
    return task;
  };
  const get = async (taskId) => {
    const reply = await modernRequest("tasks/get", { taskId }, taskId);
    assert.equal(reply.result?.resultType, "complete", `tasks/get: ${JSON.stringify(reply)}`);
    return reply.result;
  };
  const until = async (taskId, done) => {
    for (let polls = 0; polls < 150; polls++) {
      const task = await get(taskId);
      if (done(task)) return task;
      await new Promise((resolve) => setTimeout(resolve, Math.min(task.pollIntervalMs ?? 200, 500)));
    }
    throw new Error(`task ${taskId} never reached the state wanted`);
  };

  // A task to its end: tasks/get shows its result once it has completed.
  const quick = await start(tools.quick);
  const ended = await until(quick.taskId, (task) => task.status !== "working");
  assert.equal(ended.status, "completed", JSON.stringify(ended));
  assert.ok(textOf(ended.result).includes(tools.quickAnswer), "the result, inlined");

  // A task that asks during its run shows its questions as inputRequests, and takes the
  // answers with tasks/update.
  const asking = await start(tools.asks);
  const waiting = await until(
    asking.taskId,
    (task) => task.status !== "working" && (task.status !== "input_required" || task.inputRequests),
  );
  assert.equal(waiting.status, "input_required", JSON.stringify(waiting));
  const keys = Object.keys(waiting.inputRequests);
  assert.equal(keys.length, 1, JSON.stringify(waiting.inputRequests));
  assert.equal(waiting.inputRequests[keys[0]].method, "elicitation/create");
  const update = await modernRequest(
    "tasks/update",
    { taskId: asking.taskId, inputResponses: { [keys[0]]: { action: "accept", content: tools.answer } } },
    asking.taskId,
  );
  assert.equal(update.result?.resultType, "complete", JSON.stringify(update));
  const answered = await until(asking.taskId, (task) => !["working", "input_required"].includes(task.status));
  assert.equal(answered.status, "completed", JSON.stringify(answered));
  assert.ok(textOf(answered.result).includes(tools.askedAnswer), "the task saw the answer");

  // A task cancelled: tasks/cancel answers with nothing but its resultType.
  const long = await start(tools.long);
  const cancelled = await modernRequest("tasks/cancel", { taskId: long.taskId }, long.taskId);
  assert.deepEqual(
    Object.keys(cancelled.result ?? {}).filter((key) => key !== "_meta"),
    ["resultType"],
    JSON.stringify(cancelled),
  );
  assert.equal((await get(long.taskId)).status, "cancelled");

  // Another caller's task, or none, is the same: no such task.
  const unknown = await modernRequest("tasks/get", { taskId: "no-such-task" }, "no-such-task");
  assert.equal(unknown.error?.code, -32602);
}

try {
  await (caller === "v1" ? handshakeCaller() : modernCaller());
  console.log(`tasks: ${caller} caller, ${computer} computer: passed`);
  process.exit(0);
} catch (error) {
  console.error(`tasks: ${caller} caller, ${computer} computer: ${error.stack ?? error}`);
  process.exit(1);
}
