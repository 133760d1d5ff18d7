// Tasks through mcpx's /mcp endpoint with the official TypeScript SDK
// client, driven by api's TestMCPTasksTypeScriptSDKClient. Usage:
//   node mcp-ts-tasks.mjs <url> <tokenA> <tokenB>
// Caller A runs server-everything's task-only tool as a task to its
// result, starts a second task and cancels it from a new connection;
// caller B tries A's task id on every tasks/* method. It prints one JSON
// object of what it saw; the Go test judges it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateTaskResultSchema, TaskStatusNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, tokenA, tokenB] = process.argv.slice(2);
const tool = "everything__simulate-research-query";
const out = {};
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

async function connect(token) {
  const client = new Client({ name: "ts-sdk-tasks", version: "1" }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: "Bearer " + token } },
  });
  await client.connect(transport);
  client.end = async () => {
    await transport.terminateSession();
    await client.close();
  };
  return client;
}
async function refused(p) {
  try {
    await p;
    return "answered";
  } catch (e) {
    return String(e.message || e);
  }
}

const a = await connect(tokenA);
out.notified = [];
a.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
  out.notified.push(n.params.taskId + " " + n.params.status);
});
out.capabilities = a.getServerCapabilities().tasks || null;
const tools = await a.listTools();
out.taskSupport = tools.tools.find((t) => t.name === tool)?.execution?.taskSupport || "";

// The SDK's own task flow: create, poll tasks/get, tasks/result.
out.stream = [];
for await (const m of a.experimental.tasks.callToolStream({ name: tool, arguments: { topic: "coral" } })) {
  out.stream.push(m.type);
  if (m.type === "taskCreated") out.taskId = m.task.taskId;
  if (m.type === "result") out.result = text(m.result);
  if (m.type === "error") out.error = String(m.error);
}

// A second task, cancelled later.
const created = await a.request(
  { method: "tools/call", params: { name: tool, arguments: { topic: "private" }, task: { ttl: 60000 } } },
  CreateTaskResultSchema,
);
const id = created.task.taskId;
out.secondId = id;

const b = await connect(tokenB);
out.bGet = await refused(b.experimental.tasks.getTask(id));
out.bResult = await refused(b.experimental.tasks.getTaskResult(id));
out.bCancel = await refused(b.experimental.tasks.cancelTask(id));
out.bList = (await b.experimental.tasks.listTasks()).tasks.map((t) => t.taskId);
await b.end();

out.aList = (await a.experimental.tasks.listTasks()).tasks.map((t) => t.taskId);
await a.end();

// A again, on a new connection: the task outlived the first one.
const a2 = await connect(tokenA);
out.a2Status = (await a2.experimental.tasks.getTask(id)).status;
out.a2Cancel = (await a2.experimental.tasks.cancelTask(id)).status;
out.a2After = (await a2.experimental.tasks.getTask(id)).status;
await a2.end();

process.stdout.write(JSON.stringify(out));
