// A resource template under a grant narrower than "*" (docs/protocol.md, "Resources,
// prompts and completions"): through the switchboard to server-everything, a caller granted
// `demo://resource/dynamic/text/*` sees the text template, whose every URI that pattern
// covers, and not the blob one; in either era.
//
//   node grant.mjs URL TOKEN
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, token] = process.argv.slice(2);
if (!url || !token) {
  console.error("usage: node grant.mjs URL TOKEN");
  process.exit(2);
}

for (const versionNegotiation of [{ mode: "legacy" }, { mode: { pin: "2026-07-28" } }]) {
  const client = new Client({ name: "switchboard-grant", version: "1.0.0" }, { versionNegotiation });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.deepEqual(
    resourceTemplates.map((template) => template.uriTemplate),
    ["demo://resource/dynamic/text/{resourceId}"],
    `the templates a ${JSON.stringify(versionNegotiation)} caller sees`,
  );
  await client.close();
}
console.log("grant: a narrower grant sees exactly the templates it covers, in both eras");
