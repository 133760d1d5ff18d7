// A script using a client (client.ts) generated before its server changed
// (the test reloads the demo server with add removed and echo's schema
// changed). It prints one JSON line: what each call gave.
import { demo, McpxError } from "./client.ts";

type Outcome = { ok?: unknown; kind?: string; status?: number; server?: string; tool?: string; message?: string; other?: string };

async function outcome(p: Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: await p };
  } catch (e) {
    if (e instanceof McpxError) return { kind: e.kind, status: e.status, server: e.server, tool: e.tool, message: e.message };
    return { other: String(e) };
  }
}

console.log(JSON.stringify({
  removed: await outcome(demo.add({ a: 1, b: 2 })),
  changed: await outcome(demo.echo({ message: "hi" })),
  unchanged: await outcome(demo.pid()),
}));
