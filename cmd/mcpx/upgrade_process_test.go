package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/internal/testing/testtailnet"
	"mcpx.dev/mcpx/wire"
)

// upgradeDaemon is a `mcpx serve` process of TestUpgradeProcess.
type upgradeDaemon struct {
	t    *testing.T
	mcpx string
	sock string
	env  []string
	cmd  *exec.Cmd
	logs *testenv.SyncBuffer
	bc   *client.Client
}

// startUpgradeDaemon starts `mcpx serve` on cfg as a process of its own.
func startUpgradeDaemon(t *testing.T, mcpx, dir, cfg string, env []string) *upgradeDaemon {
	d := &upgradeDaemon{t: t, mcpx: mcpx, sock: filepath.Join(dir, "mcpx.sock"), env: env, logs: new(testenv.SyncBuffer)}
	d.cmd = exec.Command(mcpx, "serve", "--config", cfg, "--socket", d.sock, "--state-dir", filepath.Join(dir, "state"), "--listen", "127.0.0.1:0")
	d.cmd.Env, d.cmd.Stdout, d.cmd.Stderr = env, d.logs, d.logs
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.cmd.Process.Kill(); d.cmd.Wait() })
	testenv.WaitFor(t, "the daemon to serve", func() bool { return strings.Contains(d.logs.String(), "mcpx serving") })
	d.bc = client.New(d.sock, client.Options{})
	return d
}

