// A script written against a generated client (client.ts) under a strict
// user's tsconfig: --exactOptionalPropertyTypes and --lib es2022 (no DOM,
// no @types/node). The client must type-check as it is, and an option left
// undefined is accepted where the environment gives the default.
import { demo, log, McpxError, type CallOptions } from "./client.ts";

declare const session: string | undefined;

export async function main(): Promise<void> {
  const opts: CallOptions = { session, timeoutMs: undefined, onProgress: undefined };
  const r = await demo.echo({ message: "hi" }, opts);
  log.info("echoed", { n: r.content.length });
  // @ts-expect-error an optional argument is absent, not undefined
  await demo.progress({ steps: undefined });
  try {
    await demo.cwd();
  } catch (e) {
    if (e instanceof McpxError) log.error(e.detail, { server: e.server ?? "" });
  }
}
