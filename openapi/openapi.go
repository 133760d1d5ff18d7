package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/wire"
)

// Version is the OpenAPI version of the documents.
const Version = "3.1.0"

// BearerScheme is the name of the bearer-token security scheme.
const BearerScheme = "bearerAuth"

// mcpSchemas are the MCP types a child's results and lists are passed on
// as, transcribed from the MCP specification's schema.ts (2025-11-25) as
// JSON Schema, keyed by their schema.ts names. They are the protocol's, not a
// Go type's: the go-sdk's structs describe how that SDK encodes them (content
// blocks marshal themselves, some optional members are written always), not
// what every child may send. Objects stay open (MCP adds members over time),
// and a test checks real children's answers against them.
//
//go:embed mcp.json
var mcpJSON []byte

// mcpPrefix names the components of mcpSchemas: "MCPCallToolResult".
const mcpPrefix = "MCP"

func mcpComponent(name string) string { return mcpPrefix + name }

// Options configure Broker.
type Options struct {
	// Version is the daemon's version, the document's info.version;
	// "" = "dev".
	Version string
}

// Broker returns the broker's own OpenAPI 3.1 document, as indented JSON:
// one operation per route of wire.Routes, with the caller-context headers
// as parameters where the route reads them, request and response schemas
// reflected from the route's Go types (the MCP result type for routes that
// pass a child's result through), the event stream of streaming routes,
// one problem+json response per status the route's problem kinds answer
// with, and the security schemes. The same route table and options give
// the same bytes.
func Broker(opts Options) ([]byte, error) {
	doc, err := brokerDoc(opts)
	if err != nil {
		return nil, err
	}
	return encode(doc)
}

func brokerDoc(opts Options) (map[string]any, error) {
	if opts.Version == "" {
		opts.Version = "dev"
	}
	r, err := newMCPReflector()
	if err != nil {
		return nil, err
	}
	paths := map[string]any{}
	tags := map[string]bool{}
	for _, rt := range wire.Routes() {
		op, err := operation(r, rt)
		if err != nil {
			return nil, fmt.Errorf("openapi: route %s (%s %s): %w", rt.Name, rt.Method, rt.Pattern, err)
		}
		tags[tagOf(rt)] = true
		item, _ := paths[rt.Pattern].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.Pattern] = item
		}
		m := strings.ToLower(rt.Method)
		if _, dup := item[m]; dup {
			return nil, fmt.Errorf("openapi: two routes for %s %s", rt.Method, rt.Pattern)
		}
		item[m] = op
	}
	var tagList []any
	for _, t := range slices.Sorted(maps.Keys(tags)) {
		tagList = append(tagList, map[string]any{"name": t, "description": tagDescriptions[t]})
	}
	info := map[string]any{
		"title":       "mcpx broker API",
		"version":     opts.Version,
		"summary":     "The HTTP API of the mcpx daemon, which brokers MCP servers: scoped, pooled children behind one API.",
		"description": infoDescription,
	}
	return assemble(r, info, tagList, paths)
}

// newMCPReflector returns a reflector holding the MCP schemas (mcp.json,
// plus ServerTool) and Problem, which every document may reference.
func newMCPReflector() (*reflector, error) {
	r := newReflector()
	var mcp map[string]any
	if err := json.Unmarshal(mcpJSON, &mcp); err != nil {
		return nil, fmt.Errorf("openapi: the MCP schemas: %w", err)
	}
	for name, s := range mcp {
		r.schemas[mcpComponent(name)] = s
	}
	r.schemas[mcpComponent("ServerTool")] = map[string]any{
		"description": "An MCP Tool as its server lists it, with the broker's server name added as its first member.",
		"allOf": []any{ref(mcpComponent("Tool")), map[string]any{
			"type": "object", "required": []string{"server"},
			"properties": map[string]any{"server": map[string]any{"type": "string", "description": "The configured server that lists the tool."}},
		}},
	}
	if _, err := r.schema(typeProblem); err != nil {
		return nil, err
	}
	return r, nil
}

