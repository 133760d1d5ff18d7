package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// TestTokenCommand: `mcpx token` mints over the unix socket a token that
// the daemon's loopback TCP listener accepts with its rights; ls lists it,
// revoke ends it, rotate adds a key; the state lives in <state>/auth, 0600.
func TestTokenCommand(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	sock, state := filepath.Join(dir, "mcpx.sock"), filepath.Join(dir, "state")
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	ctx, stopDaemon := context.WithCancel(t.Context())
	var logs testenv.SyncBuffer
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--socket", sock, "--state-dir", state, "--listen", addr},
			strings.NewReader(""), &testenv.SyncBuffer{}, &logs)
	}()
	defer func() {
		stopDaemon()
		if code := <-served; code != exitOK {
			t.Errorf("serve exited %d:\n%s", code, logs.String())
		}
	}()
	testenv.WaitFor(t, "the socket", func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	mcpx := func(want int, args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(t.Context(), append(args, "--broker", sock), strings.NewReader(""), &out, &errOut); code != want {
			t.Fatalf("mcpx %s: exit %d, want %d: %s", strings.Join(args, " "), code, want, errOut.String())
		}
		return out.String(), errOut.String()
	}

	if out, _ := mcpx(exitOK, "whoami"); !strings.Contains(out, "via unix (owner, admin, local)") || !strings.Contains(out, "scopes:  all") {
		t.Errorf("mcpx whoami as the owner:\n%s", out)
	}
	mcpx(exitUsage, "token", "mint", "--servers", "demo")
	tok, note := mcpx(exitOK, "token", "mint", "--sub", "ci", "--servers", "demo", "--roots", dir, "--scopes", "cwd,session", "--tools", "demo.echo,demo.get_*", "--ttl", "2h")
	tok = strings.TrimSpace(tok)
	if strings.Count(tok, ".") != 2 || !strings.Contains(note, "shown once") {
		t.Fatalf("mint printed %q, %q", tok, note)
	}
	c := client.New("http://"+addr, client.Options{Token: tok, StateDir: t.TempDir()})
	w, _, err := c.Whoami(t.Context(), client.Caller{})
	if err != nil {
		t.Fatalf("whoami over TCP with the token: %v", err)
	}
	if w.Caller.Name != "ci" || w.Caller.Via != wire.ViaJWT || len(w.Caller.Rights) != 1 ||
		strings.Join(w.Caller.Rights[0].Scopes, ",") != "cwd,session" || strings.Join(w.Caller.Rights[0].Servers, ",") != "demo" ||
		strings.Join(w.Caller.Rights[0].Tools, ",") != "demo.echo,demo.get_*" {
		t.Errorf("whoami with the token: %+v", w.Caller)
	}

	if _, errOut := mcpx(exitUsage, "token", "mint", "--sub", "r", "--servers", "demo", "--rate", "5/x"); !strings.Contains(errOut, `--rate: invalid rate "5/x"`) || !strings.Contains(errOut, `"100/m"`) {
		t.Errorf("mint --rate 5/x said %q, want the accepted form", errOut)
	}
	limitedTok, _ := mcpx(exitOK, "token", "mint", "--sub", "limited", "--servers", "demo", "--rate", "100/m", "--burst", "5")
	tokFile := filepath.Join(dir, "limited.token")
	testenv.WriteFile(t, tokFile, limitedTok)
	var who bytes.Buffer
	if code := run(t.Context(), []string{"whoami", "--broker", "http://" + addr, "--token-file", tokFile}, strings.NewReader(""), &who, &who); code != exitOK || !strings.Contains(who.String(), "rate:    100/m (burst 5)") {
		t.Errorf("whoami with the limited token: exit %d\n%s", code, who.String())
	}

	ls, _ := mcpx(exitOK, "token", "ls")
	if !strings.Contains(ls, "100/m (burst 5)") {
		t.Errorf("token ls does not show the rate of the limited token:\n%s", ls)
	}
	id := ""
	for _, line := range strings.Split(ls, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == "ci" {
			id = f[0]
		}
	}
	if id == "" || !strings.Contains(ls, "issuer mcpx:") || !strings.Contains(ls, "(current, since") || !strings.Contains(ls, "demo.echo,demo.get_*") {
		t.Fatalf("token ls:\n%s", ls)
	}
	if out, _ := mcpx(exitOK, "token", "rotate"); !strings.Contains(out, "new signing key") {
		t.Errorf("rotate printed %q", out)
	}
	if ls, _ := mcpx(exitOK, "token", "ls"); !strings.Contains(ls, "retires after") {
		t.Errorf("token ls after rotate shows no retiring key:\n%s", ls)
	}
	if _, _, err := c.Whoami(t.Context(), client.Caller{}); err != nil {
		t.Errorf("the token after rotate: %v", err)
	}
	if out, _ := mcpx(exitOK, "token", "revoke", id); !strings.Contains(out, "revoked "+id) {
		t.Errorf("revoke printed %q", out)
	}
	mcpx(exitFailed, "token", "revoke", "no-such-id")
	var p *wire.Problem
	if _, _, err := c.Whoami(t.Context(), client.Caller{}); !errors.As(err, &p) || p.Status != 401 || !strings.Contains(p.Detail, "revoked") {
		t.Errorf("the token after revoke: %v, want 401 revoked", err)
	}
	fi, err := os.Stat(filepath.Join(state, "auth", auth.StateFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token state: %v, %v; want mode 0600", fi, err)
	}
}
