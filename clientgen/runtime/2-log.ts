
/**
 * Structured logging to stderr, one JSON object a line, so a script's
 * output (stdout) and its log never mix:
 * {"time", "level", "msg", "template"?, ...attributes}. A {name} in msg is
 * replaced by the attribute name, and the message as written is kept as
 * template. An attribute named like a field of the record (time, level,
 * msg, template, source) is written as "attr.<name>". Records below
 * $MCPX_LOG_LEVEL (debug, info, warn, error; default info) are dropped
 * before they are encoded. Records at $MCPX_LOG_SOURCE and above (default
 * warn; off for none) carry source, the caller's file:line:column. Logging never throws: a record whose attributes
 * do not encode is written without them, saying why in logError.
 */
export const log: Logger = $logger({});

function $logger(bound: LogAttrs): Logger {
  // A block, not a tail call, so that the method's frame stays on the
  // stack where $log counts it (JavaScriptCore drops tail callers).
  const at = (level: LogLevel) => (msg: string, attrs?: LogAttrs): void => {
    $log(level, msg, bound, attrs);
  };
  return {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    with: (attrs: LogAttrs): Logger => $logger({ ...bound, ...attrs }),
  };
}

const $levels: { [level: string]: number } = { debug: 0, info: 1, warn: 2, error: 3 };
const $recordFields = ["time", "level", "msg", "template", "source"];
let $threshold: number | undefined;
let $sourceFrom: number | undefined;

function $log(level: LogLevel, msg: string, bound: LogAttrs, attrs: LogAttrs | undefined): void {
  if ($threshold === undefined) {
    $threshold = $levels[($env("MCPX_LOG_LEVEL") ?? "info").toLowerCase()] ?? $levels["info"];
    const from = ($env("MCPX_LOG_SOURCE") ?? "warn").toLowerCase();
    $sourceFrom = from === "off" ? Infinity : $levels[from] ?? $levels["warn"];
  }
  if ($levels[level] < $threshold) return;
  const all: LogAttrs = attrs === undefined ? bound : { ...bound, ...attrs };
  const rec: LogAttrs = { time: new Date().toISOString(), level, msg };
  let filled = false;
  const text = msg.replace(/\{([A-Za-z_$][\w$.-]*)\}/g, (whole: string, name: string): string => {
    if (!Object.prototype.hasOwnProperty.call(all, name)) return whole;
    filled = true;
    const v = all[name];
    return typeof v === "string" ? v : JSON.stringify(v) ?? String(v);
  });
  if (filled) {
    rec["msg"] = text;
    rec["template"] = msg;
  }
  if ($levels[level] >= ($sourceFrom ?? Infinity)) {
    const where = $caller(new Error().stack);
    if (where !== undefined) rec["source"] = where;
  }
  const head = { ...rec };
  for (const k of Object.keys(all)) rec[$recordFields.includes(k) ? "attr." + k : k] = all[k];
  let line: string;
  try {
    line = JSON.stringify(rec);
  } catch (e) {
    // Logging never throws: attributes that do not encode (a cycle, a
    // BigInt, a throwing toJSON) are left out, and the reason said.
    line = JSON.stringify({ ...head, logError: "attributes not encoded: " + String(e) });
  }
  $stderr(line);
}

/** One stack frame: the function ("" for top-level code), the file and position, and whether it awaits. */
export type Frame = { function: string; file: string; line: number; column: number; async: boolean };

