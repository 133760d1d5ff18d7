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
