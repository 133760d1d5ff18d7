package openapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"mcpx.dev/mcpx/internal/toolschema"
	"mcpx.dev/mcpx/wire"
)

// Server is one server's part of a tool document: what the broker knows of
// it and the tools its child (in the caller's scope) lists.
type Server struct {
	Name        string
	Description string // the config's description; "" = none
	// Instructions are the server's instructions from its initialize
	// result; "" = none.
	Instructions string
	// Tools are the child's tools/list tools, all pages joined: a JSON
	// array of MCP Tool objects, as broker.Tools returns them.
	Tools json.RawMessage
	// Problem, if set, says why the tools could not be listed; the
	// combined document lists the server in x-mcpx-unavailable and Tools
	// is not read.
	Problem *wire.Problem
}

// ServerDocument returns the OpenAPI 3.1 document of one server's tools, as
// indented JSON: one operation per tool (see the package documentation).
func ServerDocument(opts Options, s Server) ([]byte, error) {
	doc, err := toolsDoc(opts, []Server{s}, false)
	if err != nil {
		return nil, err
	}
	return encode(doc)
}

// CombinedDocument returns the OpenAPI 3.1 document of the tools of every
// server in servers (those the caller may use), as indented JSON. Servers
// whose Problem is set are listed in x-mcpx-unavailable.
func CombinedDocument(opts Options, servers []Server) ([]byte, error) {
	doc, err := toolsDoc(opts, servers, true)
	if err != nil {
		return nil, err
	}
	return encode(doc)
}

func encode(doc any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("openapi: encoding the document: %w", err)
	}
	return b.Bytes(), nil
}

// tool is the part of an MCP Tool a document reads.
type tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
}

// annotations are the MCP ToolAnnotations a description mentions.
type annotations struct {
	Title           string `json:"title"`
	ReadOnlyHint    *bool  `json:"readOnlyHint"`
	DestructiveHint *bool  `json:"destructiveHint"`
	IdempotentHint  *bool  `json:"idempotentHint"`
	OpenWorldHint   *bool  `json:"openWorldHint"`
}

// The extensions of tool documents.
const (
	// XSchemaError on an operation says why (part of) the tool's schema
	// was not carried over, so the operation is permissive there.
	XSchemaError = "x-mcpx-schema-error"
	// XTool is the tool's name as its server lists it.
	XTool = "x-mcp-tool"
	// XServer is the configured server that lists the tool.
	XServer = "x-mcpx-server"
	// XAnnotations are the tool's MCP annotations, as the server sent them.
	XAnnotations = "x-mcp-annotations"
	// XInstructions are a server's instructions from initialize.
	XInstructions = "x-mcp-instructions"
	// XUnavailable lists, in a combined document, the servers whose tools
	// could not be listed, with the problem.
	XUnavailable = "x-mcpx-unavailable"
	// XSkipped lists the tools that could not become operations at all
	// (no name, a duplicate name, not an object), with the reason.
	XSkipped = "x-mcpx-skipped-tools"
)

