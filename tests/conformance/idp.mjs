// A real OAuth 2.1 authorization server for the sign-in tests (docs/auth.md): the npm
// package oidc-provider, issuing RFC 9068 JWT access tokens (ES256) by the
// client-credentials grant, for the audience a token request names (RFC 8707), bound to a
// key when the request carries a DPoP proof (RFC 9449).
//
//   node idp.mjs --port-file FILE [--port N] [--kid ID]
//
// Its signing key is new at every start (`kid` ID, "sign-1" by default): started again on
// the same port, it is the same issuer with its keys rotated.
// It listens on a free loopback port and writes it to FILE once listening. Its clients:
// `agent` (secret `agent-secret`) may ask for the scopes `mcp` and `other`; `opaque-agent`
// gets opaque tokens, which `switchboard` (secret `switchboard-secret`) may introspect;
// `stranger` (secret `stranger-secret`), whom no switchboard client is, asks for `mcp`.
import { generateKeyPairSync } from "node:crypto";
import { renameSync, writeFileSync } from "node:fs";
import http from "node:http";
import { parseArgs } from "node:util";
import Provider from "oidc-provider";

const { values: args } = parseArgs({
  options: {
    "port-file": { type: "string" },
    port: { type: "string" },
    kid: { type: "string" },
  },
});
if (!args["port-file"]) {
  console.error("usage: node idp.mjs --port-file FILE [--port N] [--kid ID]");
  process.exit(2);
}

const server = http.createServer();
await new Promise((listening) => server.listen(Number(args.port ?? 0), "127.0.0.1", listening));
const { port } = server.address();
const issuer = `http://127.0.0.1:${port}`;
const signing = generateKeyPairSync("ec", { namedCurve: "P-256" })
  .privateKey.export({ format: "jwk" });

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: "agent",
      client_secret: "agent-secret",
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      id_token_signed_response_alg: "ES256",
      scope: "mcp other",
    },
    {
      // Its tokens live two seconds: long enough to be used once, then seen expired.
      client_id: "brief-agent",
      client_secret: "brief-agent-secret",
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      id_token_signed_response_alg: "ES256",
      scope: "mcp",
    },
    {
      client_id: "opaque-agent",
      client_secret: "opaque-agent-secret",
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      id_token_signed_response_alg: "ES256",
      scope: "mcp",
    },
    {
      client_id: "switchboard",
      client_secret: "switchboard-secret",
      grant_types: [],
      redirect_uris: [],
      response_types: [],
      id_token_signed_response_alg: "ES256",
    },
    {
      client_id: "stranger",
      client_secret: "stranger-secret",
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      id_token_signed_response_alg: "ES256",
      scope: "mcp",
    },
  ],
  scopes: ["mcp", "other"],
  jwks: { keys: [{ ...signing, kid: args.kid ?? "sign-1", alg: "ES256", use: "sig" }] },
  features: {
    clientCredentials: { enabled: true },
    // A token request with a DPoP proof gets a token bound to the proof's key (RFC 9449).
    dPoP: { enabled: true },
    // Opaque tokens are checked by asking (RFC 7662), by the switchboard's own client only.
    introspection: {
      enabled: true,
      allowedPolicy: (_ctx, client) => client.clientId === "switchboard",
    },
    devInteractions: { enabled: false },
    resourceIndicators: {
      enabled: true,
      // A token request that names no resource gets none this switchboard would take.
      defaultResource: () => "urn:no-resource-named",
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource, client) => ({
        scope: "mcp other",
        audience: resource,
        accessTokenTTL: client.clientId === "brief-agent" ? 2 : 300,
        accessTokenFormat: client.clientId === "opaque-agent" ? "opaque" : "jwt",
        jwt: { sign: { alg: "ES256" } },
      }),
    },
  },
});
provider.on("server_error", (_ctx, error) => console.error(`idp: ${error.message}`));
server.on("request", provider.callback());

writeFileSync(`${args["port-file"]}.tmp`, `${port}\n`);
renameSync(`${args["port-file"]}.tmp`, args["port-file"]);
console.error(`idp: ${issuer}`);
