package egress_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool/proc/egress"
)

// clientHosts starts an HTTPS and a plain-HTTP test host and a proxy
// binding allowing both, and writes the test CA to a file. It returns the
// URLs to fetch, the proxy's URL, and the CA file.
func clientHosts(t *testing.T) (httpsURL, httpURL, proxy, caFile string, p *egress.Proxy, l *logs) {
	t.Helper()
	pk := newPKI(t)
	hs := httpsHost(t, pk, "127.0.0.2:0")
	hp := httpHost(t, "127.0.0.2:0")
	p, l = newProxy(t, egress.Options{})
	_, u := serve(t, p, gh("api.example.test:"+port(t, hs), "api.example.test:"+port(t, hp)))
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pk.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return "https://api.example.test:" + port(t, hs) + "/from-client",
		"http://api.example.test:" + port(t, hp) + "/from-client",
		u.String(), caFile, p, l
}

// run runs a client with env alone as its environment (nothing inherited:
// no NO_PROXY of the machine's), bounded by a minute.
func run(t *testing.T, env []string, argv ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(env, "HOME="+t.TempDir(), "PATH=/usr/local/bin:/usr/bin:/bin", proctest.Env(t))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestCurl: curl through the proxy, as HTTPS_PROXY and http_proxy tell it.
// curl reads plain HTTP's proxy from lower-case http_proxy only (upper case
// is ignored since httpoxy), so a child needs both spellings.
func TestCurl(t *testing.T) {
	proctest.CheckNoLeaks(t)
	curl := testenv.Program(t, "curl", "apt-get install -y curl")
	httpsURL, httpURL, proxy, ca, p, l := clientHosts(t)
	env := []string{"HTTPS_PROXY=" + proxy, "http_proxy=" + proxy}

	for _, u := range []string{httpsURL, httpURL} {
		out, err := run(t, env, curl, "-q", "-sS", "--fail", "--cacert", ca, u)
		if err != nil || !strings.Contains(out, `"uri":"/from-client"`) {
			t.Errorf("curl %s: %v\n%s", u, err, out)
		}
	}
	evil := strings.Replace(httpsURL, "api.example.test", "evil.example.test", 1)
	out, err := run(t, env, curl, "-q", "-sS", "--fail", "--cacert", ca, evil)
	if err == nil || !strings.Contains(out, "403") {
		t.Errorf("curl %s: %v, want a failure naming 403\n%s", evil, err, out)
	}
	wantRefusal(t, l, "evil.example.test", "host not in the allowlist")
	if got := p.Counts()["gh"]; got != (egress.Counts{Allowed: 2, Refused: 1}) {
		t.Errorf("Counts = %+v, want 2 allowed and 1 refused", got)
	}
}

// TestNodeFetch: node's fetch through undici's EnvHttpProxyAgent, the
// agent a node server uses to honour HTTPS_PROXY (Node 20's built-in fetch
// ignores the proxy variables).
func TestNodeFetch(t *testing.T) {
	proctest.CheckNoLeaks(t)
	node := testenv.Node(t)
	undici := filepath.Join(testenv.RepoRoot(t), "testdata", "npm", "node_modules", "undici")
	if _, err := os.Stat(filepath.Join(undici, "package.json")); err != nil {
		msg := "undici is not installed under testdata/npm; install it with: npm ci --prefix testdata/npm"
		if os.Getenv(testenv.RequireDepsEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "fetch.js"))
	if err != nil {
		t.Fatal(err)
	}
	httpsURL, httpURL, proxy, ca, p, l := clientHosts(t)
	env := []string{"HTTPS_PROXY=" + proxy, "HTTP_PROXY=" + proxy, "CA_FILE=" + ca}

	for _, u := range []string{httpsURL, httpURL} {
		out, err := run(t, env, node, script, undici, u)
		if err != nil || !strings.HasPrefix(out, "200\n") || !strings.Contains(out, `"uri":"/from-client"`) {
			t.Errorf("node fetch %s: %v\n%s", u, err, out)
		}
	}
	evil := strings.Replace(httpsURL, "api.example.test", "evil.example.test", 1)
	out, err := run(t, env, node, script, undici, evil)
	if err == nil || !strings.Contains(out, "403") {
		t.Errorf("node fetch %s: %v, want a failure naming 403\n%s", evil, err, out)
	}
	wantRefusal(t, l, "evil.example.test", "host not in the allowlist")
	if got := p.Counts()["gh"]; got != (egress.Counts{Allowed: 2, Refused: 1}) {
		t.Errorf("Counts = %+v, want 2 allowed and 1 refused", got)
	}
}
