// Callers signing in with OAuth (docs/auth.md), against a real authorization server
// (idp.mjs, oidc-provider) and a real switchboard whose [oauth] trusts it: the official v2
// client's client-credentials flow finds everything through the switchboard's 401 and
// calls a tool; a token for another audience, without the scope every request needs, with
// its claims changed, naming no client or signed by a key the issuer does not have is
// refused; a valid token outlives the authorization server, and its keys' rotation is
// followed; and no token is ever written to the audit or the log.
//
//   node oauth.mjs URL IDP RUN_DIR IDP_PID
//
// URL is the switchboard's /mcp/<computer>, IDP the authorization server's issuer, RUN_DIR
// where the switchboard's audit.jsonl and switchboard.log are, IDP_PID the authorization
// server's process group, which the test stops to see valid tokens outlive it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const [url, idp, runDir, idpPid] = process.argv.slice(2);
if (!url || !idp || !runDir || !idpPid) {
  console.error("usage: node oauth.mjs URL IDP RUN_DIR IDP_PID");
  process.exit(2);
}
const origin = new URL(url).origin;
const steps = [];
const step = (name) => steps.push(name);
const tokens = [];

// A token from the authorization server by the client-credentials grant.
async function tokenFor(resource, scope = "mcp", client = "agent") {
  const response = await fetch(`${idp}/token`, {
    method: "POST",
    headers: {
      authorization: `Basic ${Buffer.from(`${client}:${client}-secret`).toString("base64")}`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ grant_type: "client_credentials", resource, scope }),
  });
  const body = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  tokens.push(body.access_token);
  return body.access_token;
}

async function post(token, extra = {}) {
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    ...extra,
  };
  if (token && !headers.authorization) headers.authorization = `Bearer ${token}`;
  return fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });
}

// Without a token: 401, and where to learn how to sign in.
const bare = await post();
assert.equal(bare.status, 401);
const challenge = bare.headers.get("www-authenticate");
const metadataUrl = `${origin}/.well-known/oauth-protected-resource`;
assert.equal(
  challenge,
  `Bearer resource_metadata="${metadataUrl}", scope="mcp", DPoP algs="RS256 PS256 ES256 EdDSA"`,
);
const metadata = await (await fetch(metadataUrl)).json();
assert.deepEqual(metadata.authorization_servers, [idp]);
assert.equal(metadata.resource, origin);
assert.deepEqual(metadata.scopes_supported, ["mcp"]);
step("401 names the protected resource metadata");

// The official client finds the rest itself: the metadata, the issuer's, its token
// endpoint, a token for this switchboard; then the call.
{
  const { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } = await import(
    "@modelcontextprotocol/client"
  );
  const authProvider = new ClientCredentialsProvider({
    clientId: "agent",
    clientSecret: "agent-secret",
    expectedIssuer: idp,
    scope: "mcp",
  });
  const client = new Client({ name: "switchboard-oauth", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider }));
  const { tools } = await client.listTools();
  assert.ok(tools.some((tool) => tool.name === "test_simple_text"));
  const result = await client.callTool({ name: "test_simple_text", arguments: {} });
  assert.equal(result.content[0].type, "text");
  tokens.push(authProvider.tokens().access_token);
  await client.close();
  step("the v2 client's client-credentials flow calls a tool");
}

// A token of the issuer for this switchboard works by hand too; one minted for another
// audience, without the scope, or changed after signing does not.
assert.equal((await post(await tokenFor(origin))).status, 200);
const elsewhere = await post(await tokenFor("https://other.example.net"));
assert.equal(elsewhere.status, 401);
assert.match(elsewhere.headers.get("www-authenticate"), /error="invalid_token"/);
step("a token for another audience is refused");

