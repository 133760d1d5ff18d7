// A real MCP client signing in to mcpx's public face with OAuth: the
// official TypeScript SDK's client and its OAuth provider interface,
// identified by a Client ID Metadata Document (clientMetadataUrl), driven
// by api's TestPublicSignInTypeScriptCIMD. Usage:
//   node mcp-ts-oauth.mjs <https url of /mcp> <https url of the client's metadata document>
// It listens for its redirect on a loopback port and prints, one a line:
//   callback <redirect URI>      (before anything else: the document lists it)
//   authorize <URL>              (where the person's browser is sent)
//   result <JSON>                (what it saw; the Go test judges it)
import http from "node:http";
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [mcpURL, metadataURL] = process.argv.slice(2);
const out = { authorizations: 0 };
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

// The redirect: the browser comes back here with the code.
let callback;
const server = http.createServer((req, res) => {
  const u = new URL(req.url, "http://127.0.0.1");
  res.writeHead(u.pathname === "/callback" ? 200 : 404, { "Content-Type": "text/plain" });
  res.end("You may close this window.");
  if (u.pathname === "/callback") callback?.(u.searchParams);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const redirectUrl = `http://127.0.0.1:${server.address().port}/callback`;
console.log("callback " + redirectUrl);

// The OAuth client provider: everything in memory.
const store = {};
const provider = {
  get redirectUrl() { return redirectUrl; },
  clientMetadataUrl: metadataURL,
  get clientMetadata() {
    return {
      client_name: "TS SDK CIMD test", redirect_uris: [redirectUrl], token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"], response_types: ["code"],
    };
  },
  state() { return (store.state = randomBytes(16).toString("hex")); },
  clientInformation() { return store.client; },
  saveClientInformation(c) { store.client = c; },
  tokens() { return store.tokens; },
  saveTokens(t) { store.tokens = t; },
  saveCodeVerifier(v) { store.verifier = v; },
  codeVerifier() { return store.verifier; },
  invalidateCredentials(scope) {
    if (scope === "all" || scope === "tokens") delete store.tokens;
    if (scope === "all" || scope === "client") delete store.client;
  },
  redirectToAuthorization(u) {
    out.authorizations++;
    if (out.authorizations === 1) console.log("authorize " + u.href);
  },
};

const connect = async () => {
  const client = new Client({ name: "ts-oauth-test", version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
  await client.connect(transport);
  return { client, transport };
};
const connectOrSignIn = async () => {
  try {
    return { ...(await connect()), first: "connected" };
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    return { first: "unauthorized" };
  }
};

try {
  // 1. Not signed in: the SDK discovers the server, sends the browser to
  // the authorization page, and the connect fails Unauthorized.
  const came = new Promise((r) => (callback = r));
  const first = await connectOrSignIn();
  out.first = first.first;
  const params = await came;
  out.iss = params.get("iss");
  out.stateMatches = params.get("state") === store.state;
  out.callbackError = params.get("error");
  const transport = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
  await transport.finishAuth(params.get("code"));
  out.clientId = store.client?.client_id;

  // 2. Signed in: list and call tools.
  let { client } = await connect();
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  out.echo = text(await client.callTool({ name: "demo__echo", arguments: { message: "signed in by CIMD" } }));
  await client.close();

  // 3. The access token goes bad: the SDK refreshes it, by the same client id.
  const rt = store.tokens.refresh_token;
  store.tokens = { ...store.tokens, access_token: "no-longer-good" };
  ({ client } = await connect());
  out.refreshed = store.tokens.access_token !== "no-longer-good" && store.tokens.refresh_token !== rt;
  out.echoAfterRefresh = text(await client.callTool({ name: "demo__echo", arguments: { message: "refreshed" } }));
  await client.close();

  // 4. The client revokes its token (RFC 7009): the sign-in is over, and
  // the next connect needs a new authorization.
  const revoke = await fetch(new URL("/revoke", mcpURL), {
    method: "POST", body: new URLSearchParams({ token: store.tokens.access_token, client_id: metadataURL }),
  });
  out.revokeStatus = revoke.status;
  out.afterRevoke = (await connectOrSignIn()).first;
} catch (e) {
  out.error = String(e?.stack || e);
}
console.log("result " + JSON.stringify(out));
server.close();
process.exit(0);
