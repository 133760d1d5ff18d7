// ---- The mcpx runtime: the same in every generated client. ----
//
// Names with a "$" are private; no generated name has one. The header
// names, media types, event names and problem types are the API contract's
// (package wire), filled in when the client is generated.

/** A content block of a tool result (MCP server/tools: text, image, ...). */
export type ContentBlock = { type: string; [key: string]: unknown };

/**
 * The child's CallToolResult, unchanged. structuredContent is typed by the
 * tool's outputSchema where it declares one. A tool that ran and failed is
 * a result with isError: true, not an McpxError.
 */
export type CallToolResult<S = { [key: string]: unknown }> = {
  content: ContentBlock[];
  structuredContent?: S;
  isError?: boolean;
  _meta?: { [key: string]: unknown };
  [key: string]: unknown;
};

/** The params of one progress notification (MCP basic/utilities/progress). */
export type Progress = {
  progressToken: string | number;
  progress: number;
  total?: number;
  message?: string;
};

/**
 * A child's request for input during a call (an elicitation form, or a
 * sampling request): answer it with onInput.
 */
export type InputRequest = {
  call: string;
  input: string;
  kind: "elicitation" | "sampling";
  message?: string;
  /** The elicitation's mode: "form" (answer with content) or "url" (answered by onUrl). */
  mode?: "form" | "url";
  requestedSchema?: { [key: string]: unknown };
  /** A URL-mode elicitation's URL, for the user to open. */
  url?: string;
  /** A URL-mode elicitation's id, as its onElicitationComplete names it. */
  elicitationId?: string;
  params: { [key: string]: unknown };
  expires: string;
};

/** A log message (MCP notifications/message) of the instance a call runs on. */
export type LogMessage = { server: string; level: string; logger?: string; data: unknown };

/** The answer to an InputRequest: content, with "accept", matches its requestedSchema. */
export type InputAnswer = {
  action: "accept" | "decline" | "cancel";
  content?: { [key: string]: unknown } | undefined;
};

/**
 * Where the broker is and what this program declares about itself. Each
 * field overrides the environment for one call.
 */
export type Connection = {
  /** The broker's URL. Default: $MCPX_URL, else the local daemon record's url. */
  url?: string | undefined;
  /** The bearer token. Default: $MCPX_TOKEN, else the daemon record's token (sent only to the record's own address). */
  token?: string | undefined;
  /** The working directory declared to the broker (Mcpx-Cwd); it picks repo, worktree and cwd scoped instances. Default: the process's. */
  cwd?: string | undefined;
  /** The session (Mcpx-Session). Default: $MCPX_SESSION_ID. */
  session?: string | undefined;
  /** The parent session (Mcpx-Parent-Session). Default: $MCPX_PARENT_SESSION_ID. */
  parentSession?: string | undefined;
  /** The lease (Mcpx-Lease) pid-scoped instances live by. Default: $MCPX_LEASE (set by `mcpx lease run`). */
  lease?: string | undefined;
  /** A scope asked for instead of the server's (Mcpx-Scope); its scopePolicy must allow it. Default: $MCPX_SCOPE. */
  scope?: string | undefined;
};

/** Options of one tool call. */
export type CallOptions = Connection & {
  /** Called with each progress notification of the call, in order; the call is streamed. */
  onProgress?: ((p: Progress) => void) | undefined;
  /**
   * Answers the child's requests for input (elicitation, sampling); the call is streamed. Without it a
   * streamed call declines them. A throw, or an answer the broker refuses, declines.
   */
  onInput?: ((req: InputRequest) => InputAnswer | Promise<InputAnswer>) | undefined;
  /**
   * Answers a URL-mode elicitation (req.mode "url"): show the user req.url and return "accept" once they
   * agree to open it, or "decline" / "cancel"; the call is streamed. Without it a URL is declined; onInput
   * is never asked about one.
   */
  onUrl?: ((req: InputRequest) => InputAnswer["action"] | Promise<InputAnswer["action"]>) | undefined;
  /** Called when the server says the interaction at a URL of this call is done (notifications/elicitation/complete). */
  onElicitationComplete?: ((e: { server: string; elicitationId: string }) => void) | undefined;
  /** Called with each log message the call's instance sends while the call runs; the call is streamed. */
  onMessage?: ((m: LogMessage) => void) | undefined;
  /** Aborting it cancels the call: the broker cancels the child's request. */
  signal?: $AbortSignal | undefined;
  /** Cancel the call after this many milliseconds (an McpxError of kind "timeout"). */
  timeoutMs?: number | undefined;
};

