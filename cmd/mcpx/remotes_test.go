package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// brokerSpy is an http broker that refuses everyone, noting each request's
// bearer token under its own name.
type brokerSpy struct {
	mu  sync.Mutex
	got []string // name + " " + Authorization, in order
}

func (s *brokerSpy) serve(t *testing.T, name string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, name+" "+r.Header.Get("Authorization"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"type":"https://mcpx.dev/problems/unauthorized","title":"Unauthorized","status":401,"detail":"no"}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// take returns the requests seen since the last take.
func (s *brokerSpy) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := s.got
	s.got = nil
	return got
}

// TestRemotePrecedence: `mcpx remote add|default|rm|ls` edit the client
// config, and a command's broker is, first wins: --broker or --remote,
// $MCPX_BROKER, $MCPX_REMOTE, --config/$MCPX_CONFIG, the default remote,
// the local daemon (--remote local at once). A remote's token file is
// used unless --token-file or $MCPX_TOKEN is given.
func TestRemotePrecedence(t *testing.T) {
	dir := t.TempDir()
	spy := &brokerSpy{}
	urls := map[string]string{}
	for _, n := range []string{"def", "other", "env", "flag"} {
		urls[n] = spy.serve(t, n)
	}
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("saved\n"), 0o600)
	cfgFile := filepath.Join(dir, "cfg", "client.json")
	env := map[string]string{"MCPX_CLIENT_CONFIG": cfgFile, "HOME": dir, "XDG_STATE_HOME": filepath.Join(dir, "state"),
		"XDG_RUNTIME_DIR": filepath.Join(dir, "run"), "MCPX_NO_AUTOSTART": "1"}
	mcpx := func(extra map[string]string, args ...string) (int, string, string) {
		t.Helper()
		c := &cli{stdin: strings.NewReader(""), getenv: func(k string) string {
			if v, ok := extra[k]; ok {
				return v
			}
			return env[k]
		}}
		var out, errOut strings.Builder
		c.stdout, c.stderr = &out, &errOut
		code := runCLI(t.Context(), c, args)
		return code, out.String(), errOut.String()
	}
	for _, args := range [][]string{
		{"remote", "add", "def", urls["def"], "--token-file", tokenFile, "--default"},
		{"remote", "add", "other", urls["other"]},
	} {
		if code, out, errOut := mcpx(nil, args...); code != exitOK || !strings.Contains(out, cfgFile) {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errOut)
		}
	}
	if fi, err := os.Stat(cfgFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("client config: %v, %v; want mode 0600", fi, err)
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		args  []string
		want  string // the spy's record; "" = the local socket
		local bool
	}{
		{"default remote, its token file", nil, []string{"status"}, "def Bearer saved", false},
		{"$MCPX_TOKEN over the remote's file", map[string]string{"MCPX_TOKEN": "envtok"}, []string{"status"}, "def Bearer envtok", false},
		{"--remote before the command", nil, []string{"--remote", "other", "status"}, "other ", false},
		{"--remote after it", nil, []string{"status", "--remote", "other"}, "other ", false},
		{"$MCPX_REMOTE over the default", map[string]string{"MCPX_REMOTE": "other"}, []string{"status"}, "other ", false},
		{"$MCPX_BROKER over $MCPX_REMOTE", map[string]string{"MCPX_BROKER": urls["env"], "MCPX_REMOTE": "other"}, []string{"status"}, "env ", false},
		{"--remote over $MCPX_BROKER", map[string]string{"MCPX_BROKER": urls["env"]}, []string{"status", "--remote", "other"}, "other ", false},
		{"--broker over everything", map[string]string{"MCPX_BROKER": urls["env"], "MCPX_REMOTE": "other"}, []string{"status", "--broker", urls["flag"]}, "flag ", false},
		{"--remote local", nil, []string{"--remote", "local", "status"}, "", true},
		{"$MCPX_CONFIG is a local daemon", map[string]string{"MCPX_CONFIG": filepath.Join(dir, "mcpx.json")}, []string{"status"}, "", true},
	} {
		code, out, errOut := mcpx(tc.env, tc.args...)
		got := spy.take()
		if tc.local {
			if len(got) != 0 || code != exitUnreachable {
				t.Errorf("%s: requests %q, exit %d (%s%s); want none, and the local daemon unreachable", tc.name, got, code, out, errOut)
			}
			continue
		}
		if len(got) == 0 || got[0] != tc.want {
			t.Errorf("%s: requests %q (exit %d: %s); want %q", tc.name, got, code, errOut, tc.want)
		}
	}
	if code, _, errOut := mcpx(nil, "status", "--remote", "nope"); code == exitOK || !strings.Contains(errOut, `no remote "nope"`) || !strings.Contains(errOut, "def, other") {
		t.Errorf("an unknown remote: exit %d: %s; want an error naming it and the saved ones", code, errOut)
	}
	// fleet ls --tsnet asks its own node only when no broker is named:
	// a named one is asked (here: looked up, and not found).
	for _, tc := range []struct {
		env  map[string]string
		args []string
	}{
		{nil, []string{"fleet", "ls", "--tsnet", "--remote", "nope"}},
		{map[string]string{"MCPX_REMOTE": "nope"}, []string{"fleet", "ls", "--tsnet"}},
	} {
		if code, _, errOut := mcpx(tc.env, tc.args...); code == exitOK || !strings.Contains(errOut, `no remote "nope"`) {
			t.Errorf("%v %v: exit %d: %s; want the named remote looked up (and not found)", tc.env, tc.args, code, errOut)
		}
	}
	if code, _, errOut := mcpx(nil, "status", "--remote", "other", "--broker", urls["flag"]); code == exitOK || !strings.Contains(errOut, "drop one") {
		t.Errorf("--remote and --broker: exit %d: %s; want a usage error", code, errOut)
	}
	code, out, _ := mcpx(nil, "remote", "ls", "--json")
	var rows []struct {
		Name, Broker, TokenFile string
		Default                 bool
	}
	if err := json.Unmarshal([]byte(out), &rows); code != exitOK || err != nil || len(rows) != 2 || rows[0].Name != "def" || !rows[0].Default || rows[0].TokenFile != tokenFile || rows[1].Broker != urls["other"] {
		t.Errorf("remote ls --json: exit %d, %v: %s", code, err, out)
	}
	if code, out, errOut := mcpx(nil, "remote", "rm", "def"); code != exitOK || !strings.Contains(out, "the default remote") {
		t.Fatalf("remote rm def: exit %d: %s%s", code, out, errOut)
	}
	if code, _, _ := mcpx(nil, "status"); code != exitUnreachable || len(spy.take()) != 0 {
		t.Errorf("with the default remote removed: exit %d; want the local daemon, unreachable", code)
	}
	b, _ := os.ReadFile(cfgFile)
	if strings.Contains(string(b), "saved") {
		t.Errorf("the client config holds a token: %s", b)
	}
}