func toolsDoc(opts Options, servers []Server, combined bool) (map[string]any, error) {
	if opts.Version == "" {
		opts.Version = "dev"
	}
	r, err := newMCPReflector()
	if err != nil {
		return nil, err
	}
	rt, ok := wire.Lookup(wire.OpCallTool)
	if !ok {
		return nil, fmt.Errorf("openapi: no %s route", wire.OpCallTool)
	}
	tmpl, err := operation(r, rt)
	if err != nil {
		return nil, fmt.Errorf("openapi: the %s operation: %w", wire.OpCallTool, err)
	}
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.Name
	}
	serverIDs := cleanIDs(names)
	sc := newSchemaChecker()

	paths := map[string]any{}
	var tags, unavailable, skipped []any
	for _, s := range servers {
		if s.Problem != nil {
			p := s.Problem // what the cache key holds of it: no stderr, which changes
			unavailable = append(unavailable, map[string]any{"server": s.Name, "problem": map[string]any{
				"type": p.Type, "title": p.Title, "status": p.Status, "detail": p.Detail}})
			continue
		}
		tag := map[string]any{"name": s.Name, "description": serverDescription(s)}
		if s.Instructions != "" {
			tag[XInstructions] = s.Instructions
		}
		tags = append(tags, tag)
		var raw []json.RawMessage
		if err := json.Unmarshal(s.Tools, &raw); err != nil {
			unavailable = append(unavailable, map[string]any{"server": s.Name,
				"problem": map[string]any{"detail": "the server's tool list is not a JSON array: " + err.Error()}})
			continue
		}
		var tools []tool
		seen := map[string]bool{}
		for i, t := range raw {
			var tl tool
			reason := ""
			switch err := json.Unmarshal(t, &tl); {
			case err != nil:
				reason = "not an MCP Tool object: " + err.Error()
			case tl.Name == "":
				reason = "no name"
			case seen[tl.Name]:
				reason = "a second tool of the same name"
			}
			if reason != "" {
				skipped = append(skipped, map[string]any{"server": s.Name, "index": i, "name": tl.Name, "reason": reason})
				continue
			}
			seen[tl.Name] = true
			tools = append(tools, tl)
		}
		toolNames := make([]string, len(tools))
		for i, t := range tools {
			toolNames[i] = t.Name
		}
		toolIDs := cleanIDs(toolNames)
		for _, t := range tools {
			op, err := toolOperation(r, sc, tmpl, s.Name, serverIDs[s.Name]+"."+toolIDs[t.Name], t)
			if err != nil {
				return nil, fmt.Errorf("openapi: server %s, tool %s: %w", s.Name, t.Name, err)
			}
			paths[rt.Path(s.Name, t.Name)] = map[string]any{"post": op}
		}
	}

	info := map[string]any{"version": opts.Version}
	if combined {
		info["title"] = "mcpx tools"
		info["summary"] = "Every tool of the MCP servers this caller may use, as HTTP operations of the mcpx broker."
		info["description"] = toolsDescription
	} else {
		s := servers[0]
		info["title"] = "mcpx server " + s.Name
		info["summary"] = "The tools of the MCP server " + s.Name + ", as HTTP operations of the mcpx broker."
		info["description"] = serverDescription(s) + "\n\n" + toolsDescription
		if s.Instructions != "" {
			info[XInstructions] = s.Instructions
		}
	}
	if tags == nil {
		tags = []any{}
	}
	doc, err := assemble(r, info, tags, paths)
	if err != nil {
		return nil, err
	}
	if unavailable != nil {
		doc[XUnavailable] = unavailable
	}
	if skipped != nil {
		doc[XSkipped] = skipped
	}
	prune(doc)
	return doc, nil
}

const toolsDescription = `Each tool is one operation, POST /v1/servers/{server}/tools/{tool}: the request body is the tool's arguments, typed by its inputSchema; the answer is the child's CallToolResult, its structuredContent typed by the tool's outputSchema when it has one, or, with Accept: text/event-stream, progress events then the result. The tool's MCP annotations are in x-mcp-annotations, its name in x-mcp-tool.

The schemas are the tools' own JSON Schemas (2020-12, OpenAPI 3.1's dialect; older drafts translated): the locations their $refs point to are components named <operationId>.input or .output, then the location. A tool whose schema could not be carried over has a permissive operation (any JSON object) and says why in x-mcpx-schema-error.

The listing is the caller's: the tools the child in the caller's scope (its Mcpx-Cwd, Mcpx-Session, …) lists, of the servers the caller may use.`

func serverDescription(s Server) string {
	d := "The MCP server " + s.Name + "."
	if s.Description != "" {
		d = s.Description
	}
	if s.Instructions != "" {
		d += "\n\nThe server's instructions:\n\n" + s.Instructions
	}
	return d
}

