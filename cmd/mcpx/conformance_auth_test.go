package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/conformance"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// The conformance suite's client auth scenarios, with mcpx as the client
// (issue 33): for each, the suite starts an MCP server behind an
// authorization server and runs this test binary as the client command
// (envConformanceClient set). That client is a private daemon with the
// scenario's server as the url server "up", `mcpx auth login up` whenever
// a command fails with authorization-required, its $BROWSER this test
// binary again (envTestBrowser), following the redirects to the login's
// loopback listener as a browser would; then `mcpx tools up` and
// `mcpx call up.test-tool`, as the suite's own clients do.
const (
	envConformanceClient = "MCPX_TEST_CONFORMANCE_CLIENT" // the directory the client leaves its evidence in
	envTestBrowser       = "MCPX_TEST_BROWSER"            // the file the browser writes the redirects it followed to
)

// cimdURL is the Client ID Metadata Document the suite's basic-cimd
// scenario expects a client to use (its AS never fetches it).
const cimdURL = "https://conformance-test.local/client-metadata.json"

// authScenarios are the suite's client auth scenarios (alpha.12's list).
var authScenarios = []string{
	"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
	"auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	"auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
	"auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
	"auth/authorization-server-migration", "auth/iss-supported", "auth/iss-not-advertised",
	"auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/iss-normalized",
	"auth/metadata-issuer-mismatch",
	// Extensions: client credentials (SEP-1046); the others
	// (enterprise-managed authorization, DPoP, workload identity) are not
	// in issue 33's scope.
	"auth/client-credentials-jwt", "auth/client-credentials-basic",
}

// maybeTestBrowser is $BROWSER in the conformance client: GET the URL and
// follow its redirects, recording each one's query, then exit.
func maybeTestBrowser() {
	record := os.Getenv(envTestBrowser)
	if record == "" || len(os.Args) < 2 {
		return
	}
	f, err := os.OpenFile(record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		os.Exit(1)
	}
	hc := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		fmt.Fprintln(f, req.URL.RawQuery)
		return nil
	}}
	resp, err := hc.Get(os.Args[len(os.Args)-1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		os.Exit(1)
	}
	resp.Body.Close()
	f.Close()
	os.Exit(0)
}

// maybeConformanceClient is the suite's client command: see above.
func maybeConformanceClient() {
	out := os.Getenv(envConformanceClient)
	if out == "" || len(os.Args) < 2 {
		return
	}
	os.Exit(conformanceClient(out, os.Args[len(os.Args)-1]))
}

func conformanceClient(out, serverURL string) int {
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	ev := filepath.Join(out, strings.ReplaceAll(scenario, "/", "_"))
	dir, err := os.MkdirTemp("", "mcpxc")
	if err != nil || os.MkdirAll(ev, 0o700) != nil {
		return 1
	}
	defer os.RemoveAll(dir)
	exe, _ := os.Executable()
	oauth := map[string]any{"clientMetadataUrl": cimdURL}
	var cc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		PrivateKey   string `json:"private_key_pem"`
		Alg          string `json:"signing_algorithm"`
	}
	json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &cc) //nolint:errcheck // most scenarios have none
	if cc.ClientID != "" {
		oauth["clientId"] = cc.ClientID
		if cc.ClientSecret != "" {
			os.Setenv("CONFORMANCE_CLIENT_SECRET", cc.ClientSecret)
			oauth["clientSecret"] = "${env:CONFORMANCE_CLIENT_SECRET}"
		}
	}
	if strings.HasPrefix(scenario, "auth/client-credentials") {
		// A machine-to-machine server: the owner configures its grant.
		oauth = map[string]any{"grant": "client_credentials", "clientId": cc.ClientID}
		if cc.ClientSecret != "" {
			oauth["clientSecret"] = "${env:CONFORMANCE_CLIENT_SECRET}"
		}
		if cc.PrivateKey != "" {
			os.Setenv("CONFORMANCE_CLIENT_KEY", cc.PrivateKey)
			oauth["privateKey"], oauth["signingAlgorithm"] = "${env:CONFORMANCE_CLIENT_KEY}", cc.Alg
		}
	}
	up := map[string]any{"url": serverURL, "oauth": oauth}
	if !strings.HasPrefix(scenario, "auth/") {
		up = map[string]any{"url": serverURL} // conformance_client_test.go
	}
	cfg, _ := json.Marshal(map[string]any{"log": map[string]any{"level": "debug"},
		"servers": map[string]any{"up": up}})
	cfgPath, sock, state := filepath.Join(dir, "config.json"), filepath.Join(dir, "mcpx.sock"), filepath.Join(dir, "state")
	if os.WriteFile(cfgPath, cfg, 0o600) != nil {
		return 1
	}
	daemonLog, err := os.Create(filepath.Join(ev, "daemon.log"))
	if err != nil {
		return 1
	}
	defer daemonLog.Close()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--config", cfgPath, "--socket", sock, "--state-dir", state, "--listen", "off"},
			strings.NewReader(""), daemonLog, daemonLog)
	}()
	defer func() { stop(); <-served }()
	for deadline := time.Now().Add(20 * time.Second); !client.Answers(sock); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "the daemon did not answer")
			return 1
		}
	}
	os.Setenv("BROWSER", exe)
	os.Setenv(envTestBrowser, filepath.Join(ev, "browser.txt"))
	if !strings.HasPrefix(scenario, "auth/") {
		return scenarioSteps(ctx, sock, scenario)
	}
	rc := clientSteps(ctx, sock)
	keepSecrets(ev, filepath.Join(state, "oauth", "up.json"), cc.ClientSecret)
	return rc
}

