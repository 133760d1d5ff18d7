package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/conformance"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// The conformance suite's client scenarios that are not about
// authorization, with mcpx as the client (issue 33): the same client
// command as the auth scenarios (conformance_auth_test.go) — a private
// daemon with the scenario's server as the url server "up" — then what the
// suite's reference clients do for each scenario (go-sdk's
// conformance/everything-client), through the CLI.
//
// Left out, as scenarios that test something a broker does not do:
//   - elicitation-sep1034-client-defaults and sep-2322-client-request-state
//     answer an elicitation form: mcpx relays it to its caller (the CLI asks
//     on a terminal, api/mcp's clients in their own UI), so they test that
//     caller, not mcpx; the relay is tested in api/mcp and cmd/mcpx
//     (input_test.go);
//   - sep-2640-client-* test a host that loads the skills extension's
//     skills, which mcpx does not.
var clientScenarios = []string{
	"initialize", "tools_call", "sse-retry", "request-metadata",
	"json-schema-ref-no-deref", "json-schema-2020-12-preservation",
	"http-standard-headers", "http-custom-headers", "http-invalid-tool-headers",
}

// scenarioSteps runs the CLI steps of a non-auth scenario against the
// daemon on sock; the suite judges what the server saw, so a step that
// fails is logged, not fatal, unless listing the tools fails.
func scenarioSteps(ctx context.Context, sock, scenario string) int {
	mcpx := func(args ...string) (string, int) {
		var stdout, stderr bytes.Buffer
		args = append(args[:1:1], append([]string{"--broker", sock}, args[1:]...)...)
		code := run(ctx, args, strings.NewReader(""), &stdout, &stderr)
		fmt.Fprintf(os.Stderr, "mcpx %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		return stdout.String(), code
	}
	listed, code := mcpx("tools", "--json", "up")
	if code != exitOK {
		return 1
	}
	tools := items(listed, "tools")
	call := func(tool string, args any) {
		b, _ := json.Marshal(args)
		mcpx("call", "up."+tool, string(b))
	}
	switch scenario {
	case "tools_call":
		call("add_numbers", map[string]int{"a": 5, "b": 3})
	case "sse-retry":
		call("test_reconnection", map[string]any{})
	case "json-schema-2020-12-preservation":
		for _, t := range tools {
			if name(t) == "json_schema_2020_12_tool" {
				call("json_schema_echo", map[string]json.RawMessage{"schema": t["inputSchema"]})
			}
		}
	case "http-standard-headers":
		if len(tools) > 0 {
			call(name(tools[0]), map[string]any{})
		}
		if out, code := mcpx("resources", "--json", "up"); code == exitOK {
			if rs := items(out, "resources"); len(rs) > 0 {
				var uri string
				json.Unmarshal(rs[0]["uri"], &uri) //nolint:errcheck // "": the read fails, and says so
				mcpx("resource", "up", uri)
			}
		}
		if out, code := mcpx("prompts", "--json", "up"); code == exitOK {
			if ps := items(out, "prompts"); len(ps) > 0 {
				mcpx("prompt", "up", name(ps[0]))
			}
		}
	case "http-custom-headers":
		var cc struct {
			ToolCalls []struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"toolCalls"`
		}
		json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &cc) //nolint:errcheck // none: no calls
		for _, c := range cc.ToolCalls {
			call(c.Name, c.Arguments)
		}
	case "http-invalid-tool-headers":
		// Every tool listed, and those the server offers with invalid
		// headers by name: mcpx must list none of them and call none.
		names := []string{"invalid_empty_header", "invalid_number_header", "invalid_colon_in_name"}
		for _, t := range tools {
			names = append(names, name(t))
		}
		for _, n := range names {
			call(n, map[string]string{"region": "us-west1"})
		}
	}
	return 0
}

// items are the objects of the array member key of a JSON object.
func items(raw, key string) []map[string]json.RawMessage {
	var obj map[string]json.RawMessage
	var out []map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &obj) == nil {
		json.Unmarshal(obj[key], &out) //nolint:errcheck // none
	}
	return out
}

func name(item map[string]json.RawMessage) string {
	var s string
	json.Unmarshal(item["name"], &s) //nolint:errcheck // ""
	return s
}

// TestConformanceClient runs clientScenarios with mcpx as the client, each
// at its own revision, and requires every one to pass.
func TestConformanceClient(t *testing.T) {
	t.Parallel()
	testenv.Node(t)
	proctest.CheckNoLeaks(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	res := conformance.RunClient(t, exe, conformance.ClientOptions{Scenarios: clientScenarios,
		ClientTimeout: 60 * time.Second, Timeout: 2 * time.Minute, Env: []string{envConformanceClient + "=" + out}})
	t.Logf("mcpx as the client, conformance %s:\n%s", conformance.PackageAlpha12, conformance.Table(res))
	for _, s := range clientScenarios {
		r, ok := res[s]
		if !ok || !r.OK() || r.Passed == 0 {
			log, _ := os.ReadFile(filepath.Join(out, s, "daemon.log"))
			t.Errorf("%s: %s (ran: %v)\n%s", s, r, ok, tailString(string(log), 2000))
		}
	}
}

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
