package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateCLIDoc = flag.Bool("update", false, "rewrite docs/cli.md from the command table (TestCLIDoc)")

// cliDocPath is the generated command reference.
var cliDocPath = filepath.Join("..", "..", "docs", "cli.md")

// cliDoc is docs/cli.md: the command table (commands()) and each
// command's own help, its synopsis, summary and flag set, as `mcpx help
// <command>` prints them.
func cliDoc(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(`# Command reference

<!-- Generated from cmd/mcpx's command table (commands.go) and each command's flag set, as
     ` + "`mcpx help <command>`" + ` prints them. Do not edit: change the code, then rewrite this page with
     go test ./cmd/mcpx -run TestCLIDoc -update -->

Every ` + "`mcpx`" + ` command with its flags. Flags may come before or after the command's
arguments, and before the command itself (` + "`mcpx --no-autostart status`" + `); ` + "`--`" + ` ends them.
A command that needs the daemon and finds none on the default socket starts one
(` + "`--no-autostart`" + `, ` + "`$MCPX_NO_AUTOSTART=1`" + `: exit 3 instead). The topic pages in [docs/](.)
say what each command is for; [config.md](config.md) is the config file.

Exit codes: 0 ok, 1 the tool returned ` + "`isError`" + ` (or the config is invalid), 2 usage, 3 broker
unreachable, 4 the call failed (the problem's detail is printed).

| command | what it does |
|---|---|
`)
	cmds := commands()
	for _, cmd := range cmds {
		if cmd.run == nil {
			continue
		}
		fmt.Fprintf(&b, "| [`%s`](#mcpx-%s) | %s |\n", cmd.name, cmd.name, strings.ReplaceAll(cmd.summary, "|", `\|`))
	}
	for _, cmd := range cmds {
		if cmd.run == nil {
			continue
		}
		args := []string{"help", cmd.name} // every command answers it (exit 0)
		var out, errOut bytes.Buffer
		if code := run(t.Context(), args, nil, &out, &errOut); code != exitOK {
			t.Fatalf("mcpx %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
		}
		out.Write(errOut.Bytes()) // a command's own -h prints to stderr
		fmt.Fprintf(&b, "\n## mcpx %s\n\n```text\n%s```\n", cmd.name, out.String())
	}
	return b.Bytes()
}

// TestCLIDoc: docs/cli.md is what the command table and the flag sets
// say now; -update rewrites it.
func TestCLIDoc(t *testing.T) {
	want := cliDoc(t)
	if *updateCLIDoc {
		if err := os.WriteFile(cliDocPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(cliDocPath)
	if err != nil {
		t.Fatalf("%v; write it with go test ./cmd/mcpx -run TestCLIDoc -update", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/cli.md is stale: a command or flag changed. Rewrite it with\n\tgo test ./cmd/mcpx -run TestCLIDoc -update\nfirst difference at line %d", firstDiffLine(got, want))
	}
}

func firstDiffLine(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}