// assemble makes the document of paths: the caller-context header
// parameters, the security schemes and requirements, and r's components.
// It fails on a $ref that names no component.
func assemble(r *reflector, info map[string]any, tags []any, paths map[string]any) (map[string]any, error) {
	params := map[string]any{}
	for _, h := range wire.CallerHeaders() {
		s := map[string]any{"type": "string"}
		if h.Integer {
			s = map[string]any{"type": "integer", "minimum": 1}
		}
		params[h.Name] = map[string]any{"name": h.Name, "in": "header", "required": false,
			"description": h.Summary, "schema": s}
	}
	params[wire.HeaderClient] = map[string]any{"name": wire.HeaderClient, "in": "header", "required": false,
		"description": "Names the client (any non-empty value, such as `mcpx-cli`). Required on the network listeners (loopback TCP, the tailnet) on every route but /healthz: the browser guard refuses a request without it, since a web page cannot send it cross-site without a preflight that is never answered. Unix-socket callers may omit it.",
		"schema":      map[string]any{"type": "string", "minLength": 1}}
	doc := map[string]any{
		"openapi": Version,
		"info":    info,
		"servers": []any{map[string]any{"url": "/",
			"description": "The daemon this document was fetched from: over its unix socket, or over loopback TCP at the url in its daemon.json."}},
		"tags":     tags,
		"security": []any{map[string]any{BearerScheme: []string{}}, map[string]any{}},
		"x-mcpx-authentication": []any{
			map[string]any{"via": wire.ViaUnix, "description": "The unix socket (mode 0600 in a 0700 directory): the kernel's peer credentials (SO_PEERCRED, LOCAL_PEERPID) must show the daemon's uid; no header is needed. Such a caller is local (its Mcpx-Pid is checked against the peer's process tree) and the owner."},
			map[string]any{"via": wire.ViaTCPLoopback, "scheme": BearerScheme, "description": "Loopback TCP: requests with an Origin header or a non-loopback Host are refused, then the daemon's bearer token is required. The caller is the owner, not local."},
			map[string]any{"via": "tailnet", "description": "The embedded Tailscale node (mcpx serve --tailnet; HTTP on :80, HTTPS on :443 when the tailnet issues a certificate): the caller's identity comes from the tailnet (WhoIs of the peer address) and its rights from the app-capability grant mcpx.dev/cap/broker; no grant, no access. X-Forwarded-For and X-Real-IP are never trusted."},
		},
		"paths": paths,
		"components": map[string]any{
			"schemas":    r.schemas,
			"parameters": params,
			"responses":  r.responses,
			"securitySchemes": map[string]any{BearerScheme: map[string]any{
				"type": "http", "scheme": "bearer",
				"description": "Loopback TCP callers send the daemon's token (random per start; in the token file and daemon.json of the state directory, readable by the daemon's user only) as Authorization: Bearer <token>. Unix-socket callers send none: the alternative {} requirement is theirs, authenticated by peer credentials (see x-mcpx-authentication). A signed token (`mcpx token mint`, a JWT) is accepted the same way on loopback TCP and the tailnet, with the token's rights. Every network listener also requires the Mcpx-Client header (any value naming the client) on every route but /healthz, and refuses requests with an Origin header.",
			}},
		},
	}
	if err := checkRefs(doc, r.schemas, params, r.responses); err != nil {
		return nil, err
	}
	return doc, nil
}

const infoDescription = `mcpx runs MCP servers as pooled child processes, one per server and scope key, and serves them over HTTP.

A caller declares where and who it is with the Mcpx-* caller-context headers on the routes that read them; the broker maps that to a scope key and a root, starts or reuses a child, and forwards the call. Results of tools, resources and prompts are the child's MCP results, unchanged.

Errors are RFC 9457 problem documents (application/problem+json) whose type is ` + wire.ProblemTypeBase + `<kind>, stable per kind; each operation lists the kinds it may answer with. Any route answers method-not-allowed to a method it does not serve, and unauthorized to a TCP request without the token; an unknown path is not-found.

Authentication depends on how the caller connects: see the security schemes and x-mcpx-authentication.`

// tagDescriptions describe the tags, by the first segment of a route's
// path below /v1 (tagOf).
var tagDescriptions = map[string]string{
	"meta":      "The daemon's health and this document",
	"whoami":    "How the broker sees the caller",
	"servers":   "Configured servers and their tools, resources and prompts",
	"tools":     "Every server's tools",
	"clients":   "Generated script clients",
	"instances": "Pooled child instances",
	"daemon":    "Daemon control (admin)",
}