// permissiveArguments is the request schema of a tool whose inputSchema
// could not be carried over: any JSON object, as the API takes.
func permissiveArguments(why string) map[string]any {
	return map[string]any{"type": "object", "additionalProperties": true,
		"description": "Not typed: the tool's inputSchema could not be carried over (" + why + ")."}
}

// toolOperation is the operation of one tool: the callTool template with
// the tool's schemas.
func toolOperation(r *reflector, sc *schemaChecker, tmpl map[string]any, server, id string, t tool) (map[string]any, error) {
	op := copyValue(tmpl).(map[string]any)
	op["operationId"] = id
	op["tags"] = []any{server}
	op[XTool] = t.Name
	op[XServer] = server

	var params []any
	for _, p := range tmpl["parameters"].([]any) {
		if m, ok := p.(map[string]any); ok && m["in"] == "path" {
			continue // the path is the tool's own
		}
		params = append(params, p)
	}
	op["parameters"] = params

	var ann annotations
	if len(t.Annotations) > 0 && string(t.Annotations) != "null" {
		var a any
		if err := json.Unmarshal(t.Annotations, &a); err == nil {
			op[XAnnotations] = a
		}
		json.Unmarshal(t.Annotations, &ann) //nolint:errcheck // a malformed annotation is not described, only passed on above
	}
	op["summary"] = summary(t, ann)
	if d := toolDescription(t, ann); d != "" {
		op["description"] = d
	}

	var schemaErrors []string
	var input any
	if len(t.InputSchema) == 0 || string(t.InputSchema) == "null" {
		schemaErrors = append(schemaErrors, "inputSchema: missing")
		input = permissiveArguments("the tool has none")
	} else if c, err := carrySchema(sc, t.InputSchema, id+".input"); err != nil {
		schemaErrors = append(schemaErrors, "inputSchema: "+err.Error())
		input = permissiveArguments(err.Error())
	} else {
		input = c.schema
		maps.Copy(r.schemas, c.components)
	}
	body := op["requestBody"].(map[string]any)
	body["content"].(map[string]any)[wire.MediaJSON].(map[string]any)["schema"] = input

	result := ref(mcpComponent(rt200Result))
	if len(t.OutputSchema) > 0 && string(t.OutputSchema) != "null" {
		c, err := carryOutput(sc, t.OutputSchema, id+".output")
		if err != nil {
			schemaErrors = append(schemaErrors, "outputSchema: "+err.Error())
		} else {
			maps.Copy(r.schemas, c.components)
			// A component, as the JSON answer and the result event share it.
			r.schemas[id+".result"] = map[string]any{
				"description": "The tool's CallToolResult, its structuredContent typed by the tool's outputSchema.",
				"allOf": []any{ref(mcpComponent(rt200Result)), map[string]any{
					"type": "object",
					"properties": map[string]any{"structuredContent": map[string]any{
						"description": "The structured result, conforming to the tool's outputSchema.",
						"allOf":       []any{c.schema},
					}},
				}}}
			result = ref(id + ".result")
		}
	}
	content := op["responses"].(map[string]any)["200"].(map[string]any)["content"].(map[string]any)
	content[wire.MediaJSON].(map[string]any)["schema"] = result
	if es, ok := content[wire.MediaEventStream].(map[string]any); ok {
		for _, e := range es["x-mcpx-events"].([]any) {
			if m := e.(map[string]any); m["event"] == wire.StreamResult {
				m["data"] = result
			}
		}
	}
	if schemaErrors != nil {
		op[XSchemaError] = strings.Join(schemaErrors, "; ")
	}
	return op, nil
}

// rt200Result is the MCP type of a tool call's result.
const rt200Result = "CallToolResult"

// carryOutput carries an outputSchema, which MCP requires to describe an
// object (structuredContent is a JSON object): internal/toolschema's rule,
// which the TypeScript client follows too.
func carryOutput(sc *schemaChecker, raw json.RawMessage, prefix string) (carried, error) {
	if err := toolschema.CheckOutput(raw); err != nil {
		return carried{}, err
	}
	return carrySchema(sc, raw, prefix)
}

