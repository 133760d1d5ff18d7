package clientgen

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"mcpx.dev/mcpx/internal/orderedjson"
	"mcpx.dev/mcpx/internal/toolschema"
	"mcpx.dev/mcpx/internal/tsident"
	"mcpx.dev/mcpx/wire"
)

// ClientOptions describe the client module Client writes.
type ClientOptions struct {
	// Tools are the tools of every server the client covers, each with its
	// Server set (a tool without one is left out, with a Problem).
	Tools []Tool
	// Broker says, for the module's header, which broker the tool lists
	// came from: "mcpx 1.4 at http://127.0.0.1:7464". "" = not said.
	Broker string
	// Cwd is the caller directory the tool lists were taken for (they
	// depend on it for repo-, worktree- and cwd-scoped servers); "" = none.
	Cwd string
	// Failed are the servers whose tools could not be listed: the header
	// names each with Reason, and they get no object.
	Failed []FailedServer
	// Servers say what the module says about the servers beside their
	// tools: the instructions (the doc comment of the server's namespace
	// and object) and the prelude. A server not named here has neither.
	Servers []Server
}

// FailedServer is a server left out of a client because its tool list
// could not be read.
type FailedServer struct {
	Server, Reason string
}

// runtimeParts is the runtime in parts (runtime/*.ts: types, logging,
// calls, the run and resources), one module once joined in their names'
// order; no part is ever emitted alone.
//
//go:embed runtime/*.ts
var runtimeParts embed.FS

// runtimeTemplate is the parts joined.
func runtimeTemplate() string {
	entries, err := runtimeParts.ReadDir("runtime") // sorted by name
	if err != nil {
		panic("clientgen: " + err.Error())
	}
	var b strings.Builder
	for _, e := range entries {
		data, err := runtimeParts.ReadFile("runtime/" + e.Name())
		if err != nil {
			panic("clientgen: " + err.Error())
		}
		b.Write(data)
	}
	return b.String()
}

