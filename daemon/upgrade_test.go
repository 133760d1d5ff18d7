package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oklog/run"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/pool/proc"
)

// envUpgradeDaemon makes this test binary a stand-in `mcpx serve` in the
// directory it names (upgradingDaemon), and, once re-executed with the
// handoff state, the next image (upgradedDaemon). envUpgradeBinary is the
// binary its upgrade asks for ("" = the running one).
const (
	envUpgradeDaemon = "MCPX_TEST_UPGRADE_DAEMON"
	envUpgradeBinary = "MCPX_TEST_UPGRADE_BINARY"
)

func init() {
	dir := os.Getenv(envUpgradeDaemon)
	if dir == "" || os.Getenv("MCPX_WATCHDOG") != "" || os.Getenv(demo.EnvServer) != "" {
		return
	}
	if os.Getenv(daemon.EnvHandoff) != "" {
		upgradedDaemon(dir)
	}
	proc.MaybeWatch() // returns: sets up the watchdog for Supervise, which an upgrade needs
	upgradingDaemon(dir)
}

// standIn is what the stand-in says on stdout: first as it serves, then
// as the next image.
type standIn struct {
	Pid          int       `json:"pid"`
	Started      time.Time `json:"started"`
	Generation   int       `json:"generation,omitempty"`
	Version      string    `json:"version,omitempty"`
	Token        string    `json:"token,omitempty"`
	Binary       string    `json:"binary,omitempty"`
	UpgradeError string    `json:"upgradeError,omitempty"`
	Listeners    int       `json:"listeners,omitempty"`
}

func standInFail(err error) {
	fmt.Fprintln(os.Stderr, "stand-in daemon:", err)
	os.Exit(1)
}

// serveImage serves lns with a handler that names image until stdin
// ends, or until up (if not nil) ends the group for an upgrade.
func serveImage(lns *daemon.Listeners, image string, up *daemon.Upgrader) error {
	var g run.Group
	for _, a := range lns.Actors(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, image) })) {
		g.Add(a.Execute, a.Interrupt)
	}
	if up != nil {
		a := up.Actor(lns)
		g.Add(a.Execute, a.Interrupt)
	}
	eof, done := make(chan struct{}), make(chan struct{})
	g.Add(func() error {
		select {
		case <-eof:
			return errors.New("stdin ended")
		case <-done:
			return nil
		}
	}, func(error) { close(done) })
	go func() {
		r := bufio.NewReader(os.Stdin)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				close(eof)
				return
			}
			if up != nil && strings.TrimSpace(line) == "upgrade" {
				if _, err := up.Request(os.Getenv(envUpgradeBinary)); err != nil {
					standInFail(err)
				}
			}
		}
	}()
	return g.Run()
}

// upgradingDaemon is the first image: a daemon with no servers serving a
// handler that says "old image", which upgrades when told on stdin.
func upgradingDaemon(dir string) {
	cfg, err := config.Parse([]byte(`{"pool": {"execWatch": "off"}, "servers": {}}`), "test")
	if err != nil {
		standInFail(err)
	}
	state, sock := filepath.Join(dir, "state"), filepath.Join(dir, "mcpx.sock")
	d, err := daemon.New(daemon.Options{Config: cfg, StateDir: state, Version: "v1", Stderr: os.Stderr})
	if err != nil {
		standInFail(err)
	}
	var lns daemon.Listeners
	if _, err := lns.Local(sock, "", api.ServeOptions{Logger: d.Log}, 1); err != nil {
		standInFail(err)
	}
	info := daemon.Info(state, sock, nil, daemon.Source{}, "v1")
	info.Generation = 1
	rec, err := daemon.PublishRecord(d.Log, info, "the-token")
	if err != nil {
		standInFail(err)
	}
	up := daemon.NewUpgrader(d.Log, info.Generation)
	json.NewEncoder(os.Stdout).Encode(standIn{Pid: os.Getpid(), Started: info.Started})
	err = up.AfterRun(serveImage(&lns, "old image", up), d, &lns, rec, releaser{})
	standInFail(fmt.Errorf("AfterRun returned: %v", err))
}

// releaser stands for the tailnet node: it says when it is closed.
type releaser struct{}

func (releaser) Close() error {
	fmt.Println(`"released"`)
	return nil
}

