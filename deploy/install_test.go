package deploy_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/deploy"
)

// TestServerFor: which entry `mcpx install` writes. The stdio bridge by
// default, the broker flags passed on (a socket and the token file made
// absolute, a URL or tailnet name as given); with --http the running
// daemon's URL and token (and a note that they change), or the broker's
// URL or tailnet name with the token; --http with --tsnet, or to a
// socket, is refused, as is one with no daemon that could answer. The
// token and the daemon's record are read only when the entry needs them.
func TestServerFor(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, _ := os.Getwd()
	unused := func(what string) func() {
		return func() { t.Errorf("%s read for an entry that does not need it", what) }
	}
	noToken := unused("the token")
	noDaemon := unused("the daemon record")
	noOwnerToken := unused("an owner token")
	token := func(tok string) func() (string, error) { return func() (string, error) { return tok, nil } }
	daemon := func(d deploy.Daemon, err error) func() (deploy.Daemon, error) {
		return func() (deploy.Daemon, error) { return d, err }
	}
	running := deploy.Daemon{Pid: 42, URL: "http://127.0.0.1:4000", Socket: "/run/mcpx.sock", Answers: true}
	for _, tc := range []struct {
		name  string
		o     deploy.ServerOptions
		want  deploy.Server
		notes string // in the notes
		err   string // in the error
	}{
		{name: "bridge", want: deploy.Server{Args: []string{"mcp"}}},
		{name: "bridge to a socket", o: deploy.ServerOptions{Broker: "other.sock", TokenFile: "tok"},
			want: deploy.Server{Args: []string{"mcp", "--broker", filepath.Join(wd, "other.sock"), "--token-file", filepath.Join(wd, "tok")}}},
		{name: "bridge to a tailnet name", o: deploy.ServerOptions{Broker: "mcpx", Tailnet: true, TSNet: true},
			want: deploy.Server{Args: []string{"mcp", "--broker", "mcpx", "--tsnet"}}},
		{name: "bridge to a URL", o: deploy.ServerOptions{Broker: "https://b.example/"}, want: deploy.Server{Args: []string{"mcp", "--broker", "https://b.example/"}}},
		{name: "the running daemon", o: deploy.ServerOptions{HTTP: true, Token: token(""), Daemon: daemon(running, nil), OwnerToken: token("mcpx_otok")},
			want:  deploy.Server{URL: "http://127.0.0.1:4000/mcp", Headers: map[string]string{"Authorization": "Bearer mcpx_otok"}},
			notes: "an owner token of its own, which survives the daemon's restarts and upgrades"},
		{name: "an owner token that cannot be made", o: deploy.ServerOptions{HTTP: true, Token: token(""), Daemon: daemon(running, nil),
			OwnerToken: func() (string, error) { return "", errors.New("creating the token directory: denied") }},
			err: "creating the token directory: denied"},
		{name: "no daemon record", o: deploy.ServerOptions{HTTP: true, StateDir: "/st", Token: token(""), Daemon: daemon(deploy.Daemon{}, os.ErrNotExist)},
			err: "no daemon record is in /st (file does not exist): start the daemon"},
		{name: "a daemon with no TCP", o: deploy.ServerOptions{HTTP: true, Token: token(""), Daemon: daemon(deploy.Daemon{Pid: 42}, nil)},
			err: "the daemon (pid 42) serves no loopback TCP"},
		{name: "a daemon that does not answer", o: deploy.ServerOptions{HTTP: true, StateDir: "/st", Token: token(""), Daemon: daemon(deploy.Daemon{Pid: 42, URL: running.URL, Socket: "/run/mcpx.sock"}, nil)},
			err: "the daemon of the record in /st (pid 42) does not answer on /run/mcpx.sock"},
		{name: "a tailnet name", o: deploy.ServerOptions{HTTP: true, Broker: "mcpx", Tailnet: true, Token: token("")},
			want: deploy.Server{URL: "http://mcpx/mcp"}},
		{name: "a URL", o: deploy.ServerOptions{HTTP: true, Broker: "https://b.example/", Token: token("btok")},
			want: deploy.Server{URL: "https://b.example/mcp", Headers: map[string]string{"Authorization": "Bearer btok"}}},
		{name: "a socket", o: deploy.ServerOptions{HTTP: true, Broker: "other.sock", Token: token("")}, err: "the socket other.sock is reached through the stdio bridge: leave out --http"},
		{name: "--tsnet", o: deploy.ServerOptions{HTTP: true, Broker: "mcpx", Tailnet: true, TSNet: true}, err: "--http with --tsnet"},
		{name: "a token that does not read", o: deploy.ServerOptions{HTTP: true, Token: func() (string, error) { return "", errors.New("--token-file: gone") }},
			err: "--token-file: gone"},
	} {
		o := tc.o
		if o.Token == nil {
			o.Token = func() (string, error) { noToken(); return "", nil }
		}
		if o.Daemon == nil {
			o.Daemon = func() (deploy.Daemon, error) { noDaemon(); return deploy.Daemon{}, nil }
		}
		if o.OwnerToken == nil {
			o.OwnerToken = func() (string, error) { noOwnerToken(); return "", nil }
		}
		got, notes, err := deploy.ServerFor(o)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %+v, %v; want an error saying %q", tc.name, got, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		default:
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.name, diff)
			}
			if joined := strings.Join(notes, "\n"); (tc.notes == "") != (joined == "") || !strings.Contains(joined, tc.notes) {
				t.Errorf("%s: notes %q, want %q", tc.name, notes, tc.notes)
			}
		}
	}
}

// TestCheckBinary: `go run`'s temporary build (…/go-buildNNN/bNNN/exe/
// <name>) is refused for a unit or hook, with the fix; an installed
// binary and `go test`'s (bNNN/<name>.test, this test's own) are not.
func TestCheckBinary(t *testing.T) {
	for path, refused := range map[string]bool{
		"/tmp/go-build123/b001/exe/mcpx":            true,
		"/home/ann/tmp/go-build9/b417/exe/mcpx-dev": true,
		"/tmp/go-build123/b001/mcpx.test":           false,
		"/home/ann/go/bin/mcpx":                     false,
		"/tmp/go-build123/b001/exe/sub/mcpx":        false,
		"/opt/exe/mcpx":                             false,
	} {
		err := deploy.CheckBinary(path)
		if refused != (err != nil) || refused && !strings.Contains(err.Error(), "`go install ./cmd/mcpx`") {
			t.Errorf("CheckBinary(%s) = %v, want refused %v (with the fix)", path, err, refused)
		}
	}
	self, err := deploy.Executable(true)
	if real, _ := filepath.EvalSymlinks(os.Args[0]); err != nil || self == "" || !filepath.IsAbs(self) || (real != "" && filepath.IsAbs(real) && self != real) {
		t.Errorf("Executable(true) in go test's binary: %q, %v; want this binary (%s)", self, err, real)
	}
}
