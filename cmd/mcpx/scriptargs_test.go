package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestParseScriptFlags(t *testing.T) {
	for _, tt := range []struct {
		args        []string
		pos, after  []string
		json        bool
		export      string
		code        int
		ok          bool
		errContains string
	}{
		{args: []string{"greet", "--json", "a", "--export=main", "b"}, pos: []string{"greet", "a", "b"}, json: true, export: "main", ok: true},
		{args: []string{"--export", "main", "x.ts", "--", "--json", "-h"}, pos: []string{"x.ts"}, after: []string{"--json", "-h"}, export: "main", ok: true},
		{args: []string{"-", "--json=false", "-"}, pos: []string{"-", "-"}, ok: true},
		{args: []string{"--", "greet"}, after: []string{"greet"}, ok: true},
		{args: []string{"greet", "--exprot", "main"}, code: exitUsage, errContains: "unknown flag --exprot; did you mean --export?"},
		{args: []string{"greet", "-1"}, code: exitUsage, errContains: "unknown flag -1; arguments for the script go after --"},
		{args: []string{"greet", "--export"}, code: exitUsage, errContains: "flag --export needs a value"},
		{args: []string{"greet", "--lease-ttl", "soon"}, code: exitUsage, errContains: "invalid value"},
		{args: []string{"greet", "-h"}, code: exitOK, errContains: "Usage: mcpx run"},
	} {
		var stderr bytes.Buffer
		c := &cli{stderr: &stderr, getenv: func(string) string { return "" }}
		fs := newFlags(c, "run")
		sf := scriptFlagSet(fs)
		pos, after, code, ok := parseScriptFlags(c, fs, tt.args)
		if ok != tt.ok || code != tt.code || !slices.Equal(pos, tt.pos) || !slices.Equal(after, tt.after) {
			t.Errorf("%q: pos %q, after %q, code %d, ok %v; want %q, %q, %d, %v\n%s", tt.args, pos, after, code, ok, tt.pos, tt.after, tt.code, tt.ok, stderr.String())
			continue
		}
		if ok && (*sf.asJSON != tt.json || *sf.export != tt.export) {
			t.Errorf("%q: --json %v, --export %q; want %v, %q", tt.args, *sf.asJSON, *sf.export, tt.json, tt.export)
		}
		if !strings.Contains(stderr.String(), tt.errContains) {
			t.Errorf("%q: stderr %q, want it to say %q", tt.args, stderr.String(), tt.errContains)
		}
	}
}
