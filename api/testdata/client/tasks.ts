// Tasks through the generated client, run by api's TestTypeScriptClientTasks
// against server-everything: it prints one JSON object of what it saw.
import { callToolAsTask, cancelTask, getTask, listTasks, McpxError, taskResult } from "./client.ts";

const out: { [key: string]: unknown } = {};
const t = await callToolAsTask("everything", "simulate-research-query", { topic: "reef" });
out.id = t.id;
out.created = t.status;
out.listed = (await listTasks()).some((x) => x.id === t.id);
out.got = (await getTask(t.id)).id === t.id;
const r = await taskResult(t.id);
out.result = r.content.filter((c) => c.type === "text").map((c) => String(c.text)).join("");
const t2 = await callToolAsTask("everything", "simulate-research-query", { topic: "dropped" });
out.cancelled = (await cancelTask(t2.id)).status;
try {
  await getTask("task-nope");
  out.missing = "answered";
} catch (e) {
  out.missing = e instanceof McpxError ? `${e.kind}: ${e.detail}` : String(e);
}
console.log(JSON.stringify(out));