/** A problem document (RFC 9457) as the broker answers errors with. */
export type Problem = {
  type: string;
  title: string;
  status: number;
  detail: string;
  server?: string | undefined;
  field?: string | undefined;
  stderrTail?: string | undefined;
  rpcCode?: number | undefined;
  retryAfter?: number | undefined;
  /** The limit that refused a rate-limited call (429). */
  limit?: { kind: string; value: string } | undefined;
};

/**
 * A failed call: the broker's problem document, with the server and tool
 * called. kind is the problem type's last segment ("not-found",
 * "bad-request", "timeout", "canceled", ...); a call that never reached the
 * broker has kind "unreachable" and status 0.
 */
export class McpxError extends Error {
  readonly type: string;
  readonly kind: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly server?: string | undefined;
  readonly tool?: string | undefined;
  readonly field?: string | undefined;
  readonly stderrTail?: string | undefined;
  readonly rpcCode?: number | undefined;
  readonly retryAfter?: number | undefined;
  readonly limit?: { kind: string; value: string } | undefined;

  constructor(p: Problem, tool?: string, cause?: unknown) {
    super((p.server && tool ? `${p.server}.${tool}: ` : "") + p.detail, cause === undefined ? undefined : { cause });
    this.name = "McpxError";
    this.type = p.type;
    this.kind = p.type.startsWith(@@ProblemTypeBase@@) ? p.type.slice(@@ProblemTypeBase@@.length) : p.type;
    this.title = p.title;
    this.status = p.status;
    this.detail = p.detail;
    this.server = p.server;
    this.tool = tool;
    this.field = p.field;
    this.stderrTail = p.stderrTail;
    this.rpcCode = p.rpcCode;
    this.retryAfter = p.retryAfter;
    this.limit = p.limit;
  }
}

/** The level of a log record. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** A record's attributes: JSON values beside its msg. */
export type LogAttrs = { [key: string]: unknown };

/** Writes log records; log is one, and with gives more. */
export type Logger = {
  debug(msg: string, attrs?: LogAttrs): void;
  info(msg: string, attrs?: LogAttrs): void;
  warn(msg: string, attrs?: LogAttrs): void;
  error(msg: string, attrs?: LogAttrs): void;
  /** A logger whose records carry attrs too; a record's own attributes win, then the innermost with's. */
  with(attrs: LogAttrs): Logger;
};

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
  b: { url: string; headers: { [name: string]: string } }): Promise<CallToolResult<S>> {
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
    // W3C trace context: `mcpx run --trace` starts a trace and sets it.
    ["traceparent", $env("TRACEPARENT")],
  ];
  for (const [name, value] of declared) if (value) headers[name] = value;
}

/**
 * Calls any tool of any server by name, untyped: for tools added after the
 * client was generated. The generated functions are the typed way.
 */
export function callTool<S = { [key: string]: unknown }>(server: string, tool: string, args?: { [key: string]: unknown },
  options?: CallOptions): Promise<CallToolResult<S>> {
  return $callTool<S>(server, tool, args, options, "", "");
}

// $headers are a request's headers: what it accepts, the token, the
// browser guard's header and the caller context o declares.
function $headers(o: Connection, b: { token?: string | undefined }, accept: string): { [name: string]: string } {
  const headers: { [name: string]: string } = {
    Accept: accept,
    // The browser guard: network listeners refuse requests without it.
    [@@HeaderClient@@]: "mcpx-ts",
  };
  if (b.token) headers[@@HeaderAuthorization@@] = `Bearer ${b.token}`;
  $declare(o, headers);
  return headers;
}

