// A script written against a generated client (client.ts: every corpus
// server, plus servers whose names are the runtime's own). It must
// type-check, and every line after a @ts-expect-error must not.
import { demo, everything, shapes, fetch_2, log_2, log, McpxError, type CallToolResult, type Progress } from "./client.ts";

export async function main(): Promise<void> {
  const echoed: CallToolResult = await demo.echo({ message: "hi" });
  log.info("echoed", { content: echoed.content.length });
  // @ts-expect-error message is a string
  await demo.echo({ message: 5 });
  // @ts-expect-error message is required
  await demo.echo({});
  // @ts-expect-error arguments are required when the schema requires members
  await demo.echo();

  const sum = await demo.add({ a: 1, b: 2 });
  const n: number | undefined = sum.structuredContent?.sum;
  // @ts-expect-error structuredContent is typed by the outputSchema
  const s: string | undefined = sum.structuredContent?.sum;

  await demo.cwd(); // no required members: the arguments may be left out
  // @ts-expect-error a root $ref requires name
  await shapes.byRef();
  await shapes.byRef({ name: "x" });
  // @ts-expect-error an allOf member requires id
  await shapes.byAllOf();
  // @ts-expect-error every oneOf branch requires kind
  await shapes.byOneOf();
  await shapes.byOneOf({ kind: "a" });
  // @ts-expect-error every anyOf branch requires a member (not the same one)
  await shapes.byAnyOf();
  await shapes.loose(); // one anyOf branch requires nothing
  const listed = await shapes.listOut();
  // @ts-expect-error a non-object outputSchema does not type structuredContent (MCP makes it an object)
  const xs: number[] | undefined = listed.structuredContent;
  const ctl = new AbortController();
  const seen: Progress[] = [];
  await demo.progress({ steps: 2 }, { onProgress: (p) => seen.push(p), signal: ctl.signal, timeoutMs: 1000, cwd: "/" });
  // @ts-expect-error no such option
  await demo.progress({ steps: 2 }, { onProgres: () => {} });

  try {
    await everything.echo({ message: "x" });
  } catch (e) {
    if (e instanceof McpxError) {
      const k: string = e.kind;
      const st: number = e.status;
      log.error("failed", { k, st, detail: e.detail, server: e.server, tool: e.tool });
    }
  }
  // The runtime's names stay the runtime's: the servers took others.
  const f: Promise<Response> = fetch("http://127.0.0.1:1/");
  await fetch_2.get_({}); // a reserved word gets a "_"
  await log_2.write({});
  void n, s, f, xs;
}