// runtimeSource is the runtime (runtime/*.ts) with its @@NAME@@ marks filled from the API
// contract, so the client and the server cannot disagree on a header, an
// event or a problem type. Made on first use: a process that generates no
// client (the sandbox's helper, every CLI command) does not pay for it.
var runtimeSource = sync.OnceValue(func() string {
	callTool, _ := wire.Lookup(wire.OpCallTool)
	answerInput, _ := wire.Lookup(wire.OpAnswerInput)
	readResource, _ := wire.Lookup(wire.OpReadResource)
	subscribeResource, _ := wire.Lookup(wire.OpSubscribeResource)
	status := func(kind string) string {
		pt, _ := wire.LookupProblemType(kind)
		return strconv.Itoa(pt.Status)
	}
	values := map[string]string{
		"ProblemTypeBase":              quote(wire.ProblemTypeBase),
		"KindNotFound":                 quote(wire.KindNotFound),
		"KindChildFailed":              quote(wire.KindChildFailed),
		"KindCanceled":                 quote(wire.KindCanceled),
		"KindTimeout":                  quote(wire.KindTimeout),
		"KindStaleClient":              quote(wire.KindStaleClient),
		"HeaderToolHash":               quote(wire.HeaderToolHash),
		"HeaderCallContext":            quote(wire.HeaderCallContext),
		"StatusCanceled":               status(wire.KindCanceled),
		"StatusTimeout":                status(wire.KindTimeout),
		"RecordFile":                   quote(wire.RecordFile),
		"MediaJSON":                    quote(wire.MediaJSON),
		"MediaEventStream":             quote(wire.MediaEventStream),
		"EventProgress":                quote(wire.StreamProgress),
		"EventResult":                  quote(wire.StreamResult),
		"EventError":                   quote(wire.StreamError),
		"EventInput":                   quote(wire.StreamInput),
		"AnswerInputPattern":           quote(answerInput.Pattern),
		"HeaderAuthorization":          quote(wire.HeaderAuthorization),
		"HeaderClient":                 quote(wire.HeaderClient),
		"HeaderCwd":                    quote(wire.HeaderCwd),
		"HeaderSession":                quote(wire.HeaderSession),
		"HeaderParentSession":          quote(wire.HeaderParentSession),
		"HeaderLease":                  quote(wire.HeaderLease),
		"HeaderScope":                  quote(wire.HeaderScope),
		"HeaderScopeFrom":              quote(wire.HeaderScopeFrom),
		"CallToolPattern":              quote(callTool.Pattern),
		"QueryTask":                    quote(wire.QueryTask),
		"GetTaskPattern":               quote(pattern(wire.OpGetTask)),
		"ListTasksPattern":             quote(pattern(wire.OpListTasks)),
		"TaskResultPattern":            quote(pattern(wire.OpTaskResult)),
		"EventMessage":                 quote(wire.StreamMessage),
		"EventElicitationComplete":     quote(wire.StreamElicitationComplete),
		"EventContext":                 quote(wire.StreamContext),
		"ListResourceTemplatesPattern": quote(pattern(wire.OpListResourceTemplates)),
		"RenewLeasePattern":            quote(pattern(wire.OpRenewLease)),
		"ListSessionsPattern":          quote(pattern(wire.OpListSessions)),
		"SetSessionPattern":            quote(pattern(wire.OpSetSession)),
		"TypesPattern":                 quote(pattern(wire.OpTypes)),
		"ListToolsPattern":             quote(pattern(wire.OpListTools)),
		"CatalogPattern":               quote(pattern(wire.OpCatalog)),
		"MediaTypeScript":              quote(wire.MediaTypeScript),
		"CompletePattern":              quote(pattern(wire.OpComplete)),
		"SetLogLevelPattern":           quote(pattern(wire.OpSetLogLevel)),
		"ReadResourcePattern":          quote(readResource.Pattern),
		"SubscribeResourcePattern":     quote(subscribeResource.Pattern),
		"EventUpdated":                 quote(wire.StreamUpdated),
		"EventEnd":                     quote(wire.StreamEnd),
		"KindUnavailable":              quote(wire.KindUnavailable),
	}
	return regexp.MustCompile(`@@(\w+)@@`).ReplaceAllStringFunc(runtimeTemplate(), func(m string) string {
		v, ok := values[strings.Trim(m, "@")]
		if !ok {
			panic("clientgen: the runtime names an unknown value " + m)
		}
		return v
	})
})

// pattern is the path pattern of the route op.
func pattern(op string) string {
	rt, _ := wire.Lookup(op)
	return rt.Pattern
}

// runtimeNames are the top-level names the runtime declares without a "$"
// and the globals it uses: no server's object may take one (a server named
// "fetch" becomes fetch_2), or it would shadow them in the module.
var runtimeNames = []string{
	// Declared by the runtime (TestRuntimeNames checks this list).
	"ContentBlock", "CallToolResult", "Progress", "InputRequest", "InputAnswer", "Connection", "CallOptions", "Problem",
	"McpxError", "LogLevel", "LogAttrs", "Logger", "log", "callTool",
	"Task", "callToolAsTask", "getTask", "listTasks", "taskResult", "cancelTask",
	"LogMessage", "ResourceTemplate", "listResourceTemplates", "CompleteRequest", "CompleteResult", "complete", "setLogLevel",
	"ReadResourceResult", "ResourceUpdated", "ResourceOptions", "readResource", "subscribeResource",
	"Lease", "SessionRecord", "ToolHit", "Catalog", "mcpx", "Frame", "captureFrames", "errorFrames",
	// Globals the runtime uses (the web APIs through globalThis, typed by
	// the runtime itself, so that no lib setting is needed; still kept
	// free, as a script beside the client uses them too).
	"globalThis", "console", "JSON", "Date", "Error", "URL", "TextDecoder", "AbortController",
	"AbortSignal", "Response", "setTimeout", "clearTimeout", "fetch", "encodeURIComponent",
	"String", "Promise", "undefined", "Symbol", "Object",
}

