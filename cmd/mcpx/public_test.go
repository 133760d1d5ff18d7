package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// TestServePublicFlagsRefused: the public face's flags that would expose
// tokens or make no sense are usage errors that say what to do.
func TestServePublicFlagsRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--public", "ngrok"}, "--public-listen"},
		{[]string{"--public", "funnel"}, "add --tailnet"},
		{[]string{"--public-listen", "127.0.0.1:0"}, "needs --public-url"},
		{[]string{"--public-url", "https://x.example"}, "give it too"},
		{[]string{"--public-listen", "127.0.0.1:0", "--public-url", "http://x.example"}, "must be https"},
		{[]string{"--public-listen", "127.0.0.1:0", "--public-url", "https://x.example/mcp"}, "origin only"},
		{[]string{"--public-listen", "0.0.0.0:8443", "--public-url", "https://x.example"}, "in the clear"},
		{[]string{"--public-listen", "127.0.0.1:0", "--public-url", "https://x.example", "--public-cert", "c.pem"}, "go together"},
	} {
		var out strings.Builder
		code := run(t.Context(), append([]string{"serve", "--listen", "off"}, c.args...), strings.NewReader(""), &out, &out)
		if code != exitUsage || !strings.Contains(out.String(), c.want) {
			t.Errorf("serve %v: exit %d, %q; want a usage error saying %q", c.args, code, out.String(), c.want)
		}
	}
}

// TestServePublicListen: `mcpx serve --public-listen` with a certificate
// serves, over TLS, the public face's metadata and the MCP endpoint's
// challenge, and a 404 at the REST API; the daemon's own token opens
// nothing there. The config's pre-registered client is known there.
func TestServePublicListen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, key, pool := selfSigned(t, dir)
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"servers": {}, "public": {"clients": [{"id": "my-app", "name": "Configured App", "redirectUris": ["https://app.example/cb"]}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sock, state, log := filepath.Join(dir, "mcpx.sock"), filepath.Join(dir, "state"), new(testenv.SyncBuffer)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--config", cfg, "--socket", sock, "--state-dir", state,
			"--public-listen", "127.0.0.1:0", "--public-url", "https://mcpx.test", "--public-cert", cert, "--public-key", key},
			strings.NewReader(""), log, log)
	}()
	t.Cleanup(func() {
		stop()
		if code := <-served; code != exitOK {
			t.Errorf("serve exited %d:\n%s", code, log.String())
		}
	})
	testenv.WaitFor(t, "the daemon to answer", func() bool { return client.Answers(sock) })
	re := regexp.MustCompile(`"msg":"public face".*"url":"https://mcpx.test","listen":"([^"]+)"`)
	var m []string
	testenv.WaitFor(t, "the public face in the daemon's log", func() bool {
		files, _ := filepath.Glob(filepath.Join(state, daemon.LogDir, "*"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if m = re.FindStringSubmatch(string(b)); m != nil {
				return true
			}
		}
		return false
	})
	var rec *wire.DaemonRecord
	testenv.WaitFor(t, "the daemon record", func() bool {
		r, err := client.ReadRecord(state)
		rec = r
		return err == nil && r.Token != ""
	})
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "mcpx.test"}}}
	get := func(method, path string, h ...string) (*http.Response, string) {
		req, _ := http.NewRequestWithContext(t.Context(), method, "https://"+m[1]+path, strings.NewReader(`{}`))
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := get("GET", "/.well-known/oauth-protected-resource/mcp"); resp.StatusCode != 200 || !strings.Contains(body, `"resource":"https://mcpx.test/mcp"`) {
		t.Errorf("metadata: %d %s", resp.StatusCode, body)
	}
	if resp, body := get("POST", "/mcp", "Content-Type", "application/json", "Authorization", "Bearer "+rec.Token); resp.StatusCode != 401 ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="https://mcpx.test/.well-known/oauth-protected-resource/mcp"`) || strings.Contains(body, rec.Token) {
		t.Errorf("/mcp with the daemon's token: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
	if resp, _ := get("GET", "/v1/servers", "Authorization", "Bearer "+rec.Token, "Mcpx-Client", "t"); resp.StatusCode != 404 {
		t.Errorf("/v1/servers on the public face: %d", resp.StatusCode)
	}
	authorize := "/authorize?response_type=code&code_challenge_method=S256&code_challenge=" + strings.Repeat("c", 43) + "&redirect_uri=https://app.example/cb&client_id="
	if resp, body := get("GET", authorize+"my-app"); resp.StatusCode != 200 || !strings.Contains(body, "Approve Configured App") {
		t.Errorf("the config's client: %d %s", resp.StatusCode, body)
	}
	if resp, _ := get("GET", authorize+"other-app"); resp.StatusCode != 400 {
		t.Errorf("a client the config does not name: %d", resp.StatusCode)
	}
	checkTokenRevokeClient(t, sock, state, func(body string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", "https://"+m[1]+"/register", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	})
}

// selfSigned writes a certificate for mcpx.test and its key into dir and
// returns their paths and a pool that trusts it.
func selfSigned(t *testing.T, dir string) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mcpx.test"}, DNSNames: []string{"mcpx.test"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	c, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(c)
	return cert, key, pool
}

// TestTokenLsListsPublicTokens: `mcpx token ls`'s table of the public
// face's OAuth clients names each client's id, name, registration and
// redirect hosts, and each live access token's id, resource, servers and
// approver, never a secret, and leaves out refresh tokens.
func TestTokenLsListsPublicTokens(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	st, err := access.Open(filepath.Join(state, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Register("Claude", []string{"https://claude.ai/api/mcp/auth_callback"})
	if err != nil {
		t.Fatal(err)
	}
	at, rt, tok, err := st.IssuePair(access.Grant{Client: c.ID, ClientName: "Claude", Resource: "https://mcpx.test/mcp",
		Scopes: []string{"mcp"}, Rights: rights.Rights{{Servers: []string{"notes"}}}, Approver: "local:1000"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := printPublicTokens(&cli{stdout: &out, getenv: func(string) string { return "" }}, state); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, tok.ID) || !strings.Contains(s, "Claude") || !strings.Contains(s, "https://mcpx.test/mcp") ||
		!strings.Contains(s, "notes") || !strings.Contains(s, "local:1000") || !strings.Contains(s, c.ID+"  Claude  dcr") ||
		!strings.Contains(s, "claude.ai") || strings.Count(s, "\n") != 5 {
		t.Errorf("token ls:\n%s", s)
	}
	if strings.Contains(s, at) || strings.Contains(s, rt) {
		t.Error("token ls prints a secret")
	}
}
