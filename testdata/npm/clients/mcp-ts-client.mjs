// A real MCP client for mcpx's /mcp endpoint: the official TypeScript SDK,
// driven by api's TestMCPTypeScriptSDKClient (Streamable HTTP) and
// cmd/mcpx's TestMCPBridgeTypeScriptClient (the `mcpx mcp` bridge over
// stdio). Usage:
//   node mcp-ts-client.mjs <url> <token> <worktree1> <worktree2>
//   node mcp-ts-client.mjs stdio:<command> - <worktree1> <worktree2>
// It prints one JSON object of what it saw; the Go test judges it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [url, token, wt1, wt2] = process.argv.slice(2);
let root = wt1;
const out = {};
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

const client = new Client(
  { name: "ts-sdk-test", version: "1" },
  { capabilities: { roots: { listChanged: true }, elicitation: {}, sampling: {} } },
);
client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file://" + root, name: "wt" }] }));
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Ada" } }));
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
  role: "assistant", model: "test-model", content: { type: "text", text: "sampled by the client" },
}));

const stdio = url.startsWith("stdio:");
const transport = stdio
  ? new StdioClientTransport({ command: url.slice(6), args: ["mcp"], env: process.env, stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: "Bearer " + token } },
  });
await client.connect(transport);
out.protocol = stdio ? "stdio" : transport.protocolVersion;
out.session = stdio || Boolean(transport.sessionId);

const tools = await client.listTools();
out.tools = tools.tools.map((t) => t.name);
out.cwd1 = text(await client.callTool({ name: "demo__cwd" }));

// Steps 30 ms apart: the SDK runs notification handlers a microtask
// later but a response at once, so a progress notification read in the
// same chunk as the response finds its handler gone ("unknown token").
let progress = 0;
out.progress = text(await client.callTool(
  { name: "demo__progress", arguments: { steps: 3, delayMs: 30 } },
  undefined,
  { onprogress: () => progress++ },
));
out.progressCount = progress;

out.ask = text(await client.callTool({ name: "demo__ask", arguments: { question: "who?" } }));
out.sample = text(await client.callTool({ name: "everything__trigger-sampling-request", arguments: { prompt: "hi", maxTokens: 5 } }));

const ac = new AbortController();
const pending = client.callTool({ name: "demo__sleep", arguments: { ms: 600000 } }, undefined, { signal: ac.signal });
setTimeout(() => ac.abort(), 300);
try {
  await pending;
  out.aborted = false;
} catch (e) {
  out.aborted = true;
}

out.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
out.greet = (await client.getPrompt({ name: "demo__greet", arguments: { name: "Ada" } })).messages.length;
const resources = (await client.listResources()).resources;
out.resources = resources.map((r) => r.uri);
out.read = (await client.readResource({ uri: resources[0].uri })).contents.length;
out.templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);

root = wt2;
await client.sendRootsListChanged();
for (let i = 0; i < 100; i++) {
  out.cwd2 = text(await client.callTool({ name: "demo__cwd" }));
  if (out.cwd2 === wt2) break;
  await new Promise((r) => setTimeout(r, 20));
}
if (!stdio) await transport.terminateSession();
await client.close();
console.log(JSON.stringify(out));