// clientSteps lists and calls, signing in whenever a step says to: at most
// five sign-ins, whatever the server does.
func clientSteps(ctx context.Context, sock string) int {
	steps := [][]string{{"tools", "--broker", sock, "up"}, {"call", "--broker", sock, "up.test-tool", "{}"}}
	logins := 0
	for _, step := range steps {
		for {
			var stdout, stderr bytes.Buffer
			code := run(ctx, step, strings.NewReader(""), &stdout, &stderr)
			fmt.Fprintf(os.Stderr, "mcpx %s: exit %d\n%s%s", step[0], code, stdout.String(), stderr.String())
			if code == exitOK {
				break
			}
			if !strings.Contains(stderr.String(), "authorization-required)") || logins >= 5 {
				return 1
			}
			logins++
			stderr.Reset()
			stdout.Reset()
			code = run(ctx, []string{"auth", "login", "--broker", sock, "up"}, strings.NewReader(""), &stdout, &stderr)
			fmt.Fprintf(os.Stderr, "mcpx auth login: exit %d\n%s%s", code, stdout.String(), stderr.String())
			if code != exitOK {
				return 1
			}
		}
	}
	return 0
}

// keepSecrets writes what must appear in no log line to ev/secrets.txt:
// the stored tokens and client secret, and the codes the browser saw.
func keepSecrets(ev, stored, clientSecret string) {
	var rec struct {
		AccessToken, RefreshToken string
		Client                    struct{ Secret string }
	}
	if b, err := os.ReadFile(stored); err == nil {
		json.Unmarshal(b, &rec) //nolint:errcheck // no record: nothing to keep
	}
	secrets := []string{rec.AccessToken, rec.RefreshToken, rec.Client.Secret, clientSecret}
	if b, err := os.ReadFile(filepath.Join(ev, "browser.txt")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			for _, kv := range strings.Split(line, "&") {
				if v, ok := strings.CutPrefix(kv, "code="); ok {
					secrets = append(secrets, v)
				}
			}
		}
	}
	secrets = slices.DeleteFunc(secrets, func(s string) bool { return len(s) < 6 })
	os.WriteFile(filepath.Join(ev, "secrets.txt"), []byte(strings.Join(secrets, "\n")), 0o600) //nolint:errcheck // checked by the test
}

// TestConformanceAuthClient runs the suite's client auth scenarios with
// mcpx as the client and holds their results to
// testdata/conformance-auth-alpha12.txt (a scenario that passed there and
// fails now fails the test; one that passes now and did not is reported).
// No token, code or client secret may appear in a daemon's log.
func TestConformanceAuthClient(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	testenv.Node(t)
	proctest.CheckNoLeaks(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	res := conformance.RunClient(t, exe, conformance.ClientOptions{Package: conformance.PackageAlpha12, Scenarios: authScenarios,
		ClientTimeout: 90 * time.Second, Timeout: 3 * time.Minute, Env: []string{envConformanceClient + "=" + out}})
	got := conformance.Table(res)
	t.Logf("mcpx as the client, conformance %s:\n%s", conformance.PackageAlpha12, got)
	for _, name := range conformance.ScenarioNames(res) {
		if r := res[name]; !r.OK() {
			t.Logf("%s: %s", name, r)
		}
	}
	checkAuthGolden(t, res)
	checkNoSecretsLogged(t, out)
}

func checkAuthGolden(t *testing.T, res map[string]conformance.Result) {
	t.Helper()
	golden := filepath.Join("testdata", "conformance-auth-alpha12.txt")
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (write it from the table above)", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		name, ok := strings.CutPrefix(line, "ok   ")
		if !ok {
			continue
		}
		if r, ran := res[name]; !ran || !r.OK() {
			t.Errorf("%s passed before (%s) and does not now: %s", name, golden, r)
		}
	}
	if got := conformance.Table(res); got != string(want) {
		t.Logf("%s differs from this run (a scenario now passes?): update it", golden)
	}
}

func checkNoSecretsLogged(t *testing.T, out string) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(out, "auth_*"))
	var checked int
	for _, d := range dirs {
		sec, err := os.ReadFile(filepath.Join(d, "secrets.txt"))
		if err != nil {
			continue
		}
		log, _ := os.ReadFile(filepath.Join(d, "daemon.log"))
		for _, s := range strings.Fields(string(sec)) {
			checked++
			if bytes.Contains(log, []byte(s)) {
				t.Errorf("%s: the daemon's log holds a secret (%.6s…)", filepath.Base(d), s)
			}
		}
	}
	if checked == 0 {
		t.Error("no scenario left a token, code or secret to look for in the logs")
	}
}
