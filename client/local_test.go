package client_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

func writeRecord(t *testing.T, dir string, rec wire.DaemonRecord) {
	t.Helper()
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(dir, wire.RecordFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A client of a loopback URL with no token takes the daemon record's, but
// only a record of the same address; after a 401 it reads the record again.
func TestTokenFromRecord(t *testing.T) {
	d := startDaemon(t, nil)
	u, _ := url.Parse(d.url)
	_, port, _ := strings.Cut(u.Host, ":")
	for _, tt := range []struct {
		name    string
		address string
		ok      bool
	}{
		{"same address", u.Host, true},
		{"localhost alias", "localhost:" + port, true},
		{"another port", "127.0.0.1:1", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeRecord(t, dir, wire.DaemonRecord{DaemonInfo: wire.DaemonInfo{Address: tt.address}, Token: apitest.Token})
			_, _, err := client.New(d.url, client.Options{StateDir: dir}).Whoami(t.Context(), client.Caller{})
			if tt.ok && err != nil {
				t.Errorf("whoami: %v", err)
			}
			if !tt.ok && asProblem(t, err).Status != 401 {
				t.Errorf("whoami: %v, want 401", err)
			}
		})
	}

	dir := t.TempDir()
	c := client.New(d.url, client.Options{StateDir: dir})
	if _, _, err := c.Whoami(t.Context(), client.Caller{}); asProblem(t, err).Status != 401 {
		t.Errorf("no record: %v, want 401", err)
	}
	writeRecord(t, dir, wire.DaemonRecord{DaemonInfo: wire.DaemonInfo{Address: u.Host}, Token: "stale"})
	if _, _, err := c.Whoami(t.Context(), client.Caller{}); asProblem(t, err).Status != 401 {
		t.Errorf("stale record: %v, want 401", err)
	}
	writeRecord(t, dir, wire.DaemonRecord{DaemonInfo: wire.DaemonInfo{Address: u.Host}, Token: apitest.Token})
	if _, _, err := c.Whoami(t.Context(), client.Caller{}); err != nil {
		t.Errorf("after the record was rewritten: %v", err)
	}
}

// Ten racing starters start one daemon; the others find it serving. The
// daemon here is a stand-in: a shell that makes the socket appear.
func TestEnsureDaemonStartsOne(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "d.sock")
	marker := proctest.Env(t)
	var mu sync.Mutex
	var pids []int
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			pid, err := client.EnsureDaemon(t.Context(), client.StartOptions{Socket: sock, StateDir: dir,
				Command: func() *exec.Cmd {
					// A unix socket listener that lives until its socket is removed.
					cmd := exec.Command(os.Args[0])
					cmd.Env = append(os.Environ(), "HELPER_DAEMON_SOCK="+sock, marker)
					return cmd
				}})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			pids = append(pids, pid)
			mu.Unlock()
		})
	}
	wg.Wait()
	started := 0
	for _, p := range pids {
		if p != 0 {
			started++
		}
	}
	if started != 1 {
		t.Errorf("started %d daemons (%v), want 1", started, pids)
	}
	log, _ := os.ReadFile(filepath.Join(dir, wire.LogFile))
	if n := strings.Count(string(log), "helper daemon listening"); n != 1 {
		t.Errorf("log has %d starts:\n%s", n, log)
	}
	os.Remove(sock) // the helper exits
	for _, p := range pids {
		if p != 0 {
			waitGone(t, p)
		}
	}
}

// A daemon that exits at once is an error with its log.
func TestEnsureDaemonReportsFailure(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	_, err := client.EnsureDaemon(t.Context(), client.StartOptions{Socket: filepath.Join(dir, "d.sock"), StateDir: dir,
		Command: func() *exec.Cmd { return exec.Command("sh", "-c", "echo config is broken >&2; exit 1") }})
	var se *client.StartError
	if !errors.As(err, &se) || !strings.Contains(se.LogTail, "config is broken") || !strings.Contains(err.Error(), "exited") {
		t.Errorf("error %v", err)
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	testenv.WaitFor(t, fmt.Sprintf("pid %d to exit", pid), func() bool {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		return err != nil || strings.Contains(string(b), ") Z ")
	})
}

// maybeHelperDaemon is the stand-in daemon of TestEnsureDaemonStartsOne:
// with HELPER_DAEMON_SOCK set, it listens there until the socket file is
// removed (bounded), then exits.
//
// With HELPER_DAEMON_SERVE set, it stands in for `mcpx serve` (the
// daemon of TestAutostartPolicy): its socket is --socket's, and it logs
// its command line.
func maybeHelperDaemon() {
	sock := os.Getenv("HELPER_DAEMON_SOCK")
	if os.Getenv("HELPER_DAEMON_SERVE") != "" && len(os.Args) > 1 && os.Args[1] == "serve" {
		fs := flag.NewFlagSet("serve", flag.ExitOnError)
		fs.StringVar(&sock, "socket", "", "")
		state := fs.String("state-dir", "", "")
		config := fs.String("config", "", "")
		fs.Parse(os.Args[2:])
		fmt.Fprintf(os.Stderr, "helper serve: socket=%s state-dir=%s config=%s\n", sock, *state, *config)
	}
	if sock == "" {
		return
	}
	time.Sleep(100 * time.Millisecond) // let the other starters pile up on the lock
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "helper daemon listening")
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if _, err := os.Stat(sock); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	ln.Close()
	os.Exit(0)
}