func tagOf(rt wire.Route) string {
	rest, ok := strings.CutPrefix(rt.Pattern, "/v1/")
	if !ok || rest == "openapi.json" {
		return "meta"
	}
	seg, _, _ := strings.Cut(rest, "/")
	return seg
}

// paramDescriptions describe path and query parameters by name.
var paramDescriptions = map[string]string{
	"server":  "A configured server's name.",
	"tool":    "The tool's name, as the server lists it (path-escaped).",
	"prompt":  "The prompt's name, as the server lists it (path-escaped).",
	"id":      "An instance id, as /v1/instances lists it; a token id, as /v1/tokens lists it; a task id, as /v1/tasks lists it.",
	"task":    "true: run the call as a task (the tool's execution.taskSupport must be optional or required) and answer 202 with its Task at once.",
	"uri":     "The resource's URI, as the server lists it.",
	"servers": "Comma-separated server names; absent = every server the caller may use.",
	"lease":   "A lease id, as POST /v1/leases returned it; an admin may name another caller's lease by its namespaced id (<caller>/<id>).",
	"key":     "A session's scope key, as /v1/sessions lists it (session:…, psession:…, lease:…, pid:…), or the name it was given; path-escaped.",
	"session": "A session: its scope key, as /v1/sessions lists it, or the name it was given.",
	"since":   "A duration back from now (1h) or an RFC 3339 time.",
	"level":   "The lowest level: debug, info, warn or error.",
	"follow":  "true or false: whether the stream goes on with what happens next.",
	"tag":     "Select the brokers among the tailnet's peers by this tag; absent = tag:mcpx.",
	"probe":   "true: select the brokers by asking every peer's :80 /healthz instead of by tag.",
	"timeout": "How long each broker has to answer before it is shown unreachable: a Go duration from 100ms to 30s; absent = 2s.",
}

// bodyDescriptions describe request bodies by kind.
var bodyDescriptions = map[wire.BodyKind]string{
	wire.BodyArguments:       "The tool's arguments: a JSON object, passed to the child as they are. An empty body is {}. Nested deeper than limits.maxDepth is refused (bad-request).",
	wire.BodyPromptArguments: "The prompt's arguments: a JSON object of strings. An empty body is {}.",
	wire.BodyDocument:        "A JSON document; absent members keep their defaults. An empty body is {}.",
}

func operation(r *reflector, rt wire.Route) (map[string]any, error) {
	op := map[string]any{
		"operationId": rt.Name,
		"summary":     rt.Summary,
		"tags":        []string{tagOf(rt)},
	}
	params := parameters(rt)
	if rt.Request != nil {
		s, err := r.schema(rt.Request)
		if err != nil {
			return nil, err
		}
		desc, ok := bodyDescriptions[rt.Body]
		if !ok {
			return nil, fmt.Errorf("no description for body kind %q", rt.Body)
		}
		op["requestBody"] = map[string]any{"required": false, "description": desc,
			"content": map[string]any{wire.MediaJSON: map[string]any{"schema": s}}}
	}
	responses, err := successResponses(r, rt)
	if err != nil {
		return nil, err
	}
	if rt.ETag {
		params = append(params, map[string]any{"name": "If-None-Match", "in": "header", "required": false,
			"description": "An ETag from an earlier answer: the answer is 304 with no body while the document is unchanged.",
			"schema":      map[string]any{"type": "string"}})
	}
	if params != nil {
		op["parameters"] = params
	}
	if err := r.problemResponses(rt, responses); err != nil {
		return nil, err
	}
	op["responses"] = responses
	return op, nil
}

// parameters are rt's path, query and header parameters.
func parameters(rt wire.Route) []any {
	var params []any
	for _, name := range pathParams(rt.Pattern) {
		params = append(params, map[string]any{"name": name, "in": "path", "required": true,
			"description": paramDescriptions[name], "schema": map[string]any{"type": "string"}})
	}
	for _, name := range rt.Query {
		params = append(params, map[string]any{"name": name, "in": "query", "required": true,
			"description": paramDescriptions[name], "schema": map[string]any{"type": "string"}})
	}
	for _, name := range rt.OptionalQuery {
		params = append(params, map[string]any{"name": name, "in": "query", "required": false,
			"description": paramDescriptions[name], "schema": map[string]any{"type": "string"}})
	}
	if rt.Name != wire.OpHealthz {
		params = append(params, map[string]any{"$ref": "#/components/parameters/" + wire.HeaderClient})
	}
	if rt.Caller {
		for _, h := range wire.CallerHeaders() {
			params = append(params, map[string]any{"$ref": "#/components/parameters/" + h.Name})
		}
	}
	return params
}

