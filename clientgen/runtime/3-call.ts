
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
  let daemon: LogAttrs = {};
  const path = @@CallToolPattern@@.replace("{server}", encodeURIComponent(server)).replace("{tool}", encodeURIComponent(tool));
  try {
    const res = await $web.fetch(b.url + path, { method: "POST", headers, body: JSON.stringify(args ?? {}), signal: ctl.signal });
    daemon = $callContext(res.headers.get(@@HeaderCallContext@@));
    if (!res.ok) {
      if (res.status === 401) $recordCache = undefined; // a restarted daemon has a new token
      throw await $problem(res, server, tool, list);
    }
    let result: CallToolResult<S>;
    if ((res.headers.get("Content-Type") ?? "").startsWith(@@MediaEventStream@@)) {
      const answerHeaders: { [name: string]: string } = { "Content-Type": @@MediaJSON@@, [@@HeaderClient@@]: "mcpx-ts" };
      if (b.token) answerHeaders[@@HeaderAuthorization@@] = `Bearer ${b.token}`;
      result = await $events<S>(res, o, server, tool, { url: b.url, headers: answerHeaders }, (c) => {
        daemon = c; // a streamed call's context comes as an event, not a header
      });
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
    const ms = Date.now() - started;
    $report({ server, tool, ms, outcome });
    // The call's record: the daemon's context of the call (its layer,
    // outermost), then the call's own attributes; the run adds its
    // fields after (session, pid, cwd, …).
    $log("debug", "call {server}.{tool}: {outcome}", daemon, { server, tool, ms, outcome });
  }
}

// $callContext is the daemon's context of a call, from its answer's
// @@HeaderCallContext@@ header or a stream's @@EventContext@@ event
// (server, tool, scope, key, instance, and config for the owner): {}
// without one.
function $callContext(header: string | null): LogAttrs {
  if (!header) return {};
  try {
    const v: unknown = JSON.parse(header);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as LogAttrs) : {};
  } catch {
    return {};
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
