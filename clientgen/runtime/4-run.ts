
// ---- The run: what a script knows of itself, and the broker's listings. ----

/** A lease: the lifetime of the run's pid-scoped instances (mcpx run holds one and renews it). */
export type Lease = { id: string; key: string; ttl: string; expires: string };

/**
 * A session's record (GET /v1/sessions/{key}, as `mcpx sessions show` prints it): the run's session: key, or its
 * lease: key, with its running instances. A session has a record from its first instance on.
 */
export type SessionRecord = {
  key: string; scope: string; name?: string;
  /** Its own idle timeout (a Go duration); absent = each server's. */
  idleTimeout?: string;
  creator: { name: string; via: string; owner: boolean; host?: string; cwd?: string };
  created: string; lastUsed: string; calls: number;
  instances: { id: string; server: string; key: string; root: string; state: string; pid?: number; calls: number;
    [key: string]: unknown }[];
  [key: string]: unknown;
};

// $ownSession finds the record of the caller's own session id under prefix ("session:" or "lease:") among the
// sessions the broker lists for this caller: the broker keys an owner's id as sent ("@"-led ids get one more "@"),
// another caller's as <prefix>@<via>:<name>/<id> (docs/scopes.md); undefined when it has no running instance.
async function $ownSession(prefix: string, id: string, o: Connection | undefined): Promise<SessionRecord | undefined> {
  const doc = await $request("GET", @@ListSessionsPattern@@, "", "sessions", undefined, o) as
    { sessions: SessionRecord[] };
  const own = prefix + (id.startsWith("@") ? "@" + id : id);
  return doc.sessions.find((s) => s.key === own) ?? doc.sessions.find((s) => {
    const rest = s.key.startsWith(prefix + "@") ? s.key.slice(prefix.length) : "";
    return rest.endsWith("/" + id) && !rest.slice(0, rest.length - id.length - 1).includes("/");
  });
}

// $sessionOf is the run's session (prefix "session:") or lease ("lease:") as mcpx.session and mcpx.lease show it.
function $sessionOf(prefix: string, env: string, what: string) {
  const id = (): string => {
    const v = $env(env) ?? "";
    if (v === "") throw new McpxError({ type: @@ProblemTypeBase@@ + "bad-request", title: `no ${what}`, status: 400,
      detail: `this script has no ${what}: $${env} is empty (mcpx run gives each run one)` });
    return v;
  };
  return {
    /** Its record, or null while it has no running instance (no call yet reached a server of its scope). */
    async info(options?: Connection): Promise<SessionRecord | null> {
      return (await $ownSession(prefix, id(), options)) ?? null;
    },
    /**
     * Sets its own idle timeout (a Go duration, "30m"; "0" returns to each server's), as `mcpx sessions set --idle`
     * does; answers the record. It needs a running instance: call a server of its scope first.
     */
    async idle(timeout: string, options?: Connection): Promise<SessionRecord> {
      const s = await $ownSession(prefix, id(), options);
      if (s === undefined) throw new McpxError({ type: @@ProblemTypeBase@@ + "not-found", title: `no ${what} record`,
        status: 404, detail: `the run's ${what} ${id()} has no running instance yet: its record begins with its first ` +
          `instance (call a server of its scope first)` });
      return await $request("PATCH", @@SetSessionPattern@@.replace("{key}", encodeURIComponent(s.key)), "", "sessions",
        { idleTimeout: timeout }, options) as SessionRecord;
    },
  };
}

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
  /**
   * The run's session: its session-scoped instances are the run's own. `id` is it ("" outside a run; the object
   * prints as it), `info()` its record, `idle(timeout)` sets its own idle timeout.
   */
  session: {
    get id(): string { return $env("MCPX_SESSION_ID") ?? ""; },
    toString(): string { return $env("MCPX_SESSION_ID") ?? ""; },
    ...$sessionOf("session:", "MCPX_SESSION_ID", "session"),
  },
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
    /** The record of the lease's session (its lease: key: the run's pid-scoped instances), as session.info. */
    ...$sessionOf("lease:", "MCPX_LEASE", "lease"),
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
