package clientgen

import (
	"slices"
	"strings"
)

// Server is what a generated file says about one server beside its tools.
type Server struct {
	Name string
	// Instructions are the server's instructions from its initialize
	// result: the doc comment of its namespace. "" = none.
	Instructions string
	// Prelude is the config's text for the server, written as comment
	// lines before its namespace. "" = none.
	Prelude string
}

// namespaceDoc is the doc comment text of a server's namespace: its
// instructions, which say how to use its tools as a whole.
func namespaceDoc(s Server) string {
	return s.Instructions
}

// prelude writes text as // comment lines, each line of text its own, so
// nothing in it can end the comment; "" for no text.
func prelude(text string) string {
	text = strings.TrimSpace(strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(text))
	if text == "" {
		return ""
	}
	var b strings.Builder
	for l := range strings.SplitSeq(text, "\n") {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			b.WriteString("//\n")
			continue
		}
		b.WriteString("// " + l + "\n")
	}
	return b.String()
}

// TypesOptions describe the declarations Types writes.
type TypesOptions struct {
	// Server is the server whose tools are declared; its Instructions and
	// Prelude head its namespace.
	Server Server
	// Tools are the server's tools; tools of another server are left out.
	Tools []Tool
	// Tool, if set, keeps only the tool of that name; "" = every tool.
	Tool string
	// Only, if set, keeps only the tools of these names (with Tool's).
	Only []string
	// Depth collapses object types nested deeper than it below a tool's
	// input or output to an open object with a comment; 0 = no limit.
	Depth int
}

// Types writes the TypeScript declarations of one server's tools, or one
// tool's, for an agent to read (`mcpx types server[.tool]`): the prelude
// as comments, then the server's namespace with the instructions as its
// doc comment and the types of Compile. It reports whether the named tool
// was found (true when none is named).
func Types(opts TypesOptions) (f File, problems []Problem, found bool) {
	mine := slices.DeleteFunc(slices.Clone(opts.Tools), func(t Tool) bool { return t.Server != opts.Server.Name })
	want := slices.Clone(opts.Only)
	if opts.Tool != "" {
		want = append(want, opts.Tool)
	}
	tools := slices.DeleteFunc(slices.Clone(mine), func(t Tool) bool { return len(want) > 0 && !slices.Contains(want, t.Name) })
	found = true
	for _, w := range want {
		found = found && slices.ContainsFunc(tools, func(t Tool) bool { return t.Name == w })
	}
	f, problems = compile(tools, []Server{opts.Server}, nil, compileOptions{context: mine, depth: opts.Depth})
	return f, problems, found
}