// successResponses are rt's 2xx (and 304) responses, by status.
func successResponses(r *reflector, rt wire.Route) (map[string]any, error) {
	responses := map[string]any{}
	switch {
	case rt.Status == http.StatusNoContent && rt.Response == nil:
		responses["204"] = map[string]any{"description": "Done."}
		return responses, nil
	case rt.Status == http.StatusOK && rt.Response != nil:
	default:
		return nil, fmt.Errorf("status %d with response type %v", rt.Status, rt.Response)
	}
	ok, err := okResponse(r, rt)
	if err != nil {
		return nil, err
	}
	if rt.ETag {
		ok["headers"] = map[string]any{"ETag": map[string]any{
			"description": "The document's entity tag; send it back as If-None-Match to be answered 304 while the document is unchanged.",
			"schema":      map[string]any{"type": "string"}}}
		responses["304"] = map[string]any{"description": "Not modified: the If-None-Match header names the current document's ETag.",
			"headers": map[string]any{"ETag": map[string]any{"description": "The document's entity tag.", "schema": map[string]any{"type": "string"}}}}
	}
	responses["200"] = ok
	if rt.Accepted != nil {
		s, err := r.schema(rt.Accepted)
		if err != nil {
			return nil, err
		}
		responses["202"] = map[string]any{"description": "Accepted: the work runs on; the " + rt.Accepted.Name() + " document names it (Location: its URL).",
			"content": map[string]any{wire.MediaJSON: map[string]any{"schema": s}}}
	}
	return responses, nil
}

// okResponse is rt's 200 response: its document, raw MCP result or
// stream.
func okResponse(r *reflector, rt wire.Route) (map[string]any, error) {
	desc := "The " + rt.Response.Name() + " document."
	var s any
	if rt.Raw {
		desc = "The child's MCP " + rt.MCPResult + ", passed on unchanged."
		s = ref(mcpComponent(rt.MCPResult))
	} else {
		var err error
		if s, err = r.schema(rt.Response); err != nil {
			return nil, err
		}
		switch rt.Name {
		case wire.OpOpenAPI:
			desc = "This document."
			s = map[string]any{"type": "object", "description": "An OpenAPI 3.1 document."}
		case wire.OpServerOpenAPI, wire.OpToolsOpenAPI:
			desc = "An OpenAPI 3.1 document with one operation per tool (see the openapi package's documentation)."
			s = map[string]any{"type": "object", "description": "An OpenAPI 3.1 document."}
		}
	}
	media := wire.MediaJSON
	if rt.Media != "" {
		media = rt.Media
		desc = "A " + rt.Media + " document."
	}
	content := map[string]any{media: map[string]any{"schema": s}}
	if rt.Stream {
		desc += " With Accept: " + wire.MediaEventStream + ", a stream of server-sent events instead: " + eventsSummary()
		ev, err := eventStream(r)
		if err != nil {
			return nil, err
		}
		content[wire.MediaEventStream] = ev
	}
	return map[string]any{"description": desc, "content": content}, nil
}

// problemResponses adds rt's problem responses to responses, one shared
// component per status and set of kinds.
func (r *reflector) problemResponses(rt wire.Route, responses map[string]any) error {
	kinds := append(slices.Clone(rt.Problems), wire.KindMethodNotAllowed, wire.KindUnauthorized)
	byStatus := map[int][]wire.ProblemType{}
	for _, k := range kinds {
		pt, ok := wire.LookupProblemType(k)
		if !ok {
			return fmt.Errorf("unknown problem kind %q", k)
		}
		if !slices.Contains(byStatus[pt.Status], pt) {
			byStatus[pt.Status] = append(byStatus[pt.Status], pt)
		}
	}
	for status, pts := range byStatus {
		// Shared by every route with the same kinds at this status.
		name := problemResponseName(status, pts)
		r.responses[name] = problemResponse(pts)
		responses[strconv.Itoa(status)] = map[string]any{"$ref": "#/components/responses/" + name}
	}
	return nil
}

