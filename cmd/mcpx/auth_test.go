package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/oauthtest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// TestAuthLoginCallStatusLogout is a hosted MCP server behind OAuth, as
// the owner meets it (docs/oauth.md): a call fails at once with
// authorization-required and exit 4, `mcpx status` names the server;
// `mcpx auth login` (its $BROWSER this test binary, following the
// redirect to the loopback listener) signs in; calls go through; the
// sign-in survives a restart of the daemon; `mcpx auth logout` revokes it.
// No token, code or secret is in the daemon's log or in `auth status`.
func TestAuthLoginCallStatusLogout(t *testing.T) {
	proctest.CheckNoLeaks(t)
	p := oauthtest.New(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() }, nil))
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"log": map[string]any{"level": "debug"},
		"servers": map[string]any{"hosted": map[string]any{"url": p.MCPURL()}}})
	cfgPath, sock, state := filepath.Join(dir, "config.json"), filepath.Join(dir, "mcpx.sock"), filepath.Join(dir, "state")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", exe)
	t.Setenv(envTestBrowser, filepath.Join(dir, "browser.txt"))
	daemonLog := &testenv.SyncBuffer{}
	serve := func() func() {
		ctx, stop := context.WithCancel(context.Background())
		served := make(chan int, 1)
		go func() {
			served <- run(ctx, []string{"serve", "--config", cfgPath, "--socket", sock, "--state-dir", state, "--listen", "off"},
				strings.NewReader(""), daemonLog, daemonLog)
		}()
		testenv.WaitFor(t, "the socket to answer", func() bool { return client.Answers(sock) })
		return func() {
			stop()
			if code := <-served; code != exitOK {
				t.Errorf("serve exited %d", code)
			}
		}
	}
	mcpx := func(args ...string) (int, string, string) {
		var stdout, stderr testenv.SyncBuffer
		code := run(t.Context(), append(args[:1:1], append([]string{"--broker", sock}, args[1:]...)...), strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	stop := serve()
	defer func() { stop() }()

	if code, _, stderr := mcpx("call", "hosted.echo", `{"message":"hi"}`); code != exitFailed ||
		!strings.Contains(stderr, "authorization-required") || !strings.Contains(stderr, "mcpx auth login hosted") {
		t.Fatalf("a call before sign-in: exit %d, %s; want 4 and authorization-required naming the command", code, stderr)
	}
	if code, stdout, _ := mcpx("status"); code != exitOK || !strings.Contains(stdout, "sign-in needed: hosted") {
		t.Errorf("mcpx status before sign-in: exit %d:\n%s", code, stdout)
	}
	if code, stdout, stderr := mcpx("auth", "login", "hosted"); code != exitOK || !strings.Contains(stdout, "signed in to hosted") {
		t.Fatalf("mcpx auth login: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := mcpx("call", "hosted.echo", `{"message":"hi"}`); code != exitOK || stdout != "hi\n" {
		t.Fatalf("a call after sign-in: exit %d, %q %s", code, stdout, stderr)
	}

	if code, stdout, _ := mcpx("events"); code != exitOK || !strings.Contains(stdout, "auth-required") || !strings.Contains(stdout, "auth-signed-in") {
		t.Errorf("mcpx events: exit %d, want auth-required and auth-signed-in:\n%s", code, stdout)
	}

	stop() // a restarted daemon reads the sign-in back
	stop = serve()
	if code, stdout, stderr := mcpx("call", "hosted.echo", `{"message":"again"}`); code != exitOK || stdout != "again\n" {
		t.Fatalf("a call after a restart: exit %d, %q %s", code, stdout, stderr)
	}
	code, stdout, _ := mcpx("auth", "status", "--json")
	var st wire.AuthStatusList
	if err := json.Unmarshal([]byte(stdout), &st); code != exitOK || err != nil || len(st.Servers) != 1 ||
		!st.Servers[0].SignedIn || !st.Servers[0].Refresh || st.Servers[0].Client != "registered" || st.Servers[0].Issuer != p.AS.URL {
		t.Errorf("mcpx auth status --json: exit %d, %v:\n%s", code, err, stdout)
	}
	if code, stdout, stderr := mcpx("auth", "logout", "hosted"); code != exitOK || !strings.Contains(stdout, "revoked") {
		t.Errorf("mcpx auth logout: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := mcpx("call", "hosted.echo", `{"message":"hi"}`); code != exitFailed || !strings.Contains(stderr, "authorization-required") {
		t.Errorf("a call after logout: exit %d, %s", code, stderr)
	}

	if len(p.Revoked()) == 0 {
		t.Error("logout revoked nothing at the authorization server")
	}
	file, _ := os.ReadFile(filepath.Join(state, "logs", "mcpx.jsonl"))
	log := daemonLog.String() + string(file)
	for _, s := range p.Issued() {
		if strings.Contains(log, s) || strings.Contains(stdout, s) {
			t.Errorf("the daemon's log or auth status holds a secret (%.8s…)", s)
		}
	}
	if !strings.Contains(log, "signed in") {
		t.Errorf("the daemon's log does not say the owner signed in:\n%s", log)
	}
}

// TestAuthClientMetadata: `mcpx auth client-metadata <url>` prints mcpx's
// Client ID Metadata Document for the URL the owner publishes it at, and
// with --serve serves it at that URL's path; a URL the draft forbids is a
// usage error saying why.
func TestAuthClientMetadata(t *testing.T) {
	t.Parallel()
	const u = "https://example.com/mcpx/client.json"
	var stdout, stderr testenv.SyncBuffer
	if code := run(t.Context(), []string{"auth", "client-metadata", "--port", "8123", u}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var doc struct {
		ClientID     string   `json:"client_id"`
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &doc); err != nil || doc.ClientID != u || doc.AuthMethod != "none" ||
		!slices.Contains(doc.RedirectURIs, "http://127.0.0.1:8123/callback") {
		t.Errorf("the document (%v):\n%s", err, stdout.String())
	}
	printed := stdout.String()

	if code := run(t.Context(), []string{"auth", "client-metadata", "http://example.com/c.json"}, strings.NewReader(""), &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "must be an https URL") {
		t.Errorf("an http URL: exit %d, %s; want a usage error asking for https", code, stderr.String())
	}

	ctx, stop := context.WithCancel(t.Context())
	var served, serveErr testenv.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"auth", "client-metadata", "--port", "8123", "--serve", "127.0.0.1:0", u}, strings.NewReader(""), &served, &serveErr)
	}()
	var at string
	testenv.WaitFor(t, "the document to be served", func() bool {
		_, at, _ = strings.Cut(strings.TrimSpace(serveErr.String()), " at ")
		return at != ""
	})
	resp, err := http.Get(at)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasSuffix(at, "/mcpx/client.json") || resp.StatusCode != 200 || string(body) != printed {
		t.Errorf("GET %s: %d %s; want the printed document", at, resp.StatusCode, body)
	}
	stop()
	if code := <-done; code != exitOK {
		t.Errorf("--serve exited %d after an interrupt: %s", code, serveErr.String())
	}
}
