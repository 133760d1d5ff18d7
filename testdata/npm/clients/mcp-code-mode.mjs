// Code mode through the official TypeScript SDK client: api's
// TestMCPCodeModeTypeScriptSDKClient. Usage:
//   node mcp-code-mode.mjs <url of /mcp?mode=code> <token> <root>
// It lists the tools, searches for adding numbers, runs the signature the
// search answered, and prints one JSON object of what it saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token, root] = process.argv.slice(2);
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
const client = new Client({ name: "ts-sdk-code-mode", version: "1" }, { capabilities: { roots: {} } });
client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file://" + root, name: "root" }] }));
await client.connect(new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: "Bearer " + token } },
}));
const out = {};
out.tools = (await client.listTools()).tools.map((t) => t.name);
const found = await client.callTool({ name: "search", arguments: { query: "add numbers", limit: 3 } });
out.search = text(found);
// The code is the search's first signature, filled in, as a model would write it.
const sig = found.structuredContent.matches[0].signature;
const call = sig.replace(/\(\{.*\}\)$/, "({a: 2, b: 3})");
out.code = "return (" + call + ").structuredContent";
const ran = await client.callTool({ name: "run", arguments: { code: out.code } });
out.run = ran.structuredContent;
out.runText = text(ran);
out.isError = Boolean(ran.isError);
await client.close();
console.log(JSON.stringify(out));
