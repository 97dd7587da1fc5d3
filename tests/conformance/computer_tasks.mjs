// The conformance computer's tasks (computer.mjs): the io.modelcontextprotocol/tasks
// extension of 2026-07-28, its task tools, and the tools by name.
import { randomBytes, randomUUID } from 'node:crypto';
import {
  BOTH,
  Code,
  accepted,
  ask,
  gather,
  inputResponsesOf,
  invalidParams,
  noArguments,
  rpcError,
  text
} from './computer_wire.mjs';
import { tools } from './computer_tools.mjs';

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

export { TASKS_EXTENSION, TASK_METHODS, servedAt, toolByName };