// $callTool makes one call: POST the arguments, read the result (streamed
// when there is a progress callback), and turn every failure into an
// McpxError. list names the tool list the client was generated from, and
// hash is the tool's schemas' hash in it, sent so the broker refuses the
// call (stale-client) if the tool's schemas changed since ("" for callTool:
// no check).
async function $callTool<S>(server: string, tool: string, args: unknown, o: CallOptions | undefined, list: string,
  hash: string): Promise<CallToolResult<S>> {
  o ??= {};
  const b = await $broker(o, server, tool);
  const headers = $headers(o, b, o.onProgress || o.onInput || o.onUrl || o.onMessage ? @@MediaEventStream@@ : @@MediaJSON@@);
  headers["Content-Type"] = @@MediaJSON@@;
  if (hash) headers[@@HeaderToolHash@@] = hash;

  const ctl = new $web.AbortController();
  let why: "canceled" | "timeout" | undefined;
  const onAbort = () => {
    why ??= "canceled";
    ctl.abort();
  };
  if (o.signal?.aborted) onAbort();
  else o.signal?.addEventListener("abort", onAbort, { once: true });
  const timer = o.timeoutMs === undefined ? undefined : $web.setTimeout(() => {
    why ??= "timeout";
    ctl.abort();
  }, o.timeoutMs);
  const started = Date.now();
  let outcome = "error";
  const path = @@CallToolPattern@@.replace("{server}", encodeURIComponent(server)).replace("{tool}", encodeURIComponent(tool));
  try {
    const res = await $web.fetch(b.url + path, { method: "POST", headers, body: JSON.stringify(args ?? {}), signal: ctl.signal });
    if (!res.ok) {
      if (res.status === 401) $recordCache = undefined; // a restarted daemon has a new token
      throw await $problem(res, server, tool, list);
    }
    let result: CallToolResult<S>;
    if ((res.headers.get("Content-Type") ?? "").startsWith(@@MediaEventStream@@)) {
      const answerHeaders: { [name: string]: string } = { "Content-Type": @@MediaJSON@@, [@@HeaderClient@@]: "mcpx-ts" };
      if (b.token) answerHeaders[@@HeaderAuthorization@@] = `Bearer ${b.token}`;
      result = await $events<S>(res, o, server, tool, { url: b.url, headers: answerHeaders });
    } else {
      result = (await res.json()) as CallToolResult<S>;
    }
    outcome = result.isError ? "isError" : "ok";
    return result;
  } catch (e) {
    if (e instanceof McpxError) outcome = e.kind;
    else if (why) outcome = why;
    if (e instanceof $CallbackError) throw e.error;
    if (e instanceof McpxError && why === undefined) throw e;
    if (why === "canceled") {
      throw new McpxError({ type: @@ProblemTypeBase@@ + @@KindCanceled@@, title: "Canceled", status: @@StatusCanceled@@, server,
        detail: "the call was aborted; the broker cancels the child's request" }, tool, e);
    }
    if (why === "timeout") {
      throw new McpxError({ type: @@ProblemTypeBase@@ + @@KindTimeout@@, title: "Timed out", status: @@StatusTimeout@@, server,
        detail: `no answer within ${o.timeoutMs} ms; the call was cancelled` }, tool, e);
    }
    throw $unreachable(`cannot reach the broker at ${b.url}: ${e instanceof Error ? e.message : String(e)}`, server, tool, e);
  } finally {
    $web.clearTimeout(timer);
    o.signal?.removeEventListener("abort", onAbort);
    $report({ server, tool, ms: Date.now() - started, outcome });
  }
}

/**
 * A tool call running as a task (MCP tasks): the broker's Task document.
 * Its id is good only for the caller that started it.
 */
export type Task = {
  id: string;
  server: string;
  tool: string;
  /** working and input_required go on; completed, failed and cancelled are final. */
  status: "working" | "input_required" | "completed" | "failed" | "cancelled";
  statusMessage?: string | undefined;
  created?: string | undefined;
  updated?: string | undefined;
  /** How long the task is kept after its creation, as a Go duration ("5m0s"). */
  ttl?: string | undefined;
  /** How often the server suggests asking for its status, as a Go duration. */
  pollInterval?: string | undefined;
};

