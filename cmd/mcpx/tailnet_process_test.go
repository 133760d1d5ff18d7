package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/internal/testing/testtailnet"
	"mcpx.dev/mcpx/tsnet"
)

// envTestTailnet makes this test binary a test tailnet (package
// testtailnet): it prints "control <url>", grants the rule in the
// variable's value to every node, and serves until its stdin closes.
const envTestTailnet = "MCPX_TEST_TAILNET_GRANT"

// maybeTestTailnet runs the test tailnet when this binary was started as
// one, and exits.
func maybeTestTailnet() {
	rule := os.Getenv(envTestTailnet)
	if rule == "" {
		return
	}
	tn, err := testtailnet.Start(testtailnet.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	g, err := testtailnet.Grant(tsnet.DefaultCapability, rule)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tn.Control.SetGlobalAppCaps(g)
	fmt.Printf("control %s\n", tn.URL)
	io.Copy(io.Discard, os.Stdin) // until the test closes it (or dies)
	tn.Close()
	os.Exit(0)
}

// TestServeTailnetProcess is the acceptance test of the tailnet side with
// three processes: a test control server (this binary as a test tailnet),
// the real `mcpx serve --tailnet` joining it, and `mcpx call --broker
// broker --tsnet` on a "laptop" joining it with an embedded node and
// calling the broker's demo server by MagicDNS name. The laptop's cwd is
// mapped by its client config to a directory on the broker's side, under
// the grant's root, and the instance is rooted there. An unmapped cwd is a
// clear error; `mcpx status` shows the broker's node. Every process is
// gone at the end.
func TestServeTailnetProcess(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	t.Run("http", func(t *testing.T) { testServeTailnetProcess(t, false) })
	t.Run("https", func(t *testing.T) { testServeTailnetProcess(t, true) })
}

// testServeTailnetProcess is TestServeTailnetProcess over HTTP on :80 (the
// test control server announces a certificate domain that cannot be issued
// offline: the daemon says so once and serves HTTP), or with withTLS over
// HTTPS on :443: the broker node's certificate cache is seeded with a
// certificate of a test CA that both processes trust (SSL_CERT_FILE), which
// is how the node would find a certificate it obtained earlier; the laptop
// calls https://broker.tail-scale.ts.net through its embedded node.
func testServeTailnetProcess(t *testing.T, withTLS bool) {
	proctest.CheckNoLeaks(t)
	mcpx, err := exec.LookPath("mcpx") // testscript.Main put the test binary there
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	brokerRoot := filepath.Join(dir, "broker", "src")
	laptopSrc := filepath.Join(dir, "laptop", "src")
	for _, d := range []string{filepath.Join(brokerRoot, "app"), filepath.Join(laptopSrc, "app"), filepath.Join(dir, "elsewhere")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	brokerRoot, _ = filepath.EvalSymlinks(brokerRoot)
	clientConfig := filepath.Join(dir, "client.json")
	if err := os.WriteFile(clientConfig, fmt.Appendf(nil, `{"pathMappings": {%q: %q}}`, laptopSrc, brokerRoot), 0o600); err != nil {
		t.Fatal(err)
	}
	marker := proctest.Env(t)

	// The control server, run by another program.
	url, stopControl := startTestTailnet(t, mcpx, marker, brokerRoot)

	// The broker: the real binary, joining with no auth key.
	env := append(os.Environ(), marker, "XDG_CONFIG_HOME="+filepath.Join(dir, "broker", "config"))
	env = append(env, testtailnet.Env...)
	brokerURL, certLine := "broker", "serving HTTP on :80 only"
	var trust []string
	if withTLS {
		ca := seedCert(t, filepath.Join(dir, "broker", "state", "tailnet", "certs"), "broker.tail-scale.ts.net")
		trust = []string{"SSL_CERT_FILE=" + ca}
		env = append(env, trust...)
		brokerURL, certLine = "https://broker.tail-scale.ts.net", "serving HTTPS on :443"
	}
	var logs testenv.SyncBuffer
	began := time.Now()
	serve := exec.Command(mcpx, "serve", "--socket", filepath.Join(dir, "b.sock"), "--state-dir", filepath.Join(dir, "broker", "state"),
		"--listen", "off", "--tailnet", "--tailnet-hostname", "broker", "--tailnet-control-url", url, "--tailnet-ephemeral",
		"--tailnet-up-timeout", "30s")
	serve.Env, serve.Stdout, serve.Stderr = env, &logs, &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	testenv.WaitFor(t, "the daemon to serve", func() bool { return strings.Contains(logs.String(), "mcpx serving") })
	t.Logf("mcpx serve --tailnet serving after %v", time.Since(began))
	if n := strings.Count(logs.String(), certLine); n != 1 {
		t.Errorf("%d lines %q, want 1:\n%s", n, certLine, logs.String())
	}

	// The laptop: the CLI with its own embedded node.
	laptop := func(cwd string, args ...string) (string, string, error) {
		// The flags right after the command, where every command reads them.
		cmd := exec.Command(mcpx, append([]string{args[0], "--broker", brokerURL, "--tsnet"}, args[1:]...)...)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), marker, "PWD="+cwd, "XDG_STATE_HOME="+filepath.Join(dir, "laptop", "state"),
			"MCPX_CLIENT_CONFIG="+clientConfig, "MCPX_TSNET_CONTROL_URL="+url, "MCPX_TSNET_HOSTNAME=laptop")
		cmd.Env = append(cmd.Env, testtailnet.Env...)
		cmd.Env = append(cmd.Env, trust...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return strings.TrimSpace(out.String()), errOut.String(), err
	}
	first := time.Now()
	out, errOut, err := laptop(filepath.Join(laptopSrc, "app"), "call", "demo.cwd", "{}")
	if err != nil || out != filepath.Join(brokerRoot, "app") {
		t.Fatalf("laptop call: %q, %v\n%s\nwant the instance rooted in %s (mapped)\ndaemon log:\n%s", out, err, errOut, filepath.Join(brokerRoot, "app"), logs.String())
	}
	t.Logf("first call from a new laptop process took %v", time.Since(first))
	if t.Failed() {
		return
	}

	// `mcpx run` on the laptop: the script runs there and its generated
	// client reaches the broker through the CLI's relay and embedded node,
	// from the mapped directory, with a token that is not the CLI's.
	if !withTLS {
		app := filepath.Join(laptopSrc, "app")
		testenv.WriteFiles(t, app, map[string]string{"where.ts": `import { demo } from "mcpx";
const r = await demo.cwd({});
console.log(JSON.stringify({ broker: r.content[0].text, here: process.cwd(), url: process.env.MCPX_URL }));
`})
		out, errOut, err := laptop(app, "run", "--runtime", testenv.Node(t), "where.ts")
		var got struct{ Broker, Here, URL string }
		if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.Broker != filepath.Join(brokerRoot, "app") ||
			got.Here != app || !strings.HasPrefix(got.URL, "http://127.0.0.1:") {
			t.Errorf("laptop mcpx run: %q, %v\n%s\nwant the broker's child in %s, the script in %s, a loopback relay", out, err, errOut, filepath.Join(brokerRoot, "app"), app)
		}
	}

	_, errOut, err = laptop(filepath.Join(dir, "elsewhere"), "call", "demo.cwd", "{}")
	if err == nil || !strings.Contains(errOut, "no path mapping covers") || !strings.Contains(errOut, "--cwd") {
		t.Errorf("a call from an unmapped cwd: %v\n%s\nwant an error suggesting --cwd or a mapping", err, errOut)
	}
	out, errOut, err = laptop(dir, "status")
	wantNode := "tailnet node broker (broker.tail-scale.ts.net)"
	if withTLS {
		wantNode += ", 100." // the addresses, then the URL
	}
	if err != nil || !strings.Contains(out, wantNode) || !strings.Contains(out, "via tailnet") ||
		strings.Contains(out, "https://broker") != withTLS {
		t.Errorf("laptop status: %v\n%s\n%s\nwant the broker's node and the caller via tailnet", err, out, errOut)
	}

	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := serve.Wait(); err != nil {
		t.Errorf("mcpx serve exited with %v after SIGTERM:\n%s", err, logs.String())
	}
	if err := stopControl(); err != nil {
		t.Errorf("the test tailnet exited with %v", err)
	}
}

// seedCert writes a certificate for domain, signed by a new test CA, where
// the tailnet node caches its certificates (dir), and returns the CA's
// PEM file.
func seedCert(t *testing.T, dir, domain string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mcpx test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: domain}, DNSNames: []string{domain},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(domain+".crt", "CERTIFICATE", der)
	write(domain+".key", "EC PRIVATE KEY", keyDER)
	write("test-ca.pem", "CERTIFICATE", caDER)
	return filepath.Join(dir, "test-ca.pem")
}

// startTestTailnet runs the test binary mcpx as a test tailnet (the
// control server of another program) granting every server under root,
// and returns its control URL and a stop that closes its stdin and waits
// for it (once; the test's end stops it too). marker is proctest's
// environment mark.
func startTestTailnet(t *testing.T, mcpx, marker, root string) (string, func() error) {
	t.Helper()
	control := exec.Command(mcpx)
	control.Env = append(os.Environ(), marker, envTestTailnet+`={"servers": ["*"], "roots": ["`+root+`"]}`)
	stdin, err := control.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := control.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	control.Stderr = io.Discard
	if err := control.Start(); err != nil {
		t.Fatal(err)
	}
	stop := sync.OnceValue(func() error { stdin.Close(); return control.Wait() })
	t.Cleanup(func() { stop() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "control ")
	if err != nil || !ok {
		t.Fatalf("the test tailnet printed %q, %v; want control <url>", line, err)
	}
	return url, stop
}
