package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool/proc"
)

// envSurviveDaemon makes this test binary a stand-in `mcpx serve` on the
// state directory it names (survivingDaemon).
const envSurviveDaemon = "MCPX_TEST_SURVIVE_DAEMON"

func init() {
	// TestMain's MaybeWatch and MaybeServe run first: a watchdog or a demo
	// child started from this binary never gets here with the variable
	// (the pool gives children an allowlisted environment; the watchdog
	// is not started before Supervise, which the stand-in runs).
	if dir := os.Getenv(envSurviveDaemon); dir != "" && os.Getenv("MCPX_WATCHDOG") == "" && os.Getenv(demo.EnvServer) == "" {
		proc.MaybeWatch() // returns: sets up the watchdog for Supervise
		survivingDaemon(dir)
	}
}

var surviveOwner = broker.Caller{Name: "local:test", Via: "unix", Local: true, Owner: true, Rights: rights.All()}

// surviveConfig is a session-scoped demo server, pool.survive as told;
// extra is one more env variable of the server (a changed definition).
func surviveConfig(t testing.TB, marker string, survive bool, extra string) *config.Config {
	env := fmt.Sprintf(`{%q: "1", %q: %q%s}`, demo.EnvServer, proctest.MarkerEnv, marker, extra)
	doc := fmt.Sprintf(`{"pool": {"survive": %v, "execWatch": "off"}, "servers": {"demo": {"command": %q, "scope": "session", "env": %s}}}`,
		survive, os.Args[0], env)
	cfg, err := config.Parse([]byte(doc), "test")
	if err != nil {
		if t != nil {
			t.Fatal(err)
		}
		panic(err)
	}
	return cfg
}

func callTool(ctx context.Context, b *broker.Broker, tool string, args string) (string, error) {
	r := broker.Request{Caller: surviveOwner, Context: broker.CallContext{Session: "s1"}, Server: "demo"}
	var raw json.RawMessage
	if args != "" {
		raw = json.RawMessage(args)
	}
	res, err := b.CallTool(ctx, r, tool, raw, nil)
	if err != nil {
		return "", err
	}
	var out struct {
		Content []struct{ Text string } `json:"content"`
	}
	json.Unmarshal(res, &out)
	if len(out.Content) == 0 {
		return "", fmt.Errorf("no content in %s", res)
	}
	return out.Content[0].Text, nil
}

// survivingDaemon is the stand-in: a daemon whose session-scoped demo
// child has counted to 2, SIGKILLed (by the test) with a call in flight.
func survivingDaemon(dir string) {
	fail := func(err error) { fmt.Fprintln(os.Stderr, err); os.Exit(1) }
	survive := os.Getenv("MCPX_TEST_SURVIVE") == "1"
	d, err := daemon.New(daemon.Options{Config: surviveConfig(nil, os.Getenv(proctest.MarkerEnv), survive, ""), StateDir: dir, Stderr: os.Stderr})
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	for range 2 {
		if _, err := callTool(ctx, d.Broker, "counter", ""); err != nil {
			fail(err)
		}
	}
	go callTool(ctx, d.Broker, "sleep", `{"ms": 300}`)
	for range 1000 {
		if st := d.Broker.Instances(); len(st) == 1 && st[0].InFlight > 0 {
			b, _ := os.ReadFile(filepath.Join(dir, broker.SurviveFile))
			if !survive || strings.Contains(string(b), `"pid":`+strconv.Itoa(st[0].Pid)) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Println(d.Broker.Instances()[0].Pid)
	select {}
}

// killDaemon runs survivingDaemon on a new state directory and SIGKILLs
// it; it returns the directory and the child's pid.
func killDaemon(t *testing.T, survive bool) (string, int) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	flag := "0"
	if survive {
		flag = "1"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envSurviveDaemon+"="+dir, "MCPX_TEST_SURVIVE="+flag, proctest.Env(t))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		t.Fatalf("the stand-in daemon said %q: %v", line, err)
	}
	return dir, pid
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") Z ")
}

func nextServe(t *testing.T, dir string, cfg *config.Config) *daemon.Daemon {
	t.Helper()
	d, err := daemon.New(daemon.Options{Config: cfg, StateDir: dir, Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// TestSurviveKilledDaemon (issue 24 item 2): with pool.survive, a daemon
// SIGKILLed mid-call leaves its session-scoped stdio child running, and
// the next daemon on the state directory adopts it: same pid, its
// in-memory counter going on, the dead daemon's late answer dropped.
func TestSurviveKilledDaemon(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir, child := killDaemon(t, true)
	if !alive(child) {
		t.Fatalf("child %d died with its daemon", child)
	}
	d := nextServe(t, dir, surviveConfig(t, proctest.Marker(t), true, ""))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := callTool(ctx, d.Broker, "sleep", `{"ms": 400}`); err != nil {
		t.Fatal(err)
	}
	if got, err := callTool(ctx, d.Broker, "counter", ""); err != nil || got != "3" {
		t.Fatalf("counter after the restart: %q, %v; want 3", got, err)
	}
	if st := d.Broker.Instances(); len(st) != 1 || st[0].Pid != child {
		t.Fatalf("instances %+v; want the child %d", st, child)
	}
}

// TestSurviveKilledDaemonChangedDefinition: a kept child whose definition
// changed meanwhile is replaced.
func TestSurviveKilledDaemonChangedDefinition(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir, child := killDaemon(t, true)
	d := nextServe(t, dir, surviveConfig(t, proctest.Marker(t), true, `, "CHANGED": "1"`))
	testenv.WaitFor(t, "the changed child to be stopped", func() bool { return !alive(child) })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if got, err := callTool(ctx, d.Broker, "counter", ""); err != nil || got != "1" {
		t.Fatalf("counter of the new child: %q, %v; want 1", got, err)
	}
}

// TestSurviveOffKilledDaemon: without pool.survive the child dies with
// its daemon, as before.
func TestSurviveOffKilledDaemon(t *testing.T) {
	proctest.CheckNoLeaks(t)
	_, child := killDaemon(t, false)
	testenv.WaitFor(t, "the child to die with its daemon", func() bool { return !alive(child) })
}
