// The Linux-VM recipe's caller (docs/connect.md, "A Linux VM as a computer"): the official
// SDK client drives Playwright's MCP server (@playwright/mcp on Debian's chromium, behind
// switchboard-connect) through the switchboard, granted exactly the browser tools the
// design record lists for its agent, on a page this script serves itself; then a second
// conversation finds the browser as the first left it.
//
//   node playwright.mjs URL
//
// URL is the switchboard's /mcp/<computer> behind proxy.mjs (which adds the token).
import assert from "node:assert/strict";
import http from "node:http";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url] = process.argv.slice(2);
if (!url) {
  console.error("usage: node playwright.mjs URL");
  process.exit(2);
}

const granted = [
  "browser_click",
  "browser_navigate",
  "browser_press_key",
  "browser_snapshot",
  "browser_tabs",
  "browser_take_screenshot",
  "browser_type",
  "browser_wait_for",
];

const page = `<!doctype html><title>Recipe page</title><h1>Hello from the VM</h1>
<input id="name" aria-label="Name">
<button onclick="document.querySelector('h1').textContent = 'Clicked ' +
  document.getElementById('name').value">Greet</button>`;
const site = http.createServer((request, response) => {
  response.setHeader("content-type", "text/html");
  response.end(page);
});
await new Promise((resolve) => site.listen(0, "127.0.0.1", resolve));
const pageUrl = `http://127.0.0.1:${site.address().port}/`;

const text = (result) =>
  result.content
    .filter((item) => item.type === "text")
    .map((item) => item.text)
    .join("\n");

async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  assert.notEqual(result.isError, true, `${name} failed: ${text(result)}`);
  return result;
}

// The reference of the snapshot line that names `role` (and `name`, when given).
function reference(snapshot, role, name) {
  for (const line of snapshot.split("\n")) {
    if (!line.includes(`- ${role}`) || (name && !line.includes(`"${name}"`))) continue;
    const found = /\[ref=([^\]]+)\]/.exec(line);
    if (found) return found[1];
  }
  assert.fail(`no ${role} ${name ?? ""} in the snapshot:\n${snapshot}`);
}

const client = new Client({ name: "switchboard-recipe", version: "1.0.0" });
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const listed = (await client.listTools()).tools.map((tool) => tool.name).sort();
  // Its grant, and the switchboard's own vm_status, which every caller has.
  assert.deepEqual(listed, [...granted, "vm_status"].sort(), "the caller sees exactly its grant");

  const navigated = await call(client, "browser_navigate", { url: pageUrl });
  assert.match(text(navigated), /Recipe page/);
  const snapshot = text(await call(client, "browser_snapshot", {}));
  assert.match(snapshot, /Hello from the VM/);
  await call(client, "browser_type", {
    element: "Name field",
    target: reference(snapshot, "textbox"),
    text: "switchboard",
  });
  await call(client, "browser_click", {
    element: "Greet button",
    target: reference(snapshot, "button", "Greet"),
  });
  await call(client, "browser_wait_for", { text: "Clicked switchboard" });
  await call(client, "browser_press_key", { key: "Tab" });
  assert.match(text(await call(client, "browser_tabs", { action: "list" })), /Recipe page/);

  const screenshot = await call(client, "browser_take_screenshot", { type: "png" });
  const image = screenshot.content.find((item) => item.type === "image");
  assert.ok(image, `the screenshot comes back as an image: ${JSON.stringify(screenshot)}`);
  assert.equal(image.mimeType, "image/png");
  assert.equal(Buffer.from(image.data, "base64").subarray(1, 4).toString(), "PNG");

  // A tool the server offers but the grant leaves out is no tool at all for this caller.
  const refused = await client
    .callTool({ name: "browser_evaluate", arguments: { function: "() => 1" } })
    .then(
      (result) => result.isError === true,
      () => true,
    );
  assert.ok(refused, "browser_evaluate is outside the grant");
} finally {
  await client.close().catch(() => {});
}

// The next conversation, a new MCP session, finds the browser where the last one left it:
// the server stays up between them.
const next = new Client({ name: "switchboard-recipe-next", version: "1.0.0" });
try {
  await next.connect(new StreamableHTTPClientTransport(new URL(url)));
  assert.match(text(await call(next, "browser_tabs", { action: "list" })), /Recipe page/);
  assert.match(text(await call(next, "browser_snapshot", {})), /Clicked switchboard/);
  console.log("playwright recipe: every granted tool drove the page; the rest refused; the");
  console.log("next conversation found the browser as the last one left it");
} finally {
  await next.close().catch(() => {});
  site.close();
}