// Client writes the script client: one self-contained ES module (fetch, no
// imports) with the types of Compile, the runtime (broker discovery, the
// caller context, streamed progress, cancellation, McpxError, log), and per
// server an object with one typed async function per tool:
//
//	export const demo = {
//	  echo: (args: demo.EchoInput, options?: CallOptions): Promise<CallToolResult> => ...,
//	};
//
// The output depends only on opts, not on the order of its tools.
func Client(opts ClientOptions) (File, []Problem) {
	var tools []Tool
	var problems []Problem
	for _, t := range sortTools(opts.Tools) {
		if t.Server == "" {
			problems = append(problems, Problem{Tool: t.Name, Schema: "inputSchema",
				Message: "the tool names no server; a client calls tools by server, so it was left out"})
			continue
		}
		tools = append(tools, t)
	}
	var docs []Server
	for _, d := range opts.Servers {
		if slices.ContainsFunc(tools, func(t Tool) bool { return t.Server == d.Name }) {
			docs = append(docs, d) // a server with no tools gets no namespace, as before
		}
	}
	types, ps := compile(tools, docs, runtimeNames, compileOptions{})
	problems = append(problems, ps...)

	// The servers, in Compile's (sorted) order, and their tools.
	byServer := map[string][]Tool{}
	for _, t := range tools {
		byServer[t.Server] = append(byServer[t.Server], t)
	}
	var (
		b      bytes.Buffer
		groups [][]ToolTypes
	)
	for i, tt := range types.Types {
		if i == 0 || tt.Server != types.Types[i-1].Server {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], tt)
	}

	b.WriteString(header)
	b.WriteString(clientIntro)
	if opts.Broker != "" {
		fmt.Fprintf(&b, "//\n// Broker: %s\n", commentText(opts.Broker))
	}
	b.WriteString("//\n// Tool lists")
	if opts.Cwd != "" {
		fmt.Fprintf(&b, ", taken for cwd %s", commentText(opts.Cwd))
	}
	b.WriteString(":\n")
	lists := map[string]string{}
	for _, g := range groups {
		server := g[0].Server
		lists[server] = fmt.Sprintf("%s (%d tools, %s)", server, len(g), fingerprint(byServer[server]))
		fmt.Fprintf(&b, "//   %s\n", commentText(lists[server]))
	}
	for _, f := range opts.Failed {
		fmt.Fprintf(&b, "//   %s: left out: %s\n", commentText(f.Server), commentText(f.Reason))
	}
	if len(groups) == 0 && len(opts.Failed) == 0 {
		b.WriteString("//   none\n")
	}

	b.Write(bytes.TrimPrefix(types.Source, []byte(header)))
	b.WriteString("\n")
	b.WriteString(runtimeSource())
	for _, g := range groups {
		var doc Server
		if i := slices.IndexFunc(docs, func(d Server) bool { return d.Name == g[0].Server }); i >= 0 {
			doc = docs[i]
		}
		problems = append(problems, writeServer(&b, g, byServer[g[0].Server], lists[g[0].Server], doc)...)
	}
	return File{Source: b.Bytes(), Types: types.Types}, problems
}

const clientIntro = `//
// An mcpx script client: one object per server, with a typed async function
// per tool that calls it through the broker and returns its CallToolResult.
// Self-contained (fetch; no imports). Runs as it is on Deno
// (deno run --allow-net --allow-env --allow-read), Bun, and Node 22.18 or
// newer (type stripping); older Node runs it once transpiled (tsc).
//
//   import { demo, log, McpxError } from "./mcpx-client.ts";
//   const res = await demo.echo({ message: "hi" });
//
// The broker is $MCPX_URL with $MCPX_TOKEN, else the local daemon's record
// ($XDG_STATE_HOME/mcpx/daemon.json, else ~/.local/state/mcpx/daemon.json);
// the caller context is the process's cwd, $MCPX_SESSION_ID,
// $MCPX_PARENT_SESSION_ID, $MCPX_LEASE and $MCPX_SCOPE. Each call's
// options override all of them.
`

