package api_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// The generated TypeScript client, on node, against server-everything:
// listResourceTemplates, complete, a URL-mode elicitation through onUrl
// (declined when the script has none), setLogLevel and onMessage
// (testdata/client/protocol.ts).
func TestTypeScriptClientProtocol(t *testing.T) {
	node := testenv.Node(t)
	tsc := testenv.NPMPackageBin(t, "typescript")
	d := everythingDaemon(t, 0)
	stateDir := filepath.Join(t.TempDir(), "state")
	rec, _ := json.Marshal(wire.DaemonRecord{URL: "http://" + d.TCPAddr, Token: apitest.Token})
	if err := os.MkdirAll(filepath.Join(stateDir, "mcpx"), 0o700); err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(stateDir, "mcpx", wire.RecordFile), string(rec))
	cwd := t.TempDir()
	res := d.TCP.Do(t, "GET", "/v1/clients/typescript", "", wire.HeaderCwd, cwd)
	if res.StatusCode != 200 {
		t.Fatalf("GET /v1/clients/typescript: %d %s", res.StatusCode, res.Bytes)
	}
	dir := t.TempDir()
	testenv.WriteFile(t, filepath.Join(dir, "client.ts"), string(res.Bytes))
	script, err := os.ReadFile(filepath.Join("testdata", "client", "protocol.ts"))
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(dir, "protocol.ts"), string(script))
	js := filepath.Join(dir, "js")
	tscCmd := exec.Command(node, tsc, "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler",
		"--rewriteRelativeImportExtensions", "--types", "", "--skipLibCheck", "--strict", "--outDir", js,
		filepath.Join(dir, "client.ts"), filepath.Join(dir, "protocol.ts"))
	tscCmd.Env = append(os.Environ(), proctest.Env(t))
	if b, err := tscCmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, b)
	}
	if err := os.WriteFile(filepath.Join(js, "package.json"), []byte(`{"type":"module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), node, filepath.Join(js, "protocol.js"))
	cmd.Dir = cwd
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + stateDir, proctest.Env(t)}
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("the script: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		Templates   []string `json:"templates"`
		Completions []string `json:"completions"`
		URL         string   `json:"url"`
		URLs        []struct {
			Mode, URL, ElicitationID string
		} `json:"urls"`
		URLWithoutHandler string                          `json:"urlWithoutHandler"`
		FormAsked         []string                        `json:"formAsked"`
		Messages          []struct{ Server, Data string } `json:"messages"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the script printed %s: %v", out, err)
	}
	if !slices.Contains(got.Templates, "demo://resource/dynamic/text/{resourceId}") {
		t.Errorf("templates %v", got.Templates)
	}
	if !slices.Equal(got.Completions, []string{"David", "Eve", "Frank"}) {
		t.Errorf("completions %v, want the Sales team", got.Completions)
	}
	if len(got.URLs) != 1 || got.URLs[0].Mode != "url" || got.URLs[0].URL != "https://example.com/ts" || got.URLs[0].ElicitationID != "ts-1" ||
		!strings.Contains(got.URL, "User completed the URL elicitation flow") {
		t.Errorf("onUrl asked %+v, result %q; want one url-mode request, accepted", got.URLs, got.URL)
	}
	if !strings.Contains(got.URLWithoutHandler, "declined") || len(got.FormAsked) != 0 {
		t.Errorf("without onUrl: result %q, onInput asked %v; want a decline, onInput never asked", got.URLWithoutHandler, got.FormAsked)
	}
	if len(got.Messages) == 0 || got.Messages[0].Server != "everything" || !simulatedLog.MatchString(got.Messages[0].Data) {
		t.Errorf("messages %+v, want server-everything's log message", got.Messages)
	}
}
