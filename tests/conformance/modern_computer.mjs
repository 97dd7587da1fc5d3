// A computer that speaks only MCP 2026-07-28, as the official v2 server SDK serves one on
// stdio with `legacy: "reject"`: an `initialize` is answered -32022 naming the revisions
// it supports, and every request must carry that revision's `_meta`. It offers what
// eras.mjs calls, under the names server-everything gives them, so that the era matrix
// runs one scenario against both (tests/conformance/README.md, "The era matrix").
//
//   switchboard-connect ... -- node modern_computer.mjs
import {
  completable,
  inputRequired,
  McpServer,
  ResourceTemplate,
} from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { z } from "zod";

const departments = ["Engineering", "Sales", "Marketing", "Support"];
const documentUri = "demo://resource/static/document/notes.md";
let logging = false;
let updating = false;
let updates;

function newServer() {
  const server = new McpServer(
    { name: "switchboard-modern-computer", version: "1.0.0" },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true },
        prompts: {},
        completions: {},
        logging: {},
      },
    },
  );

  server.registerTool(
    "echo",
    { description: "Echoes its message", inputSchema: z.object({ message: z.string() }) },
    async ({ message }) => ({ content: [{ type: "text", text: `Echo: ${message}` }] }),
  );
  server.registerTool(
    "get-sum",
    { description: "Adds two numbers", inputSchema: z.object({ a: z.number(), b: z.number() }) },
    async ({ a, b }) => ({ content: [{ type: "text", text: `${a + b}` }] }),
  );
  server.registerTool(
    "trigger-long-running-operation",
    {
      description: "Reports progress once per step",
      inputSchema: z.object({ duration: z.number(), steps: z.number() }),
    },
    async ({ duration, steps }, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      for (let step = 1; step <= steps; step++) {
        await new Promise((done) => setTimeout(done, (duration * 1000) / steps));
        if (token !== undefined) {
          await ctx.mcpReq.notify({
            method: "notifications/progress",
            params: { progressToken: token, progress: step, total: steps },
          });
        }
      }
      return { content: [{ type: "text", text: `Done in ${steps} steps.` }] };
    },
  );

  // What 2026-07-28 has instead of requests from the server: an input-required result, and
  // the caller's retry with its answer.
  server.registerTool(
    "trigger-elicitation-request",
    { description: "Asks the caller for its name first", inputSchema: z.object({}) },
    async (_args, ctx) => {
      const answer = ctx.mcpReq.inputResponses?.ask;
      if (!answer) {
        return inputRequired({
          inputRequests: {
            ask: inputRequired.elicit({
              message: "Your name?",
              requestedSchema: {
                type: "object",
                properties: { name: { type: "string" } },
                required: ["name"],
              },
            }),
          },
        });
      }
      return { content: [{ type: "text", text: `User provided: ${JSON.stringify(answer)}` }] };
    },
  );
  server.registerTool(
    "trigger-sampling-request",
    {
      description: "Asks the caller's model first",
      inputSchema: z.object({ prompt: z.string(), maxTokens: z.number() }),
    },
    async ({ prompt, maxTokens }, ctx) => {
      const answer = ctx.mcpReq.inputResponses?.sample;
      if (!answer) {
        return inputRequired({
          inputRequests: {
            sample: inputRequired.createMessage({
              messages: [{ role: "user", content: { type: "text", text: prompt } }],
              maxTokens,
            }),
          },
        });
      }
      return { content: [{ type: "text", text: `LLM sampling result: ${answer.content?.text}` }] };
    },
  );

  // As server-everything's tools of these names: each call turns the behaviour on or off,
  // and turning it on shows it at once.
  server.registerTool(
    "toggle-simulated-logging",
    { description: "Logs at two levels when turned on", inputSchema: z.object({}) },
    async (_args, ctx) => {
      logging = !logging;
      if (logging) {
        // 2026-07-28 logs only for a request that named a level, and at that level or above.
        await ctx.mcpReq.log("debug", "Debug-level message");
        await ctx.mcpReq.log("error", "Error-level message");
      }
      return { content: [{ type: "text", text: logging ? "Started logging" : "Stopped logging" }] };
    },
  );
  server.registerTool(
    "toggle-subscriber-updates",
    { description: "Updates the document every second when on", inputSchema: z.object({}) },
    async () => {
      updating = !updating;
      clearInterval(updates);
      if (updating) {
        const update = () => server.server.sendResourceUpdated({ uri: documentUri });
        await update();
        updates = setInterval(update, 1000);
      }
      const state = updating ? "Started" : "Stopped";
      return { content: [{ type: "text", text: `${state} updating ${documentUri}` }] };
    },
  );

  // Not one of server-everything's: it announces that the tool list changed.
  server.registerTool(
    "trigger-tool-list-change",
    { description: "Announces a change to the tool list", inputSchema: z.object({}) },
    async () => {
      await server.sendToolListChanged();
      return { content: [{ type: "text", text: "Tool list change announced." }] };
    },
  );

  server.registerResource(
    "A document",
    documentUri,
    { mimeType: "text/markdown" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/markdown", text: "# Notes" }] }),
  );
  server.registerResource(
    "Dynamic Text Resource",
    new ResourceTemplate("demo://resource/dynamic/text/{resourceId}", { list: undefined }),
    { mimeType: "text/plain" },
    async (uri, { resourceId }) => ({ contents: [{ uri: uri.href, text: `text ${resourceId}` }] }),
  );

  server.registerPrompt("simple-prompt", { description: "A prompt without arguments" }, () => ({
    messages: [{ role: "user", content: { type: "text", text: "A simple prompt." } }],
  }));
  server.registerPrompt(
    "completable-prompt",
    {
      description: "A department to complete",
      argsSchema: z.object({
        department: completable(z.string(), (value) =>
          departments.filter((name) => name.startsWith(value)),
        ),
      }),
    },
    ({ department }) => ({
      messages: [{ role: "user", content: { type: "text", text: `Lead ${department}.` } }],
    }),
  );
  return server;
}

serveStdio(newServer, { legacy: "reject" });