// writeServer writes one server's object. types and tools are the server's,
// in the same (sorted) order. It reports each function whose name another
// tool's name would also give.
func writeServer(b *bytes.Buffer, types []ToolTypes, tools []Tool, list string, doc Server) (problems []Problem) {
	ns := types[0].Namespace
	listConst := "$list_" + ns
	fmt.Fprintf(b, "\nconst %s = %s;\n\n", listConst, asciiQuote("the tool list of "+list))
	b.WriteString(jsdoc(strings.TrimSpace("The tools of server "+types[0].Server+".\n\n"+namespaceDoc(doc)), ""))
	fmt.Fprintf(b, "export const %s = {\n", ns)
	toolNames := make([]string, len(types))
	for i, tt := range types {
		toolNames[i] = tt.Tool
	}
	fns := assign(newNamer(), toolNames, func(s string) string { return tsident.Value(s, "tool") }, valueRank)
	for i, tt := range types {
		t := toolOf(tools, tt.Tool)
		fn := fns[i].Name
		doc := t.Description
		if fn != tt.Tool {
			doc = strings.TrimSpace(doc + "\n\nTool " + quote(tt.Tool) + ".")
		}
		if shares := fns[i].Shares; shares != nil && fn != tt.Tool {
			why := collision("function is", fn, shares)
			doc += " " + why
			problems = append(problems, Problem{Server: tt.Server, Tool: tt.Tool, Schema: "name", Message: why})
		}
		b.WriteString(jsdoc(doc, "  "))
		argsMark := ""
		if !requiresArguments(t.InputSchema) {
			argsMark = "?"
		}
		result, generic := "CallToolResult", ""
		if hasOutput(t.OutputSchema) && outputProblem(t.OutputSchema) == nil {
			out := ns + "." + tt.Output
			result, generic = "CallToolResult<"+out+">", "<"+out+">"
		}
		fmt.Fprintf(b, "  %s: (args%s: %s.%s, options?: CallOptions): Promise<%s> =>\n", fn, argsMark, ns, tt.Input, result)
		fmt.Fprintf(b, "    $callTool%s(%s, %s, args, options, %s, %s),\n", generic,
			asciiQuote(tt.Server), asciiQuote(tt.Tool), listConst, quote(wire.ToolHash(t.InputSchema, t.OutputSchema)))
	}
	b.WriteString("};\n")
	return problems
}

// collision says why a tool's function or types are named name: other
// tools' names (shares) give the same identifier. what is "function is" or
// "types are".
func collision(what, name string, shares []string) string {
	qs := make([]string, len(shares))
	for i, s := range shares {
		qs[i] = quote(s)
	}
	return fmt.Sprintf("The %s named %s: the names of tools %s give the same identifier, "+
		"which only a name that is exactly it may take; a hash of this tool's own name keeps it stable.",
		what, name, strings.Join(qs, ", "))
}

func toolOf(tools []Tool, name string) Tool {
	for _, t := range tools {
		if t.Name == name {
			return t
		}
	}
	return Tool{}
}

// requiresArguments reports whether calling a tool with no arguments is
// wrong: its input schema requires a member, at its top or through a root
// $ref, allOf, or every anyOf or oneOf branch (internal/toolschema). An
// unreadable schema requires them: its type is unknown anyway.
func requiresArguments(schema json.RawMessage) bool {
	v, err := orderedjson.Decode(toolschema.Normalize(schema))
	if err != nil {
		return len(bytes.TrimSpace(schema)) > 0
	}
	return toolschema.Arguments(v).Required
}

// fingerprint identifies a server's tool list: the SHA-256 of its tools
// (names, descriptions, schemas) in name order, shortened.
func fingerprint(tools []Tool) string {
	h := sha256.New()
	for _, t := range tools {
		for _, part := range [][]byte{[]byte(t.Name), []byte(t.Description), t.InputSchema, t.OutputSchema} {
			fmt.Fprintf(h, "%d:", len(part))
			h.Write(part)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
}

// asciiQuote is quote with every non-ASCII character escaped, so the
// module stays ASCII.
func asciiQuote(s string) string {
	var b strings.Builder
	for _, r := range quote(s) {
		switch {
		case r < 0x80:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16Pair(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}