// $task makes one request of the task routes and answers its JSON body.
async function $task<T>(method: string, path: string, o: Connection | undefined, server: string, tool: string,
  body?: unknown): Promise<T> {
  o ??= {};
  const b = await $broker(o, server, tool);
  const headers: { [name: string]: string } = { "Content-Type": @@MediaJSON@@, [@@HeaderClient@@]: "mcpx-ts" };
  if (b.token) headers[@@HeaderAuthorization@@] = `Bearer ${b.token}`;
  if (body !== undefined) $declare(o, headers);
  let res: $Response;
  try {
    res = await $web.fetch(b.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw $unreachable(`cannot reach the broker at ${b.url}: ${e instanceof Error ? e.message : String(e)}`, server, tool, e);
  }
  if (!res.ok) {
    if (res.status === 401) $recordCache = undefined;
    throw await $problem(res, server, tool, "");
  }
  return (await res.json()) as T;
}

const $taskPath = (id: string) => @@GetTaskPattern@@.replace("{id}", encodeURIComponent(id));

/**
 * Calls a tool as a task: answers its Task as soon as the server created
 * it (the tool's execution.taskSupport must be optional or required);
 * taskResult waits for the result.
 */
export function callToolAsTask(server: string, tool: string, args?: { [key: string]: unknown },
  options?: Connection): Promise<Task> {
  const path = @@CallToolPattern@@.replace("{server}", encodeURIComponent(server)).replace("{tool}", encodeURIComponent(tool));
  return $task<Task>("POST", path + "?" + @@QueryTask@@ + "=true", options, server, tool, args ?? {});
}

/** One of this caller's tasks, its status asked of the server while it works. */
export function getTask(id: string, options?: Connection): Promise<Task> {
  return $task<Task>("GET", $taskPath(id), options, "", "");
}

/** This caller's tasks, newest first. */
export async function listTasks(options?: Connection): Promise<Task[]> {
  return (await $task<{ tasks: Task[] }>("GET", @@ListTasksPattern@@, options, "", "")).tasks;
}

/** Waits until one of this caller's tasks has ended and answers its result. */
export function taskResult<S = { [key: string]: unknown }>(id: string, options?: Connection): Promise<CallToolResult<S>> {
  return $task<CallToolResult<S>>("GET", @@TaskResultPattern@@.replace("{id}", encodeURIComponent(id)), options, "", "");
}

/** Cancels one of this caller's tasks: answers the task after (cancelled). */
export function cancelTask(id: string, options?: Connection): Promise<Task> {
  return $task<Task>("DELETE", $taskPath(id), options, "", "");
}

// $request sends one request of the API's own (not a tool call) for
// server and answers its JSON body (or, with accept, its text), or throws
// an McpxError.
async function $request(method: string, path: string, server: string, what: string, body: unknown,
  o: Connection | undefined, accept?: string): Promise<unknown> {
  o ??= {};
  const b = await $broker(o, server, what);
  const headers = $headers(o, b, accept ?? @@MediaJSON@@);
  if (body !== undefined) headers["Content-Type"] = @@MediaJSON@@;
  const url = b.url + path.replace("{server}", encodeURIComponent(server));
  let res: $Response;
  try {
    res = await $web.fetch(url, body === undefined ? { method, headers } : { method, headers, body: JSON.stringify(body) });
  } catch (e) {
    throw $unreachable(`cannot reach the broker at ${b.url}: ${e instanceof Error ? e.message : String(e)}`, server, what, e);
  }
  if (!res.ok) throw await $problem(res, server, what, "");
  if (res.status === 204) return undefined;
  return accept === undefined ? res.json() : res.text();
}

// ---- The run: what a script knows of itself, and the broker's listings. ----

/** A lease: the lifetime of the run's pid-scoped instances (mcpx run holds one and renews it). */
export type Lease = { id: string; key: string; ttl: string; expires: string };

/** One search hit: a tool, with what each term scored. */
export type ToolHit = { server: string; name: string; score: number; [key: string]: unknown };

/** Every server's tool count, then tool signatures within a token budget (as `mcpx catalog` prints it). */
export type Catalog = {
  budget: number; used: number;
  servers: { server: string; tools: number; shown: number }[];
  signatures: { server: string; name: string; text: string; cost: number }[];
  [key: string]: unknown;
};

function $query(params: { [name: string]: string | number | undefined }): string {
  const q = Object.entries(params).filter(([, v]) => v !== undefined && v !== "")
    .map(([k, v]) => encodeURIComponent(k) + "=" + encodeURIComponent(String(v)));
  return q.length ? "?" + q.join("&") : "";
}

/**
 * The run this script is: its session and lease (mcpx run's, from $MCPX_SESSION_ID and $MCPX_LEASE; "" outside a
 * run), and the broker's listings as `mcpx types`, `mcpx search` and `mcpx catalog` print them, for this caller.
 */
export const mcpx = {
  /** The run's session: its session-scoped instances are the run's own. */
  get session(): string { return $env("MCPX_SESSION_ID") ?? ""; },
  /** The session of whoever started the run (the agent's). */
  get parentSession(): string { return $env("MCPX_PARENT_SESSION_ID") ?? ""; },
  lease: {
    /** The run's lease id; "" when it has none. */
    get id(): string { return $env("MCPX_LEASE") ?? ""; },
    /** Renews the run's lease for its own ttl, or for ttl (a Go duration, "5m"); answers it renewed. */
    async renew(ttl?: string, options?: Connection): Promise<Lease> {
      const id = $env("MCPX_LEASE") ?? "";
      if (id === "") throw new McpxError({ type: @@ProblemTypeBase@@ + "bad-request", title: "no lease", status: 400,
        detail: "this script holds no lease: $MCPX_LEASE is empty (mcpx run gives each run one)" });
      return await $request("POST", @@RenewLeasePattern@@.replace("{lease}", encodeURIComponent(id)), "", "lease",
        ttl === undefined ? {} : { ttl }, options) as Lease;
    },
  },
  /** The TypeScript declarations of a server's tools, or of one tool, with the server's instructions. */
  async types(server: string, tool?: string, options?: Connection): Promise<string> {
    return await $request("GET", @@TypesPattern@@ + $query({ server, tool }), server, "types", undefined, options,
      @@MediaTypeScript@@) as string;
  },
  /** Searches every server's tools by name, tag, server and description; best first. */
  async search(terms: string, options?: Connection): Promise<ToolHit[]> {
    const doc = await $request("GET", @@ListToolsPattern@@ + $query({ q: terms }), "", "search", undefined, options) as
      { hits: ToolHit[] };
    return doc.hits;
  },
  /** Every server with its tool count, then tool signatures within budget tokens (default the broker's). */
  async catalog(budget?: number, options?: Connection): Promise<Catalog> {
    return await $request("GET", @@CatalogPattern@@ + $query({ budget }), "", "catalog", undefined, options) as Catalog;
  },
};

/** A resource template of a server (MCP ResourceTemplate): read a URI made from it with its variables filled in. */
export type ResourceTemplate = { uriTemplate: string; name: string; title?: string; description?: string; mimeType?: string;
  [key: string]: unknown };

/** Lists a server's resource templates. */
export async function listResourceTemplates(server: string, options?: Connection): Promise<ResourceTemplate[]> {
  const doc = await $request("GET", @@ListResourceTemplatesPattern@@, server, "resources/templates", undefined, options) as
    { resourceTemplates: ResourceTemplate[] };
  return doc.resourceTemplates;
}

/** What complete completes: a prompt's argument, or a resource template's variable (MCP completion/complete params). */
export type CompleteRequest = {
  ref: { type: "ref/prompt"; name: string } | { type: "ref/resource"; uri: string };
  argument: { name: string; value: string };
  context?: { arguments?: { [name: string]: string } };
};

/** The server's completions (MCP CompleteResult). */
export type CompleteResult = { completion: { values: string[]; total?: number; hasMore?: boolean }; [key: string]: unknown };

/** Asks a server to complete a prompt's argument or a resource template's variable. */
export async function complete(server: string, req: CompleteRequest, options?: Connection): Promise<CompleteResult> {
  return await $request("POST", @@CompletePattern@@, server, "complete", req, options) as CompleteResult;
}

/**
 * Sets the level of the log messages (MCP logging/setLevel) of the server's instance in this caller's scope; a
 * streamed call's onMessage gets them. An instance has one level: callers sharing it share the last one set.
 */
export async function setLogLevel(server: string, level: string, options?: Connection): Promise<void> {
  await $request("POST", @@SetLogLevelPattern@@, server, "logging", { level }, options);
}

// ---- Resources: a read, and a subscription as an async iterator. ----

/**
 * The child's ReadResourceResult, unchanged: each content has text, or
 * blob (the bytes, base64), with its MIME type and _meta as the child gave
 * them.
 */
export type ReadResourceResult = {
  contents: { uri: string; mimeType?: string; text?: string; blob?: string; _meta?: { [key: string]: unknown }; [key: string]: unknown }[];
  _meta?: { [key: string]: unknown };
  [key: string]: unknown;
};

/** The params of a child's notifications/resources/updated: the resource that changed. */
export type ResourceUpdated = { uri: string; title?: string; [key: string]: unknown };

/** Options of a resource read or subscription. */
export type ResourceOptions = Connection & {
  /** Aborting it ends the read, or the subscription (which unsubscribes). */
  signal?: $AbortSignal | undefined;
};

// $resourceFetch GETs one of a server's resource routes for uri.
async function $resourceFetch(pattern: string, server: string, uri: string, o: ResourceOptions, accept: string,
  signal?: $AbortSignal): Promise<$Response> {
  const b = await $broker(o, server, "");
  const url = b.url + pattern.replace("{server}", encodeURIComponent(server)) + "?uri=" + encodeURIComponent(uri);
  const init: { method: string; headers: { [name: string]: string }; signal?: $AbortSignal } = { method: "GET", headers: $headers(o, b, accept) };
  if (signal) init.signal = signal;
  let res: $Response;
  try {
    res = await $web.fetch(url, init);
  } catch (e) {
    if (signal?.aborted) throw e;
    throw $unreachable(`cannot reach the broker at ${b.url}: ${e instanceof Error ? e.message : String(e)}`, server, "", e);
  }
  if (!res.ok) {
    if (res.status === 401) $recordCache = undefined; // a restarted daemon has a new token
    throw await $problem(res, server, "", "");
  }
  return res;
}

/** Reads one resource of a server, as the child in the caller's scope answers it. */
export async function readResource(server: string, uri: string, options?: ResourceOptions): Promise<ReadResourceResult> {
  const o = options ?? {};
  const res = await $resourceFetch(@@ReadResourcePattern@@, server, uri, o, @@MediaJSON@@, o.signal);
  return (await res.json()) as ReadResourceResult;
}

/**
 * Subscribes to one resource of a server: yields each update the child
 * sends of it, until the loop stops (break, return, a throw) or the signal
 * aborts, which unsubscribes. Callers subscribed to a URI on one instance
 * share one child subscription. When the server's instance stops, it
 * throws an McpxError of kind "unavailable" saying so: subscribe again.
 *
 *   for await (const u of subscribeResource("everything", uri)) console.log(u.uri);
 */
export async function* subscribeResource(server: string, uri: string, options?: ResourceOptions):
  AsyncGenerator<ResourceUpdated, void, undefined> {
  const o = options ?? {};
  const ctl = new $web.AbortController();
  const onAbort = () => ctl.abort();
  if (o.signal?.aborted) return;
  o.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const res = await $resourceFetch(@@SubscribeResourcePattern@@, server, uri, o, @@MediaEventStream@@, ctl.signal);
    for await (const { name, data } of $sse(res)) {
      if (name === @@EventUpdated@@) {
        yield JSON.parse(data) as ResourceUpdated;
      } else if (name === @@EventEnd@@) {
        const why = (JSON.parse(data) as { reason?: string }).reason ?? "the subscription ended";
        throw new McpxError({ type: @@ProblemTypeBase@@ + @@KindUnavailable@@, title: "Subscription ended", status: 503, server,
          detail: `the subscription to ${uri} ended: ${why}` });
      }
    }
  } catch (e) {
    if (ctl.signal.aborted && !(e instanceof McpxError)) return; // aborted: the caller's own doing
    throw e;
  } finally {
    o.signal?.removeEventListener("abort", onAbort);
    ctl.abort(); // closes the stream: the broker unsubscribes
  }
}