// A computer's URL is a protected resource too (RFC 9728 §3.3): its metadata names it,
// whether or not such a computer exists, and a token for it is taken there alone.
for (const path of [new URL(url).pathname, "/mcp/no-such-computer", "/mcp"]) {
  const suffixed = await fetch(`${origin}/.well-known/oauth-protected-resource${path}`);
  assert.equal(suffixed.status, 200, path);
  const body = await suffixed.json();
  assert.equal(body.resource, `${origin}${path}`);
  assert.deepEqual(body.authorization_servers, [idp]);
}
assert.equal((await fetch(`${origin}/.well-known/oauth-protected-resource/other`)).status, 404);
const narrow = await tokenFor(url);
assert.equal((await post(narrow)).status, 200);
for (const elsewhere of [`${origin}/mcp/no-such-computer`, `${origin}/mcp`, `${origin}/computers`]) {
  const response = await fetch(elsewhere, {
    method: elsewhere.endsWith("/computers") ? "GET" : "POST",
    headers: {
      authorization: `Bearer ${narrow}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: elsewhere.endsWith("/computers")
      ? undefined
      : JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });
  assert.equal(response.status, 401, elsewhere);
  assert.match(response.headers.get("www-authenticate"), /error="invalid_token"/);
}
step("a computer's URL has its own metadata, and a token for it works there alone");

const unscoped = await post(await tokenFor(origin, "other"));
assert.equal(unscoped.status, 403);
assert.match(unscoped.headers.get("www-authenticate"), /error="insufficient_scope"/);
step("a token without the scope is refused with insufficient_scope");

const good = await tokenFor(origin);
const [header, payload, signature] = good.split(".");
const claims = JSON.parse(Buffer.from(payload, "base64url").toString());
const forged = (changed) =>
  `${header}.${Buffer.from(JSON.stringify({ ...claims, ...changed })).toString("base64url")}.${signature}`;
assert.equal((await post(forged({ sub: "admin" }))).status, 401);
assert.equal((await post(forged({ exp: claims.exp + 3600 }))).status, 401);
assert.equal((await post(`${header}.${payload}.`)).status, 401);
step("a token changed after signing is refused");

// A token that worked is refused once past its expiry (brief-agent's live two seconds,
// and this issuer is allowed no clock skew): the wait is until its own `exp`.
{
  const brief = await tokenFor(origin, "mcp", "brief-agent");
  assert.equal((await post(brief)).status, 200);
  const { exp } = JSON.parse(Buffer.from(brief.split(".")[1], "base64url").toString());
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, exp * 1000 - Date.now()) + 50));
  const expired = await post(brief);
  assert.equal(expired.status, 401);
  assert.match(expired.headers.get("www-authenticate"), /error="invalid_token"/);
  step("a token past its expiry is refused");
}

// A valid token of the issuer that names no client is refused as an unknown token is.
const stranger = await post(await tokenFor(origin, "mcp", "stranger"));
assert.equal(stranger.status, 401);
assert.match(stranger.headers.get("www-authenticate"), /error="invalid_token"/);
step("a valid token naming no client is refused");

// A token signed by a key the issuer does not have (its keys fetched again, at most once
// a minute, and still not there).
{
  const { generateKeyPairSync, sign } = await import("node:crypto");
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const part = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const input = `${part({ alg: "ES256", typ: "at+jwt", kid: "not-the-issuers" })}.${part(claims)}`;
  const signed = sign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" });
  assert.equal((await post(`${input}.${signed.toString("base64url")}`)).status, 401);
  step("a token signed by a key the issuer does not have is refused");
}

// A token bound to a key (DPoP, RFC 9449): taken with a fresh proof by that key for this
// request, refused as a bearer token, without a proof, or with one replayed or made for
// another URL or method.
{
  const { createHash, generateKeyPairSync, randomUUID, sign } = await import("node:crypto");
  const key = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = key.publicKey.export({ format: "jwk" });
  const part = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const proof = (htm, htu, accessToken) => {
    const claims = { htm, htu, iat: Math.floor(Date.now() / 1000), jti: randomUUID() };
    if (accessToken) claims.ath = createHash("sha256").update(accessToken).digest("base64url");
    const input = `${part({ typ: "dpop+jwt", alg: "ES256", jwk })}.${part(claims)}`;
    const signed = sign("sha256", Buffer.from(input), {
      key: key.privateKey,
      dsaEncoding: "ieee-p1363",
    });
    return `${input}.${signed.toString("base64url")}`;
  };
  const response = await fetch(`${idp}/token`, {
    method: "POST",
    headers: {
      authorization: `Basic ${Buffer.from("agent:agent-secret").toString("base64")}`,
      "content-type": "application/x-www-form-urlencoded",
      dpop: proof("POST", `${idp}/token`),
    },
    body: new URLSearchParams({ grant_type: "client_credentials", resource: origin, scope: "mcp" }),
  });
  const issued = await response.json();
  assert.equal(issued.token_type, "DPoP", JSON.stringify(issued));
  const bound = issued.access_token;
  tokens.push(bound);
  const withProof = (made) => ({ authorization: `DPoP ${bound}`, dpop: made });
  const fresh = proof("POST", url, bound);
  assert.equal((await post(bound, withProof(fresh))).status, 200);
  step("a DPoP-bound token works with a fresh proof");
  assert.equal((await post(bound, withProof(fresh))).status, 401, "a replayed proof");
  assert.equal((await post(bound)).status, 401, "as a bearer token");
  assert.equal((await post(bound, { authorization: `DPoP ${bound}` })).status, 401, "no proof");
  assert.equal((await post(bound, withProof(proof("POST", `${origin}/mcp/other`, bound)))).status,
    401, "a proof for another URL");
  assert.equal((await post(bound, withProof(proof("GET", url, bound)))).status, 401,
    "a proof for another method");
  assert.equal((await post(bound, withProof(proof("POST", url, "another token")))).status, 401,
    "a proof for another token");
  step("a DPoP-bound token is refused with a replayed proof, one for another URL or method, or none");
}

// An opaque token: the switchboard asks the issuer about it (RFC 7662), then remembers the
// answer; one the issuer never issued is refused.
{
  const opaque = await tokenFor(origin, "mcp", "opaque-agent");
  assert.equal(opaque.split(".").length, 1, "an opaque token");
  assert.equal((await post(opaque)).status, 200);
  assert.equal((await post(opaque)).status, 200, "again, from what the issuer said");
  const madeUp = await post("an-opaque-token-nobody-issued");
  assert.equal(madeUp.status, 401);
  assert.match(madeUp.headers.get("www-authenticate"), /error="invalid_token"/);
  step("an opaque token is taken by introspection, a made-up one refused");
}

// The authorization server stopped: the keys already fetched still check a valid token.
const beforeStop = await tokenFor(origin);
process.kill(-Number(idpPid), "SIGTERM");
await new Promise((resolve) => setTimeout(resolve, 200));
await assert.rejects(fetch(`${idp}/jwks`), "the authorization server is down");
assert.equal((await post(beforeStop)).status, 200);
step("with the authorization server stopped, a valid token still works");

// The authorization server back with its keys rotated: its new tokens are taken once the
// switchboard has fetched the new set, which a token naming the unknown key makes it do.
{
  const { spawn } = await import("node:child_process");
  const { existsSync } = await import("node:fs");
  const portFile = `${runDir}/idp-rotated.port`;
  const rotated = spawn(
    process.execPath,
    [`${runDir}/idp.mjs`, "--port-file", portFile, "--port", new URL(idp).port, "--kid", "sign-2"],
    { stdio: "ignore", detached: true },
  );
  try {
    for (let wait = 0; !existsSync(portFile) && wait < 100; wait++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const fresh = await tokenFor(origin);
    assert.equal(JSON.parse(Buffer.from(fresh.split(".")[0], "base64url")).kid, "sign-2");
    let status = 0;
    for (let tries = 0; tries < 50 && status !== 200; tries++) {
      status = (await post(fresh)).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.equal(status, 200, "a token of the rotated key is taken");
    step("a key rotation at the authorization server is followed without a restart");
  } finally {
    process.kill(-rotated.pid, "SIGTERM");
  }
}

// Nothing of any token is in the audit or the log.
const written = readFileSync(`${runDir}/audit.jsonl`, "utf8") +
  readFileSync(`${runDir}/switchboard.log`, "utf8");
for (const token of tokens) {
  assert.ok(token && !written.includes(token.split(".")[2]), "a token in the audit or log");
}
assert.ok(written.includes("client_auth_fail"), "refusals are audited");
const calls = readFileSync(`${runDir}/audit.jsonl`, "utf8")
  .split("\n")
  .filter((line) => line.includes('"event":"call"'))
  .map((line) => JSON.parse(line));
const signedIn = calls.find((line) => line.tool === "test_simple_text");
assert.ok(signedIn, "the tool call is audited");
assert.equal(signedIn.principal, "agent");
assert.equal(signedIn.issuer, idp);
assert.equal(signedIn.subject, "agent");
step("no token in the audit or the log, the call audited with its issuer and subject");

console.log(`oauth: ${steps.join(", ")}`);