// processTest checks the test leaves no process behind and returns the
// mcpx binary (testscript.Main put the test binary there), a directory
// for the test and its process marker.
func processTest(t *testing.T) (mcpx, dir, marker string) {
	t.Helper()
	proctest.CheckNoLeaks(t)
	mcpx, err := exec.LookPath("mcpx")
	if err != nil {
		t.Fatal(err)
	}
	if dir, err = filepath.EvalSymlinks(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	return mcpx, dir, proctest.Env(t)
}

// waitExit waits for the stopped daemon and checks it exited cleanly (a
// -race daemon that saw a race exits 66).
func (d *upgradeDaemon) waitExit() {
	if err := d.cmd.Wait(); err != nil {
		d.t.Errorf("the daemon exited: %v\n%s", err, d.logs.String())
	}
}

// cli runs the mcpx CLI against the daemon.
func (d *upgradeDaemon) cli(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(d.t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.mcpx, args...)
	cmd.Env = append(d.env, "MCPX_NO_AUTOSTART=1")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// instances are the daemon's instances by id.
func (d *upgradeDaemon) instances() map[string]wire.Instance {
	d.t.Helper()
	list, _, err := d.bc.Instances(d.t.Context())
	if err != nil {
		d.t.Fatal(err)
	}
	out := map[string]wire.Instance{}
	for _, in := range list.Instances {
		out[in.ID] = in
	}
	return out
}

// fds counts the daemon's open descriptors, but for the temporary files
// of state being replaced (internal/atomicfile), which come and go.
func (d *upgradeDaemon) fds() int {
	dir := fmt.Sprintf("/proc/%d/fd", d.cmd.Process.Pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		d.t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, _ := os.Readlink(filepath.Join(dir, e.Name())); !strings.Contains(filepath.Base(target), ".tmp") {
			n++
		}
	}
	return n
}

// steadyFDs counts the daemon's descriptors once two counts a moment
// apart agree (connections just closed by a client go).
func (d *upgradeDaemon) steadyFDs() int {
	n := d.fds()
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		m := d.fds()
		if m == n {
			break
		}
		n = m
	}
	return n
}

// fdKinds counts the daemon's descriptors by kind (socket, pipe, pidfd,
// the files by name).
func (d *upgradeDaemon) fdKinds() map[string]int {
	dir := fmt.Sprintf("/proc/%d/fd", d.cmd.Process.Pid)
	ents, _ := os.ReadDir(dir)
	out := map[string]int{}
	for _, e := range ents {
		target, _ := os.Readlink(filepath.Join(dir, e.Name()))
		kind, _, _ := strings.Cut(target, "[")
		if kind == "pipe:" {
			kind = target
		}
		out[kind]++
	}
	return out
}

func childPipes(ins map[string]wire.Instance) string {
	var out []string
	for id, in := range ins {
		for _, fd := range []string{"0", "1", "2"} {
			target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", in.Pid, fd))
			out = append(out, id+"/"+fd+"="+target)
		}
	}
	return strings.Join(out, " ")
}

// callText calls server.tool as cl over c and returns the result's text.
func callText(ctx context.Context, c *client.Client, cl client.Caller, server, tool, args string) (string, error) {
	res, err := c.Call(ctx, cl, server, tool, json.RawMessage(args), client.CallOptions{})
	if err != nil {
		return "", err
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) != 1 || r.IsError {
		return "", fmt.Errorf("result %s", res)
	}
	return r.Content[0].Text, nil
}

// TestUpgradeProcess is the handoff's acceptance test: a real `mcpx serve`
// upgraded in place 20 times while 16 callers call continuously, 8 over
// the REST API on the unix socket (each its own session, counting on a
// session-scoped demo child) and 8 over the MCP endpoint (echoing unique
// messages, and counting on their MCP session's own child). No call fails
// or is answered twice, no MCP session is lost, every counter counts on
// from where it was (the children and their state survived), every pid is
// the same (a private directory's child with its directory), the daemon
// holds as many descriptors after as before, and a
// server whose executable changed between two upgrades is replaced while
// the others are adopted. Every process is gone at the end.
func TestUpgradeProcess(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	mcpx, dir, marker := processTest(t)
	const restCallers, mcpCallers, upgrades = 8, 8, 20
	// "other" runs a copy of the binary, rewritten between two upgrades:
	// its definition identity (the executable's) changes under the
	// daemon, which watches no executables here, so only the upgrade sees it.
	otherBin := filepath.Join(dir, "other", "mcpx") // the name testscript dispatches on
	copyFile(t, mcpx, otherBin, nil)
	childEnv := map[string]string{proctest.MarkerEnv: proctest.Marker(t)}
	cfg, _ := json.Marshal(map[string]any{"pool": map[string]any{"execWatch": "off"}, "servers": map[string]any{
		"counter": map[string]any{"command": mcpx, "args": []string{"demo-server"}, "scope": "session", "max": restCallers + mcpCallers, "env": childEnv},
		"echo":    map[string]any{"command": mcpx, "args": []string{"demo-server"}, "scope": "global", "env": childEnv},
		"other":   map[string]any{"command": otherBin, "args": []string{"demo-server"}, "scope": "global", "env": childEnv},
		"leased":  map[string]any{"command": mcpx, "args": []string{"demo-server"}, "scope": "pid", "env": childEnv},
		// A private directory per instance: handed over with it.
		"scratch": map[string]any{"command": mcpx, "args": []string{"demo-server"}, "scope": "global",
			"env": map[string]string{proctest.MarkerEnv: proctest.Marker(t), "SCRATCH": "${mcpx.tmpdir}"}},
	}})
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), marker, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "xstate"))
	d := startUpgradeDaemon(t, mcpx, dir, cfgPath, env)
	daemonPid := d.cmd.Process.Pid

	ctx := t.Context()
	counts := make([]int, restCallers)
	session := func(i int) client.Caller { return client.Caller{Session: fmt.Sprintf("caller-%d", i), Cwd: dir} }
	for i := range restCallers { // each session's child, started and counted once
		got, err := callText(ctx, d.bc, session(i), "counter", "counter", "{}")
		if err != nil || got != "1" {
			t.Fatalf("first count of caller %d: %q, %v\n%s", i, got, err, d.logs.String())
		}
		counts[i] = 1
	}
	for _, server := range []string{"echo", "other"} {
		if _, err := callText(ctx, d.bc, client.Caller{Cwd: dir}, server, "echo", `{"message":"warm"}`); err != nil {
			t.Fatal(err)
		}
	}
	// A lease-keyed child: its lease must outlive the upgrades with it.
	lease, err := d.bc.AcquireLease(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leased := client.Caller{Lease: lease.ID, Cwd: dir}
	if got, err := callText(ctx, d.bc, leased, "leased", "counter", "{}"); err != nil || got != "1" {
		t.Fatalf("leased count: %q, %v", got, err)
	}
	// The scratch child's private directory, with a file in it, and its
	// count: both must be there after the upgrades.
	scratchDir, err := callText(ctx, d.bc, client.Caller{Cwd: dir}, "scratch", "env", `{"name":"SCRATCH"}`)
	if err != nil || scratchDir == "" {
		t.Fatalf("scratch's ${mcpx.tmpdir}: %q, %v", scratchDir, err)
	}
	if err := os.WriteFile(filepath.Join(scratchDir, "kept"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := callText(ctx, d.bc, client.Caller{Cwd: dir}, "scratch", "counter", "{}"); err != nil || got != "1" {
		t.Fatalf("scratch count: %q, %v", got, err)
	}
	d.bc.CloseIdleConnections()
	// Every descriptor the daemon holds now it holds after.
	fdsBefore, kindsBefore := d.steadyFDs(), d.fdKinds()
	before := d.instances()
	if len(before) != restCallers+4 {
		t.Fatalf("instances before: %d, want %d: %v", len(before), restCallers+4, before)
	}

	// The callers, until stop: each call's answer is checked, its latency kept.
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []string
		calls    atomic.Int64
		reinits  atomic.Int64
		longest  atomic.Int64 // ns
	)
	fail := func(format string, a ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
	timed := func(f func() error) error {
		began := time.Now()
		err := f()
		if d := time.Since(began); int64(d) > longest.Load() {
			longest.Store(int64(d)) // racy max: close enough for a figure, never asserted
		}
		calls.Add(1)
		return err
	}
	for i := range restCallers {
		wg.Go(func() {
			c := client.New(d.sock, client.Options{})
			defer c.CloseIdleConnections()
			for n := 0; !stop.Load() && n < 100000; n++ {
				var got string
				err := timed(func() (err error) {
					got, err = callText(ctx, c, session(i), "counter", "counter", "{}")
					return err
				})
				if err != nil {
					fail("rest caller %d: %v", i, err)
					return
				}
				if want := strconv.Itoa(counts[i] + 1); got != want {
					fail("rest caller %d: counted %s after %d (a call lost, repeated, or a child's state gone)", i, got, counts[i])
					return
				}
				counts[i]++
			}
		})
	}
	for i := range mcpCallers {
		wg.Go(func() {
			m := newMCPCaller(d.sock)
			defer m.hc.CloseIdleConnections()
			defer func() {
				if err := m.end(ctx); err != nil {
					fail("mcp caller %d: %v", i, err)
				}
			}()
			count := 0 // on the MCP session's own counter child
			for n := 0; !stop.Load() && n < 100000; n++ {
				msg := fmt.Sprintf("mcp-%d-%d", i, n)
				var got, counted string
				err := timed(func() (err error) {
					if got, err = m.echo(ctx, msg, &reinits); err != nil {
						return err
					}
					counted, err = m.call(ctx, "counter__counter", "{}", &reinits)
					return err
				})
				if err != nil {
					fail("mcp caller %d: %v", i, err)
					return
				}
				if got != msg {
					fail("mcp caller %d: answered %q to %q", i, got, msg)
					return
				}
				if want := strconv.Itoa(count + 1); counted != want {
					fail("mcp caller %d: counted %s after %d (the session or its child's state was lost)", i, counted, count)
					return
				}
				count++
			}
		})
	}

	var switches []time.Duration
	// A guard against a hang, not a figure: 20 upgrades take under a
	// minute on a quiet machine, 11 took 3 minutes at load average 30.
	deadline := time.Now().Add(6 * time.Minute)
	for n := 1; n <= upgrades && time.Now().Before(deadline); n++ {
		if n == upgrades/2+1 {
			copyFile(t, mcpx, otherBin, []byte("changed")) // a new file: a new identity
		}
		began := time.Now()
		out, err := d.cli("daemon", "upgrade", "--broker", d.sock)
		switches = append(switches, time.Since(began))
		if want := fmt.Sprintf("generation %d", n+1); err != nil || !strings.Contains(out, want) {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("upgrade %d: %v: %s (want %q)\n%s", n, err, out, want, d.logs.String())
		}
		time.Sleep(50 * time.Millisecond) // let the callers call between two switches
	}
	stop.Store(true)
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if len(failures) > 0 {
		for _, line := range strings.Split(d.logs.String(), "\n") {
			if strings.Contains(line, "upgrad") {
				t.Log(line)
			}
		}
	}
	if len(switches) != upgrades {
		t.Errorf("only %d upgrades ran before the deadline", len(switches))
	}
	if n := reinits.Load(); n != 0 {
		t.Errorf("MCP clients had to initialize again %d times: their sessions were not carried over the upgrades", n)
	}
	slowest := time.Duration(0)
	for _, s := range switches {
		slowest = max(slowest, s)
	}
	t.Logf("%d calls (%d MCP re-initializations) across %d upgrades; longest call %v; slowest `mcpx daemon upgrade` %v",
		calls.Load(), reinits.Load(), len(switches), time.Duration(longest.Load()), slowest)

	if d.cmd.Process.Pid != daemonPid {
		t.Errorf("daemon pid changed")
	}
	who, _, err := d.bc.Whoami(ctx, client.Caller{})
	if err != nil || who.Daemon == nil || who.Daemon.Pid != daemonPid || who.Daemon.Generation != upgrades+1 {
		t.Errorf("whoami after the upgrades: %+v, %v; want pid %d, generation %d", who.Daemon, err, daemonPid, upgrades+1)
	}
	// Every child is the one it was, but other's, which was replaced.
	if _, err := callText(ctx, d.bc, client.Caller{Cwd: dir}, "other", "echo", `{"message":"again"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := d.bc.RenewLease(ctx, lease.ID, time.Hour); err != nil {
		t.Errorf("renewing the lease after the upgrades: %v", err)
	}
	if got, err := callText(ctx, d.bc, leased, "leased", "counter", "{}"); err != nil || got != "2" {
		t.Errorf("leased count after the upgrades: %q, %v (want 2: the same child)", got, err)
	}
	after := d.instances()
	for id, in := range before {
		a, ok := after[id]
		switch {
		case in.Server == "other" && ok:
			t.Errorf("%s was adopted after its executable changed: %+v", id, a)
		case in.Server != "other" && (!ok || a.Pid != in.Pid):
			t.Errorf("%s: pid %d before, %+v after", id, in.Pid, a)
		}
	}
	if got, err := callText(ctx, d.bc, client.Caller{Cwd: dir}, "scratch", "env", `{"name":"SCRATCH"}`); err != nil || got != scratchDir {
		t.Errorf("scratch's ${mcpx.tmpdir} after the upgrades: %q, %v; want %q", got, err, scratchDir)
	}
	if _, err := os.Stat(filepath.Join(scratchDir, "kept")); err != nil {
		t.Errorf("the file in scratch's private directory after the upgrades: %v", err)
	}
	if got, err := callText(ctx, d.bc, client.Caller{Cwd: dir}, "scratch", "counter", "{}"); err != nil || got != "2" {
		t.Errorf("scratch count after the upgrades: %q, %v (want 2: the same child)", got, err)
	}
	var upgradeEvents []string
	evctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	d.bc.Events(evctx, 0, false, func(ev wire.LifecycleEvent, _ json.RawMessage) error { //nolint:errcheck // what was read is checked
		if ev.Kind == wire.EventUpgrade {
			upgradeEvents = append(upgradeEvents, ev.Reason)
		}
		return nil
	})
	cancel()
	replaced := 0
	for _, r := range upgradeEvents {
		if strings.Contains(r, "replaced other-1") {
			replaced++
		}
	}
	if len(upgradeEvents) != upgrades || replaced != 1 {
		t.Errorf("upgrade events: %d, %d replacing other-1; want %d and 1:\n%s", len(upgradeEvents), replaced, upgrades, strings.Join(upgradeEvents, "\n"))
	}
	d.bc.CloseIdleConnections()
	fdsAfter := d.steadyFDs()
	if fdsAfter != fdsBefore {
		t.Errorf("the daemon has %d descriptors open after the upgrades, %d before:\n%v\n%v\n%s", fdsAfter, fdsBefore, d.fdKinds(), kindsBefore, childPipes(d.instances()))
	}
	if out, err := d.cli("daemon", "stop", "--broker", d.sock); err != nil {
		t.Errorf("daemon stop: %v: %s", err, out)
	}
	d.waitExit()
}

// copyFile writes src's content, then extra, to a new file at dst.
func copyFile(t *testing.T, src, dst string, extra []byte) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, append(b, extra...), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// mcpCaller is a minimal Streamable HTTP MCP client over the unix socket:
// a session re-initialized (and its call sent again) when the daemon
// answers 404 for it, as the spec tells a client to do.
type mcpCaller struct {
	hc  *http.Client
	sid string
	id  int
}

func newMCPCaller(sock string) *mcpCaller {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	return &mcpCaller{hc: &http.Client{Transport: tr}}
}

// post sends one JSON-RPC message; for a request, it returns the response
// (read from JSON or the SSE stream).
func (m *mcpCaller) post(ctx context.Context, body string) (int, json.RawMessage, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://mcpx/mcp", strings.NewReader(body))
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	if m.sid != "" {
		req.Header.Set("Mcp-Session-Id", m.sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		m.sid = sid
	}
	if resp.StatusCode != 200 {
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil, nil
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(resp.Body)
		return 200, b, err
	}
	br := bufio.NewReader(resp.Body)
	for {
		ev, ok := nextSSE(br)
		if !ok {
			return 200, nil, fmt.Errorf("the SSE stream ended with no response")
		}
		if bytes.Contains([]byte(ev), []byte(`"result"`)) || bytes.Contains([]byte(ev), []byte(`"error"`)) {
			return 200, json.RawMessage(ev), nil
		}
	}
}

// nextSSE reads one event's data; false at the end.
func nextSSE(br *bufio.Reader) (string, bool) {
	data := ""
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", false
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" && data != "" {
			return data, true
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data += strings.TrimSpace(v)
		}
	}
}

func (m *mcpCaller) initialize(ctx context.Context) error {
	m.sid = ""
	code, _, err := m.post(ctx, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"upgrade-test","version":"1"}}}`)
	if err != nil || code != 200 || m.sid == "" {
		return fmt.Errorf("initialize: status %d, session %q, %v", code, m.sid, err)
	}
	_, err = m.send(ctx, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return err
}

// send sends body (none if "") in the session and returns the status.
func (m *mcpCaller) send(ctx context.Context, method, body string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, method, "http://mcpx/mcp", strings.NewReader(body))
	if body != "" {
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Mcp-Session-Id", m.sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := m.hc.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// echo calls echo__echo with msg and returns the text answered.
//
// A request that gets 404 never ran (the session went with the old image),
// so it is sent again in a new session, as a client must. Under a
// race-built daemon on a loaded machine one session can be lost to two or
// three upgrades in a row (an initialize that lands in a drain), so the
// bound is generous: the test is about calls, not retries.
func (m *mcpCaller) echo(ctx context.Context, msg string, reinits *atomic.Int64) (string, error) {
	args, _ := json.Marshal(map[string]string{"message": msg})
	return m.call(ctx, "echo__echo", string(args), reinits)
}

// call calls tool with args and returns the text answered. A 404 is
// counted in reinits, and the call sent again in a new session.
func (m *mcpCaller) call(ctx context.Context, tool, args string, reinits *atomic.Int64) (string, error) {
	for attempt := 0; attempt < 10; attempt++ {
		if m.sid == "" {
			if err := m.initialize(ctx); err != nil {
				return "", err
			}
		}
		m.id++
		code, res, err := m.post(ctx, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, m.id, tool, args))
		if err != nil {
			return "", err
		}
		if code == http.StatusNotFound { // the session is gone: a new one, and the call again (it never ran)
			m.sid = ""
			reinits.Add(1)
			continue
		}
		if code != 200 {
			return "", fmt.Errorf("tools/call: status %d", code)
		}
		var r struct {
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal(res, &r); err != nil || r.Error != nil || len(r.Result.Content) != 1 {
			return "", fmt.Errorf("tools/call: %s", res)
		}
		return r.Result.Content[0].Text, nil
	}
	return "", fmt.Errorf("tools/call: the session kept going away")
}

// end ends the session (DELETE): its session-scoped children stop.
func (m *mcpCaller) end(ctx context.Context) error {
	if m.sid == "" {
		return nil
	}
	code, err := m.send(ctx, "DELETE", "")
	if err == nil && code >= 300 {
		err = fmt.Errorf("DELETE the session: status %d", code)
	}
	return err
}

// TestUpgradeTailnetProcess measures what the tailnet node costs an
// upgrade: tsnet cannot be handed over, so the old image closes the node
// and the new one brings it up again; meanwhile the tailnet cannot reach
// the daemon (the unix socket still takes every caller). A laptop's call
// through its own node works again after.
func TestUpgradeTailnetProcess(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	mcpx, dir, marker := processTest(t)
	url, stopControl := startTestTailnet(t, mcpx, marker, dir)
	defer stopControl()
	sock := filepath.Join(dir, "b.sock")
	env := append(append(os.Environ(), marker, "XDG_CONFIG_HOME="+filepath.Join(dir, "config")), testtailnet.Env...)
	logs := new(testenv.SyncBuffer)
	serve := exec.Command(mcpx, "serve", "--socket", sock, "--state-dir", filepath.Join(dir, "state"), "--listen", "off",
		"--tailnet", "--tailnet-hostname", "broker", "--tailnet-control-url", url, "--tailnet-up-timeout", "30s")
	serve.Env, serve.Stdout, serve.Stderr = env, logs, logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	testenv.WaitFor(t, "the daemon to serve", func() bool { return strings.Contains(logs.String(), "mcpx serving") })
	d := &upgradeDaemon{t: t, mcpx: mcpx, sock: sock, env: env, cmd: serve, logs: logs}

	laptop := func() (string, error) {
		cmd := exec.Command(mcpx, "call", "--tsnet", "--broker", "broker", "--cwd", dir, "demo.echo", `{"message":"over the tailnet"}`)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), marker, "PWD="+dir, "MCPX_NO_AUTOSTART=1", "XDG_STATE_HOME="+filepath.Join(dir, "laptop"),
			"MCPX_TSNET_CONTROL_URL="+url, "MCPX_TSNET_HOSTNAME=laptop"), testtailnet.Env...)
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := laptop(); err != nil || out != "over the tailnet" {
		t.Fatalf("the laptop's call before the upgrade: %v: %s\n%s", err, out, logs.String())
	}
	if out, err := d.cli("daemon", "upgrade", "--broker", sock); err != nil || !strings.Contains(out, "generation 2") {
		t.Fatalf("upgrade: %v: %s\n%s", err, out, logs.String())
	}
	// The node is gone from just before the exec until the new image
	// serves on it again.
	var closed, up time.Time
	for _, line := range strings.Split(logs.String(), "\n") {
		at, _ := time.Parse(time.RFC3339Nano, strings.TrimPrefix(strings.Fields(line + " x")[0], "time="))
		switch {
		case strings.Contains(line, "upgrading: closing the tailnet node"):
			closed = at
		case strings.Contains(line, "mcpx serving") && !closed.IsZero():
			up = at
		}
	}
	if closed.IsZero() || up.IsZero() {
		t.Fatalf("no exec or no second start in the log:\n%s", logs.String())
	}
	t.Logf("the tailnet node was down for %v (from its close, before the exec, to the new image serving)", up.Sub(closed))
	if out, err := laptop(); err != nil || out != "over the tailnet" {
		t.Errorf("the laptop's call after the upgrade: %v: %s\n%s", err, out, logs.String())
	}
	if out, err := d.cli("daemon", "stop", "--broker", sock); err != nil {
		t.Errorf("daemon stop: %v: %s", err, out)
	}
	d.waitExit()
}

// TestUpgradeBadBinaryProcess: a binary that is not an executable file is
// refused before anything drains; one that the kernel will not execute is
// recorded, and the daemon executes its running binary again instead: the
// same pid and children, the next generation, the error in daemon info.
func TestUpgradeBadBinaryProcess(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	mcpx, dir, marker := processTest(t)
	cfg, _ := json.Marshal(map[string]any{"servers": map[string]any{
		"demo": map[string]any{"command": mcpx, "args": []string{"demo-server"}, "scope": "global",
			"env": map[string]string{proctest.MarkerEnv: proctest.Marker(t)}},
	}})
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	d := startUpgradeDaemon(t, mcpx, dir, cfgPath, append(os.Environ(), marker, "XDG_CONFIG_HOME="+filepath.Join(dir, "config")))
	ctx := t.Context()
	if got, err := callText(ctx, d.bc, client.Caller{Cwd: dir}, "demo", "counter", "{}"); err != nil || got != "1" {
		t.Fatalf("count: %q, %v", got, err)
	}

	out, err := d.cli("daemon", "upgrade", "--broker", d.sock, "--binary", filepath.Join(dir, "missing"))
	if err == nil || !strings.Contains(out, "missing") {
		t.Errorf("upgrade to a missing binary: %v: %s", err, out)
	}
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not a program\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	out, err = d.cli("daemon", "upgrade", "--broker", d.sock, "--binary", garbage)
	if err == nil || !strings.Contains(out, "did not run") {
		t.Errorf("upgrade to a file that does not execute: %v: %s", err, out)
	}
	who, _, err := d.bc.Whoami(ctx, client.Caller{})
	if err != nil || who.Daemon == nil || who.Daemon.Pid != d.cmd.Process.Pid || who.Daemon.Generation != 2 || !strings.Contains(who.Daemon.UpgradeError, "exec format error") {
		t.Errorf("after the failed upgrade: %+v, %v; want the same pid, generation 2 and the error", who.Daemon, err)
	}
	if got, err := callText(ctx, d.bc, client.Caller{Cwd: dir}, "demo", "counter", "{}"); err != nil || got != "2" {
		t.Errorf("count after the failed upgrade: %q, %v (want 2: the same child)", got, err)
	}
	// Then to another binary (a copy, as a new version would be): it runs.
	v2 := filepath.Join(dir, "v2", "mcpx")
	copyFile(t, mcpx, v2, nil)
	// --json says the same as an object.
	out, err = d.cli("daemon", "upgrade", "--broker", d.sock, "--binary", v2, "--json")
	var up upgradeOutcome
	if err != nil || json.Unmarshal([]byte(out), &up) != nil || up.Generation != 3 || up.Binary != v2 || up.Pid != d.cmd.Process.Pid || up.Version == "" {
		t.Errorf("upgrade --json to %s: %v: %s", v2, err, out)
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", d.cmd.Process.Pid)); err != nil || exe != v2 {
		t.Errorf("the daemon runs %s (%v), want %s", exe, err, v2)
	}
	if got, err := callText(ctx, d.bc, client.Caller{Cwd: dir}, "demo", "counter", "{}"); err != nil || got != "3" {
		t.Errorf("count after the upgrade: %q, %v (want 3: the same child)", got, err)
	}
	if out, err := d.cli("daemon", "stop", "--broker", d.sock); err != nil {
		t.Errorf("daemon stop: %v: %s", err, out)
	}
	d.waitExit()
}
