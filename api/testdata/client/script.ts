// A script using a generated client (client.ts), run by the api tests with
// node, deno and bun. It prints one JSON line of results, then
// "ready-to-abort", waits for a line on stdin, aborts a long call, and
// prints the abort's outcome.
import { demo, wt, callTool, log, McpxError, type Progress } from "./client.ts";

type Outcome = { ok?: unknown; kind?: string; status?: number; server?: string; tool?: string; message?: string; other?: string };

async function outcome(p: Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: await p };
  } catch (e) {
    if (e instanceof McpxError) return { kind: e.kind, status: e.status, server: e.server, tool: e.tool, message: e.message };
    return { other: String(e) };
  }
}

const text = (r: { content: { type: string; [key: string]: unknown }[] }) => r.content[0]?.text;

const results: { [key: string]: unknown } = {};
results.echo = text(await demo.echo({ message: "hi" }));
results.sum = (await demo.add({ a: 2, b: 3 })).structuredContent?.sum;
const progress: Progress[] = [];
results.progressResult = text(await demo.progress({ steps: 3 }, { onProgress: (p) => progress.push(p) }));
results.progress = progress.map((p) => p.progress);
results.worktree = text(await wt.cwd());
// The demo's ask tool elicits a form; onInput answers it.
const asked: string[] = [];
results.ask = text(await demo.ask({ question: "who?" }, {
  onInput: (req) => {
    asked.push(`${req.kind}:${req.message}`);
    return { action: "accept", content: { name: "Ada" } };
  },
}));
results.asked = asked;
results.unknownServer = await outcome(callTool("nope", "echo", { message: "x" }));
results.unknownTool = await outcome(callTool("demo", "nope", {}));
// A child that refuses arguments with JSON-RPC -32602 is an McpxError; a
// child that validates against its schema answers isError (MCP tools).
results.badArguments = await outcome(demo.strict({ n: 0 }));
results.schemaViolation = (await demo.echo({ message: 5 } as unknown as demo.EchoInput)).isError;
results.badToken = await outcome(demo.echo({ message: "x" }, { token: "wrong" }));
results.timeout = await outcome(demo.sleep({ ms: 60000 }, { timeoutMs: 100 }));
log.info("logged", { n: 1 });
console.log(JSON.stringify(results));

// The abort: the test says when the child is sleeping.
const ctl = new AbortController();
const sleeping = outcome(demo.sleep({ ms: 60000 }, { signal: ctl.signal }));
console.log("ready-to-abort");
await readLine();
ctl.abort();
console.log(JSON.stringify({ aborted: await sleeping }));

async function readLine(): Promise<void> {
  const g = globalThis as unknown as {
    Deno?: { stdin: { readable: ReadableStream<Uint8Array> } };
    process?: { stdin: { once(ev: string, f: () => void): void; pause(): void } };
  };
  if (g.Deno) {
    const r = g.Deno.stdin.readable.getReader();
    await r.read();
    r.releaseLock();
    return;
  }
  await new Promise<void>((resolve) => g.process?.stdin.once("data", () => {
    g.process?.stdin.pause();
    resolve();
  }));
}
