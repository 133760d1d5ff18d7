// A client of the official TypeScript SDK over stdio: it spawns the
// bridge (argv[3], with argv[4...]), declares roots and elicitation,
// lists the tools, calls echo, ask (elicitation) and roots, and prints
// one JSON line of what it saw. argv[2] is the SDK's dist/esm directory.
const [sdk, command, ...args] = process.argv.slice(2);
const { Client } = await import(`${sdk}/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/client/stdio.js`);
const { ListRootsRequestSchema, ElicitRequestSchema } = await import(`${sdk}/types.js`);

const client = new Client({ name: "ts-client", version: "1" },
  { capabilities: { roots: { listChanged: true }, elicitation: {} } });
client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///src/ts" }] }));
client.setRequestHandler(ElicitRequestSchema, async (req) =>
  ({ action: "accept", content: { answer: "ts to " + req.params.message } }));
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
await client.connect(transport);
const text = (r) => r.content.map((c) => c.text).join("");
const tools = (await client.listTools()).tools.map((t) => t.name).sort();
const echo = text(await client.callTool({ name: "echo", arguments: { text: "hi" } }));
const ask = text(await client.callTool({ name: "ask", arguments: { text: "" } }));
const roots = text(await client.callTool({ name: "roots", arguments: { text: "" } }));
console.log(JSON.stringify({ version: client.getServerVersion()?.name, tools, echo, ask, roots }));
await client.close();
