package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/internal/testing/petstoretest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/openapi"
	"mcpx.dev/mcpx/pool/proc/sandbox"
	"mcpx.dev/mcpx/wire"
)

func TestMain(m *testing.M) {
	sandbox.MaybeExec() // in a confined child's helper: confine, exec, never return
	demo.MaybeServe()   // a demo child of an in-process daemon: serve and exit
	maybeOtherUIDClient()
	maybeTestBrowser()       // $BROWSER of the conformance client below: follow the redirects and exit
	maybeConformanceClient() // the conformance suite's client command (conformance_auth_test.go): run and exit
	maybeTestTailnet()       // a test control server of TestServeTailnetProcess: serve and exit
	if filepath.Base(os.Args[0]) != "mcpx" {
		// In-process commands must never start a daemon: this test binary
		// is not mcpx. Scripts get their own environment without this.
		os.Setenv("MCPX_NO_AUTOSTART", "1")
	}
	// The test binary is the mcpx command of scripts only with
	// MCPX_TEST_RACE_SCRIPTS=1 (plain_test.go), and of the tests that start
	// it as "mcpx" themselves.
	testscript.Main(plainCleanup{m}, map[string]func(){"mcpx": main})
}

// TestScripts runs testdata/script/*.txtar. Each script gets its own
// XDG directories, a short socket directory (socket paths are limited to
// ~104 bytes), $SOCK (the default socket) and $PORT (a free loopback port) and
// $DEADPORT (a loopback port that refuses connections throughout).
// Extra commands:
//
//	waitsock path            wait until a unix socket accepts connections
//	exits N prog args...     run prog and check that it exits with status N
//	nochildren status.json   every pid in a `mcpx status --json` file is gone
//	eventually prog args...  run prog until it exits 0 (bounded); its last output is checked
//	daemons N                the state directory's log shows N daemons started, and
//	                         the record's pid is alive (N > 0)
//	waitfile path            wait until a file exists (a background command wrote it)
//	petstore                 serve a petstore (internal/testing/petstoretest) for the script: $PETSTORE
//	                         its base URL, petstore.yaml its document in $WORK
func TestScripts(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	proctest.CheckNoLeaks(t)
	marker := proctest.Env(t)
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(e *testscript.Env) error {
			run, err := os.MkdirTemp("", "mcpx")
			if err != nil {
				return err
			}
			e.Defer(func() { os.RemoveAll(run) })
			port, err := freePort()
			if err != nil {
				return err
			}
			if err := usePlainMCPX(e); err != nil {
				return err
			}
			e.Setenv("XDG_RUNTIME_DIR", run)
			e.Setenv("XDG_CONFIG_HOME", filepath.Join(e.WorkDir, "config"))
			e.Setenv("XDG_STATE_HOME", filepath.Join(e.WorkDir, "state"))
			e.Setenv("HOME", filepath.Join(e.WorkDir, "home"))
			e.Setenv("SOCK", filepath.Join(run, "mcpx", "mcpx.sock"))
			e.Setenv("PORT", strconv.Itoa(port))
			dead, closeDead, err := deadPort()
			if err != nil {
				return err
			}
			e.Defer(closeDead)
			e.Setenv("DEADPORT", strconv.Itoa(dead))
			k, v, _ := strings.Cut(marker, "=")
			e.Setenv(k, v) // children carry the marker, so leaks are found
			// A daemon a script started on demand and failed to stop is
			// stopped here, so that a failing script leaks nothing.
			e.Defer(func() { // the default daemon's, and those of a --config
				dirs, _ := paths.StateDirs(func(k string) string {
					if k == "XDG_STATE_HOME" {
						return filepath.Join(e.WorkDir, "state")
					}
					return ""
				})
				for _, d := range dirs {
					stopRecordedDaemon(d)
				}
			})
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitsock":   waitSock,
			"exits":      exits,
			"nochildren": noChildren,
			"daemons":    daemons,
			"waitfile":   waitFile,
			"eventually": eventually,
			"petstore":   petstore,
		},
	})
}

// deadPort is a loopback port that refuses connections for as long as the
// script runs: bound and never listened on, so no other test's daemon can
// take it meanwhile (a port freePort found free can be, on a shared machine).
func deadPort() (int, func(), error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, nil, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return 0, nil, err
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return 0, nil, err
	}
	return sa.(*syscall.SockaddrInet4).Port, func() { syscall.Close(fd) }, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitSock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitsock path")
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.Dial("unix", args[0])
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("socket %s never answered: %v", args[0], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile path")
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s never appeared", args[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func eventually(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: eventually prog args...")
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := ts.Exec(args[0], args[1:]...)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s never succeeded: %v", args[0], err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N prog args...")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %v", err)
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		got = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

func noChildren(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: nochildren status.json")
	}
	var doc struct {
		Instances []struct {
			ID  string `json:"id"`
			Pid int    `json:"pid"`
		} `json:"instances"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &doc))
	if len(doc.Instances) == 0 {
		ts.Fatalf("%s lists no instances", args[0])
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, in := range doc.Instances {
		for syscall.Kill(in.Pid, 0) == nil {
			if time.Now().After(deadline) {
				ts.Fatalf("instance %s (pid %d) is still running", in.ID, in.Pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// stopRecordedDaemon stops the daemon of the record in state, if any:
// SIGTERM (it stops its children), then SIGKILL, bounded.
func stopRecordedDaemon(state string) {
	rec, err := client.ReadRecord(state)
	if err != nil || rec.Pid <= 0 || rec.Pid == os.Getpid() {
		return
	}
	syscall.Kill(rec.Pid, syscall.SIGTERM)
	for deadline := time.Now().Add(25 * time.Second); paths.Alive(rec.Pid); {
		if time.Now().After(deadline) {
			syscall.Kill(rec.Pid, syscall.SIGKILL)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// daemons checks how many daemons the state directory's log says started
// ("mcpx serving" lines) and that the daemon record names a live one.
func daemons(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: daemons N")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("daemons: %v", err)
	}
	state := filepath.Join(ts.Getenv("XDG_STATE_HOME"), "mcpx")
	log, _ := os.ReadFile(filepath.Join(state, wire.LogFile))
	if got := strings.Count(string(log), `msg="mcpx serving"`); got != want {
		ts.Fatalf("%d daemons started, want %d; log:\n%s", got, want, log)
	}
	if want == 0 {
		return
	}
	rec, err := client.ReadRecord(state)
	if err != nil {
		ts.Fatalf("daemon record: %v", err)
	}
	if !paths.Alive(rec.Pid) {
		ts.Fatalf("the recorded daemon (pid %d) is not running", rec.Pid)
	}
	ts.Logf("daemon pid %d", rec.Pid)
}

// `mcpx openapi` prints the document the daemon serves.
func TestOpenAPICommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"openapi"}, strings.NewReader(""), &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want, err := openapi.Broker(openapi.Options{Version: version()})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("printed %d bytes, not the generated document (%d bytes)", out.Len(), len(want))
	}
	if code := run(t.Context(), []string{"openapi", "extra"}, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Errorf("with an argument: exit %d, want %d", code, exitUsage)
	}
}

func petstore(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: petstore")
	}
	spec, err := os.ReadFile(petstoretest.Spec())
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs("petstore.yaml"), spec, 0o644))
	ts.Setenv("PETSTORE", petstoretest.Start(scriptTB{ts}))
}

// scriptTB is the testing.TB a helper that only registers its cleanup
// needs, over a script (its Defer).
type scriptTB struct{ ts *testscript.TestScript }

func (s scriptTB) Cleanup(f func()) { s.ts.Defer(f) }