// summary is the operation's one line: the tool's title (or its
// annotations'), else the first sentence of its description, else its name.
func summary(t tool, ann annotations) string {
	for _, s := range []string{t.Title, ann.Title} {
		if s = strings.TrimSpace(s); s != "" {
			return oneLine(s)
		}
	}
	d := oneLine(t.Description)
	if i := strings.Index(d, ". "); i >= 0 {
		d = d[:i+1]
	}
	if d == "" || len(d) > 120 {
		return "Call the tool " + t.Name
	}
	return d
}

// toolDescription is the tool's description, then what its annotations
// hint.
func toolDescription(t tool, ann annotations) string {
	var hints []string
	hint := func(p *bool, yes, no string) {
		if p != nil {
			hints = append(hints, map[bool]string{true: yes, false: no}[*p])
		}
	}
	hint(ann.ReadOnlyHint, "read-only", "may modify its environment")
	hint(ann.DestructiveHint, "may be destructive", "not destructive")
	hint(ann.IdempotentHint, "idempotent", "not idempotent")
	hint(ann.OpenWorldHint, "open world (reaches outside entities)", "closed world")
	d := strings.TrimSpace(t.Description)
	if hints != nil {
		if d != "" {
			d += "\n\n"
		}
		d += "Hints (from the tool's MCP annotations, not guarantees): " + strings.Join(hints, ", ") + "."
	}
	return d
}

// cleanIDs gives each name an identifier for operationIds: the name itself
// when it holds only ASCII letters, digits, "-" and "_" (take-screenshot
// stays take-screenshot); otherwise each other character becomes "_" (a.b
// becomes a_b). A cleaned name that another name of the set also yields
// gets "_" and the first 8 hex digits of its name's SHA-256 (a.b beside
// a_b becomes a_b_<hash>, and a_b stays). The identifier of a name depends
// only on the names that clean to the same, never on order, so it changes
// only when such a collision appears or goes.
func cleanIDs(names []string) map[string]string {
	cleaned := map[string]string{}
	count := map[string]int{}
	for _, n := range names {
		c := cleanID(n)
		cleaned[n] = c
		count[c]++
	}
	out := map[string]string{}
	for _, n := range names {
		c := cleaned[n]
		if c == n || count[c] == 1 {
			out[n] = c
			continue
		}
		sum := sha256.Sum256([]byte(n))
		out[n] = c + "_" + hex.EncodeToString(sum[:4])
	}
	// A hashed id equal to another name is beyond bad luck; make it longer.
	taken := map[string]int{}
	for _, id := range out {
		taken[id]++
	}
	for _, n := range slices.Sorted(maps.Keys(out)) {
		if taken[out[n]] > 1 && out[n] != n {
			sum := sha256.Sum256([]byte(n))
			out[n] = cleaned[n] + "_" + hex.EncodeToString(sum[:])
		}
	}
	return out
}

func cleanID(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// prune removes the components no operation reaches: a tool document
// carries only the MCP types, problem responses and parameters its
// operations use.
func prune(doc map[string]any) {
	comps := doc["components"].(map[string]any)
	reached := map[string]bool{}
	var visit func(v any)
	visit = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x["$ref"].(string); ok {
				if name, ok := strings.CutPrefix(s, "#/components/"); ok && !reached[name] {
					reached[name] = true
					kind, n, _ := strings.Cut(name, "/")
					if m, ok := comps[kind].(map[string]any); ok {
						visit(m[n])
					}
				}
			}
			for _, e := range x {
				visit(e)
			}
		case []any:
			for _, e := range x {
				visit(e)
			}
		}
	}
	visit(doc["paths"])
	for _, kind := range []string{"schemas", "parameters", "responses"} {
		m, _ := comps[kind].(map[string]any)
		for name := range m {
			if !reached[kind+"/"+name] {
				delete(m, name)
			}
		}
	}
}