// problemResponseName names the component of a problem response:
// "Problem404", or "Problem503-exhausted-unavailable" for a subset of the
// status's kinds.
func problemResponseName(status int, pts []wire.ProblemType) string {
	all := 0
	for _, pt := range wire.ProblemTypes() {
		if pt.Status == status {
			all++
		}
	}
	name := "Problem" + strconv.Itoa(status)
	if len(pts) == all {
		return name
	}
	kinds := make([]string, len(pts))
	for i, pt := range pts {
		kinds[i] = pt.Kind
	}
	slices.Sort(kinds)
	return name + "-" + strings.Join(kinds, "-")
}

// problemResponse is the response of one status: a Problem whose type is
// one of pts'.
func problemResponse(pts []wire.ProblemType) map[string]any {
	slices.SortFunc(pts, func(a, b wire.ProblemType) int { return strings.Compare(a.Kind, b.Kind) })
	var types []string
	var desc []string
	retry := false
	for _, pt := range pts {
		types = append(types, wire.ProblemTypeBase+pt.Kind)
		desc = append(desc, pt.Kind+" ("+pt.Title+")")
		retry = retry || pt.Kind == wire.KindExhausted || pt.Kind == wire.KindUnavailable || pt.Kind == wire.KindRateLimited
	}
	resp := map[string]any{
		"description": "Problem: " + strings.Join(desc, "; ") + ".",
		"content": map[string]any{wire.MediaProblem: map[string]any{"schema": map[string]any{
			"allOf": []any{ref(typeProblem.Name()), map[string]any{
				"properties": map[string]any{"type": map[string]any{"enum": types}}}},
		}}},
	}
	if retry {
		resp["headers"] = map[string]any{"Retry-After": map[string]any{
			"description": "Seconds to wait before trying again, when the problem's retryAfter is set.",
			"schema":      map[string]any{"type": "integer", "minimum": 0}}}
	}
	return resp
}

func eventsSummary() string {
	var parts []string
	for _, e := range wire.CallStreamEvents() {
		parts = append(parts, e.Name+" ("+e.Summary+")")
	}
	return strings.Join(parts, ", ") + "; a comment (\"" + wire.KeepAliveComment + "\") now and then while there is nothing to report."
}

// eventStream is the text/event-stream media type of a streaming route:
// OpenAPI 3.1 has no schema for the events of a stream, so they are listed
// in x-mcpx-events, in the order they may come, each with its data's schema.
func eventStream(r *reflector) (map[string]any, error) {
	var events []any
	for _, e := range wire.CallStreamEvents() {
		var data any
		if e.MCPResult != "" {
			data = ref(mcpComponent(e.MCPResult))
		} else {
			var err error
			if data, err = r.schema(e.Payload); err != nil {
				return nil, fmt.Errorf("event %s: %w", e.Name, err)
			}
		}
		events = append(events, map[string]any{"event": e.Name, "summary": e.Summary, "data": data})
	}
	return map[string]any{
		"schema": map[string]any{"type": "string",
			"description": "Server-sent events: any number of progress events, then one result or error event. Each event's data is one JSON document."},
		"x-mcpx-events": events,
	}, nil
}

// pathParams returns the names of a chi pattern's parameters, in order.
func pathParams(pattern string) []string {
	var out []string
	for rest := pattern; ; {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			return out
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return out
		}
		out = append(out, rest[open+1:open+end])
		rest = rest[open+end+1:]
	}
}

// checkRefs fails on a $ref in doc that names no component.
func checkRefs(doc any, schemas, params, responses map[string]any) error {
	switch v := doc.(type) {
	case map[string]any:
		if s, ok := v["$ref"].(string); ok {
			if name, ok := strings.CutPrefix(s, "#/components/schemas/"); ok && schemas[name] != nil {
				return nil
			}
			if name, ok := strings.CutPrefix(s, "#/components/parameters/"); ok && params[name] != nil {
				return nil
			}
			if name, ok := strings.CutPrefix(s, "#/components/responses/"); ok && responses[name] != nil {
				return nil
			}
			return fmt.Errorf("openapi: $ref %q names no component", s)
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if err := checkRefs(v[k], schemas, params, responses); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkRefs(e, schemas, params, responses); err != nil {
				return err
			}
		}
	}
	return nil
}
