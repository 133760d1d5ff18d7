package public_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/conformance"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestConformanceAuthorizationServer runs the official conformance
// suite's authorization server scenarios (0.2.0-alpha.12) against the
// embedded authorization server over TLS: the metadata endpoint, and the
// authorization code grant, whose browser this test plays (it opens the
// authorization page, approves its code as the owner would, and follows
// the redirect to the suite's callback).
func TestConformanceAuthorizationServer(t *testing.T) {
	t.Parallel()
	node := testenv.Node(t)
	bin := testenv.NPMPackageBin(t, conformance.PackageAlpha12)
	proctest.CheckNoLeaks(t) // the suite's node and what it starts
	shim, err := filepath.Abs("../../internal/testing/conformance/nodeshim/register.mjs")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "https://" + ln.Addr().String()
	st, err := access.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	face, err := public.New(public.Options{URL: issuer, Tokens: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(face)
	srv.Listener = ln
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	browser := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close() // the suite's callback server takes it
	c, err := st.Register("conformance", []string{"http://127.0.0.1:" + strconv.Itoa(port) + "/callback"})
	if err != nil {
		t.Fatal(err)
	}
	// One run: the code grant scenario reads the metadata scenario's
	// answer.
	for _, scenario := range []string{"all"} {
		out := filepath.Join(dir, scenario)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, node, "--import", shim, bin, "authorization", "--url", issuer,
			"--client-id", c.ID, "--resource", issuer+"/mcp", "--port", strconv.Itoa(port), "-o", out)
		cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+ca, proctest.Env(t))
		stdout, _ := cmd.StdoutPipe()
		var log strings.Builder
		cmd.Stderr = &log
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if strings.HasPrefix(line, issuer+public.AuthorizePath+"?") {
				go playBrowser(t, browser, face, line)
			}
		}
		err := cmd.Wait()
		cancel()
		checks, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
		var all string
		for _, f := range checks {
			b, _ := os.ReadFile(f)
			all += string(b)
		}
		t.Logf("%s", log.String())
		if err != nil || len(checks) == 0 || strings.Contains(all, `"FAILURE"`) || !strings.Contains(all, `"SUCCESS"`) {
			t.Errorf("%s: %v\n%s\nchecks: %s", scenario, err, log.String(), all)
		}
	}
}

// playBrowser opens the authorization page, approves its code as the
// owner, and follows the page to the client's callback.
func playBrowser(t *testing.T, browser *http.Client, face *public.Face, authURL string) {
	get := func(u string) (*http.Response, string, error) {
		resp, err := browser.Get(u)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b), nil
	}
	_, page, err := get(authURL)
	if err != nil {
		t.Errorf("authorization page: %v", err)
		return
	}
	code := regexp.MustCompile(`id="code">([A-Z]{4}-[A-Z]{4})<`).FindStringSubmatch(page)
	wait := regexp.MustCompile(`url=(/authorize/wait\?id=[^"]+)"`).FindStringSubmatch(page)
	if code == nil || wait == nil {
		t.Errorf("authorization page: %s", page)
		return
	}
	if _, err := face.Approve(code[1], public.Approval{Approver: "owner", Rights: rights.All()}); err != nil {
		t.Errorf("approve: %v", err)
		return
	}
	if _, _, err := get(face.Origin() + strings.ReplaceAll(wait[1], "&amp;", "&")); err != nil {
		t.Errorf("back to the client: %v", err)
	}
}