// $frames parses a stack's frames (V8's and JavaScriptCore's shared
// "    at fn (file:line:col)" form, deno's file:// URLs included), mapped
// to the sources first when a harness registered the mapping.
function $frames(stack: string | undefined): Frame[] {
  if (stack === undefined) return [];
  const map = (globalThis as unknown as { [key: symbol]: unknown })[Symbol.for("mcpx.stack")];
  if (typeof map === "function") stack = String(map(stack));
  const out: Frame[] = [];
  for (const l of stack.split("\n")) {
    const m = /^\s*at (async )?(?:(.*?) \()?((?:file:\/\/)?[^\s()]+):(\d+):(\d+)\)?\s*$/.exec(l);
    if (!m) continue;
    out.push({ function: m[2] ?? "", file: decodeURI(m[3]!.replace(/^file:\/\//, "")), line: Number(m[4]),
      column: Number(m[5]), async: m[1] !== undefined });
  }
  return out;
}

/**
 * The frames of the calling code's stack, innermost first: skip of them left out after the caller's own, at most
 * limit (default all). Files and lines are the script's, mapped through the bundle's source map on every runtime.
 */
export function captureFrames(skip = 0, limit = Infinity): Frame[] {
  return $frames(new Error().stack).slice(1 + skip, 1 + skip + limit);
}

/** An error's frames, as captureFrames gives them; the error itself is left as it is (String(err) unchanged). */
export function errorFrames(err: unknown): Frame[] {
  return err instanceof Error ? $frames(err.stack) : [];
}

// $caller is the file:line:column of the frame that called the logger's
// method, from a stack taken in $log: the frames are $log's, the method's,
// then the caller's. A harness may map the stack's bundle positions to the
// sources first (the function under Symbol.for("mcpx.stack")).
function $caller(stack: string | undefined): string | undefined {
  if (stack === undefined) return undefined;
  const map = (globalThis as unknown as { [key: symbol]: unknown })[Symbol.for("mcpx.stack")];
  if (typeof map === "function") stack = String(map(stack));
  const frame = stack.split("\n").filter((l) => /^\s*at /.test(l))[2];
  const m = frame === undefined ? null : /((?:file:\/\/)?[^\s()]+):(\d+):(\d+)\)?\s*$/.exec(frame);
  return m ? decodeURI(m[1]!.replace(/^file:\/\//, "")) + ":" + m[2] + ":" + m[3] : undefined;
}

// The web APIs the runtime uses, typed here as far as it uses them, so that
// the module type-checks with any lib setting (es2022 without DOM, with or
// without @types/node) and a user's own fetch or AbortSignal types fit.
type $AbortSignal = {
  readonly aborted: boolean;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
};
type $Response = {
  readonly ok: boolean;
  readonly status: number;
  readonly statusText: string;
  readonly headers: { get(name: string): string | null };
  readonly body: {
    getReader(): { read(): Promise<{ done: boolean; value?: Uint8Array | undefined }>; cancel(): Promise<void> };
  } | null;
  text(): Promise<string>;
  json(): Promise<unknown>;
};
type $Web = {
  fetch(url: string, init: { method: string; headers: { [name: string]: string }; body?: string | undefined; signal?: $AbortSignal }):
    Promise<$Response>;
  URL: new (url: string) => { readonly port: string; readonly hostname: string };
  TextDecoder: new () => { decode(input?: Uint8Array, options?: { stream?: boolean }): string };
  AbortController: new () => { readonly signal: $AbortSignal; abort(): void };
  setTimeout(f: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
  console: { error(line: string): void };
};
const $web = globalThis as unknown as $Web;
// $stderr writes a record's line: with console.error, which writes to
// stderr on Node, Deno and Bun alike, or the function a harness installs
// under Symbol.for("mcpx.write") (mcpx run's launcher, whose console
// members write records themselves).
function $stderr(line: string): void {
  const write = (globalThis as unknown as { [key: symbol]: unknown })[Symbol.for("mcpx.write")];
  if (typeof write === "function") write(line);
  else $web.console.error(line);
}

// The host runtime: Deno, or Node and Bun (process).
type $Host = {
  Deno?: {
    env: { get(name: string): string | undefined };
    cwd(): string;
    readTextFile(path: string): Promise<string>;
  };
  process?: { env: { [name: string]: string | undefined }; cwd(): string };
};
const $host = globalThis as unknown as $Host;

function $env(name: string): string | undefined {
  try {
    if ($host.Deno) return $host.Deno.env.get(name) || undefined;
  } catch {
    return undefined; // deno run without --allow-env
  }
  return $host.process?.env[name] || undefined;
}

function $cwd(): string | undefined {
  try {
    return $host.Deno ? $host.Deno.cwd() : $host.process?.cwd();
  } catch {
    return undefined; // deno run without --allow-read
  }
}

async function $readFile(path: string): Promise<string> {
  if ($host.Deno) return $host.Deno.readTextFile(path);
  const fsModule = "node:fs/promises"; // a variable: type-checks without @types/node
  const fs = await import(fsModule);
  return fs.readFile(path, "utf8");
}

// The local daemon's record: $XDG_STATE_HOME/mcpx/daemon.json, else
// ~/.local/state/mcpx/daemon.json.
function $recordPath(): string | undefined {
  const state = $env("XDG_STATE_HOME");
  if (state?.startsWith("/")) return `${state}/mcpx/${@@RecordFile@@}`;
  const home = $env("HOME");
  return home ? `${home}/.local/state/mcpx/${@@RecordFile@@}` : undefined;
}

type $Record = { url?: string | undefined; token?: string | undefined };
let $recordCache: Promise<$Record | undefined> | undefined;

function $record(): Promise<$Record | undefined> {
  $recordCache ??= (async () => {
    const path = $recordPath();
    if (!path) return undefined;
    try {
      return JSON.parse(await $readFile(path)) as $Record;
    } catch {
      return undefined;
    }
  })();
  return $recordCache;
}

// $sameAddress reports whether two URLs name the same loopback port:
// localhost, 127.0.0.1 and [::1] are one.
function $sameAddress(a: string, b: string): boolean {
  try {
    const ua = new $web.URL(a), ub = new $web.URL(b);
    const loop = (h: string) => h === "localhost" || h === "[::1]" || h.startsWith("127.");
    return ua.port === ub.port && (ua.hostname === ub.hostname || (loop(ua.hostname) && loop(ub.hostname)));
  } catch {
    return false;
  }
}

function $unreachable(detail: string, server: string, tool: string, cause?: unknown): McpxError {
  return new McpxError({ type: "unreachable", title: "Broker unreachable", status: 0, detail, server }, tool, cause);
}

async function $broker(o: Connection, server: string, tool: string): Promise<{ url: string; token?: string | undefined }> {
  let url = o.url ?? $env("MCPX_URL");
  let token = o.token ?? $env("MCPX_TOKEN");
  if (!url || !token) {
    const rec = await $record();
    if (!url) {
      if (!rec?.url) {
        throw $unreachable(`no broker: set MCPX_URL and MCPX_TOKEN, or start the local daemon (mcpx serve), ` +
          `whose record ${$recordPath() ?? @@RecordFile@@} has its url and token`, server, tool);
      }
      url = rec.url;
      token ??= rec.token;
    } else if (!token && rec?.url && rec.token && $sameAddress(rec.url, url)) {
      token = rec.token; // a token is sent only to the address it belongs to
    }
  }
  return { url: url.replace(/\/+$/, ""), token };
}

async function $problem(res: $Response, server: string, tool: string, list: string): Promise<McpxError> {
  let p: Partial<Problem> | undefined;
  const text = await res.text().catch(() => "");
  try {
    p = JSON.parse(text) as Partial<Problem>;
  } catch {
    p = undefined;
  }
  if (!p || typeof p !== "object" || typeof p.detail !== "string" || !p.detail) {
    p = { title: res.statusText, detail: `${res.status} ${res.statusText}: ${text.slice(0, 200)}`.trim() };
  }
  const kindOf = (t?: string) => t?.startsWith(@@ProblemTypeBase@@) ? t.slice(@@ProblemTypeBase@@.length) : t;
  let detail = p.detail ?? "";
  if (list && kindOf(p.type) === @@KindNotFound@@ && (!p.server || p.server === server)) {
    detail += ` (this client was generated from ${list}: if ${server}.${tool} is gone or renamed, regenerate it with \`mcpx clientgen ts\`)`;
  } else if (list && kindOf(p.type) === @@KindStaleClient@@) {
    detail += ` (this client of ${server}.${tool} is stale: it was generated from ${list})`;
  }
  return new McpxError({
    ...p,
    type: p.type ?? "about:blank",
    title: p.title ?? res.statusText,
    status: p.status || res.status,
    detail,
    server: p.server || server,
  } as Problem, tool);
}

// $CallbackError carries an exception thrown by an onProgress callback out
// of the stream reader, to be rethrown as it was.
class $CallbackError {
  readonly error: unknown;
  constructor(error: unknown) {
    this.error = error;
  }
}

// $answer sends the answer to a request for input; an onInput that throws,
// or an answer the broker refuses, declines (the broker declines on its own
// if even that fails).
async function $answer(b: { url: string; headers: { [name: string]: string } }, req: InputRequest,
  o: CallOptions): Promise<void> {
  const onInput = o.onInput;
  const post = (ans: InputAnswer) => $web.fetch(b.url + @@AnswerInputPattern@@.replace("{call}", encodeURIComponent(req.call)),
    { method: "POST", headers: b.headers, body: JSON.stringify({ ...ans, input: req.input }) });
  let ans: InputAnswer = { action: "decline" };
  try {
    if (req.mode === "url") ans = { action: o.onUrl ? await o.onUrl(req) : "decline" };
    else if (onInput) ans = await onInput(req);
  } catch {
    ans = { action: "decline" };
  }
  try {
    const res = await post(ans);
    if (res.status === 400 && ans.action !== "decline") await post({ action: "decline" });
  } catch {
    // the call is over
  }
}

// $sse reads a server-sent event stream: each event's name and data, in
// order, keep-alive comments skipped; the reader is cancelled when the
// consumer stops.
async function* $sse(res: $Response): AsyncGenerator<{ name: string; data: string }, void, undefined> {
  if (!res.body) return;
  const reader = res.body.getReader();
  const decoder = new $web.TextDecoder();
  let buf = "", event = "", data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        let line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.endsWith("\r")) line = line.slice(0, -1);
        if (line === "") {
          const ev = { name: event, data: data.join("\n") };
          event = "";
          data = [];
          if (ev.name || ev.data) yield ev;
          continue;
        }
        if (line.startsWith(":")) continue; // a keep-alive comment
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

// $events reads a streamed call: the call's id, progress and input events,
// then one result or error.
async function $events<S>(res: $Response, o: CallOptions, server: string, tool: string,
  b: { url: string; headers: { [name: string]: string } }, onContext: (c: LogAttrs) => void): Promise<CallToolResult<S>> {
  if (!res.body) throw $unreachable("the broker's stream has no body", server, tool);
  for await (const { name, data: payload } of $sse(res)) {
    if (name === @@EventProgress@@ && o.onProgress) {
      try {
        o.onProgress(JSON.parse(payload) as Progress);
      } catch (e) {
        throw new $CallbackError(e);
      }
    } else if (name === @@EventInput@@) {
      void $answer(b, JSON.parse(payload) as InputRequest, o);
    } else if (name === @@EventMessage@@) {
      o.onMessage?.(JSON.parse(payload) as LogMessage);
    } else if (name === @@EventElicitationComplete@@) {
      o.onElicitationComplete?.(JSON.parse(payload) as { server: string; elicitationId: string });
    } else if (name === @@EventContext@@) {
      onContext($callContext(payload));
    } else if (name === @@EventResult@@) {
      return JSON.parse(payload) as CallToolResult<S>;
    } else if (name === @@EventError@@) {
      const p = JSON.parse(payload) as Problem;
      throw new McpxError({ ...p, server: p.server || server }, tool);
    }
  }
  throw new McpxError({ type: @@ProblemTypeBase@@ + @@KindChildFailed@@, title: "Stream ended", status: 502, server,
    detail: "the broker's event stream ended without a result" }, tool);
}

// $report tells a runner about one finished call: mcpx run installs a
// function under the global symbol "mcpx.call" before it imports a script,
// and lists the calls in its --json envelope. Without a runner, nothing.
type $CallReport = { server: string; tool: string; ms: number; outcome: string };
function $report(r: $CallReport): void {
  const hook = (globalThis as unknown as { [k: symbol]: ((r: $CallReport) => void) | undefined })[Symbol.for("mcpx.call")];
  try {
    hook?.(r);
  } catch {
    // a runner's failure never fails the call
  }
}

// $declare sets the caller-context headers o (or the environment) declares.
function $declare(o: Connection, headers: { [name: string]: string }): void {
  const declared: [string, string | undefined][] = [
    [@@HeaderCwd@@, o.cwd ?? $cwd()],
    [@@HeaderSession@@, o.session ?? $env("MCPX_SESSION_ID")],
    [@@HeaderParentSession@@, o.parentSession ?? $env("MCPX_PARENT_SESSION_ID")],
    [@@HeaderLease@@, o.lease ?? $env("MCPX_LEASE")],
    [@@HeaderScope@@, o.scope ?? $env("MCPX_SCOPE")],
    [@@HeaderScopeFrom@@, (o.scope ?? $env("MCPX_SCOPE")) ? "script" : undefined],
    // W3C trace context: `mcpx run --trace` starts a trace and sets it.
    ["traceparent", $env("TRACEPARENT")],
  ];
  for (const [name, value] of declared) if (value) headers[name] = value;
}