// upgradedDaemon is the next image: it reports the handoff state, then
// serves the handed-over socket with a handler that says "new image"
// until stdin ends.
func upgradedDaemon(dir string) {
	h, err := daemon.TakeHandoff(os.Getenv)
	if err != nil || h == nil {
		standInFail(fmt.Errorf("no handoff state: %v", err))
	}
	json.NewEncoder(os.Stdout).Encode(standIn{Pid: os.Getpid(), Started: h.Started, Generation: h.Generation, Version: h.Version,
		Token: h.Token, Binary: h.Binary, UpgradeError: h.UpgradeError, Listeners: len(h.Listeners)})
	var lns daemon.Listeners
	if _, err := lns.Adopt(h, filepath.Join(dir, "mcpx.sock"), "", api.ServeOptions{Logger: slog.New(slog.DiscardHandler)}, 1); err != nil {
		standInFail(err)
	}
	serveImage(&lns, "new image", nil)
	os.Exit(0)
}

// TestAfterRunUpgrades: after the run group ends for an upgrade, AfterRun
// closes what cannot be handed over, then re-executes the daemon in the
// same process, handing over the record's token and start time and the
// listening socket, which goes on answering. A binary that does not run
// is recorded, and the running one executed again.
func TestAfterRunUpgrades(t *testing.T) {
	for _, tt := range []struct {
		name   string
		broken bool
	}{
		{"the running binary", false},
		{"a binary that does not run", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			proctest.CheckNoLeaks(t)
			dir := t.TempDir()
			binary := ""
			if tt.broken {
				binary = filepath.Join(dir, "broken")
				if err := os.WriteFile(binary, []byte("not a program\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envUpgradeDaemon+"="+dir, envUpgradeBinary+"="+binary, proctest.Env(t))
			cmd.Stderr = os.Stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			// A stand-in that hangs is killed, and the reads below fail.
			defer time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() }).Stop()
			dec := json.NewDecoder(stdout)
			var first, next standIn
			var released string
			if err := dec.Decode(&first); err != nil {
				t.Fatalf("the stand-in's first line: %v", err)
			}
			sock := filepath.Join(dir, "mcpx.sock")
			if got := get(t, sock); got != "old image" {
				t.Fatalf("before the upgrade: %q", got)
			}
			fmt.Fprintln(stdin, "upgrade")
			if err := dec.Decode(&released); err != nil || released != "released" {
				t.Fatalf("before the exec: %q, %v; want the node released", released, err)
			}
			if err := dec.Decode(&next); err != nil {
				t.Fatalf("the next image's report: %v", err)
			}
			want := standIn{Pid: first.Pid, Started: first.Started, Generation: 1, Version: "v1", Token: "the-token", Binary: daemon.SelfBinary(), Listeners: 1}
			if tt.broken {
				want.UpgradeError = next.UpgradeError
				if !strings.Contains(next.UpgradeError, "executing "+binary) {
					t.Errorf("upgrade error %q; want it to name %s", next.UpgradeError, binary)
				}
			}
			if next != want {
				t.Errorf("the next image got\n%+v\nwant\n%+v", next, want)
			}
			if got := get(t, sock); got != "new image" {
				t.Errorf("after the upgrade: %q", got)
			}
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("the next image exited: %v", err)
			}
		})
	}
}

// TestAfterRunOtherEnds: a run group that ended for any other reason is
// returned as it is, and nothing is released.
func TestAfterRunOtherEnds(t *testing.T) {
	up := daemon.NewUpgrader(slog.New(slog.DiscardHandler), 1)
	stop := errors.New("stop requested")
	if err := up.AfterRun(stop, nil, nil, nil, failingReleaser{t}); err != stop {
		t.Errorf("AfterRun = %v; want %v", err, stop)
	}
	if err := up.AfterRun(nil, nil, nil, nil, failingReleaser{t}); err != nil {
		t.Errorf("AfterRun(nil) = %v", err)
	}
}

type failingReleaser struct{ t *testing.T }

func (r failingReleaser) Close() error {
	r.t.Error("released for a run group that did not end for an upgrade")
	return nil
}

// get is the body of GET / on the unix socket sock.
func get(t *testing.T, sock string) string {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://mcpx/", nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET on %s: %v", sock, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
