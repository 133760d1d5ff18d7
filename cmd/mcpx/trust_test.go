package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// serveInProcess runs `mcpx serve` in this process with its own socket,
// state directory and an empty config, and returns the state directory
// once the daemon record is written; the daemon stops at the test's end.
func serveInProcess(t *testing.T, extra ...string) (state, sock string) {
	t.Helper()
	dir := t.TempDir()
	state, sock = filepath.Join(dir, "state"), filepath.Join(dir, "mcpx.sock")
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, []byte(`{"servers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var logs testenv.SyncBuffer
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, append([]string{"serve", "--config", cfgPath, "--socket", sock, "--state-dir", state}, extra...),
			strings.NewReader(""), &testenv.SyncBuffer{}, &logs)
	}()
	t.Cleanup(func() {
		stop()
		if code := <-served; code != exitOK {
			t.Errorf("serve exited %d:\n%s", code, logs.String())
		}
	})
	testenv.WaitFor(t, "the daemon record", func() bool {
		_, err := client.ReadRecord(state)
		return err == nil
	})
	return state, sock
}

// otherUIDResult is what the child of TestFaultOtherUidOnTCP saw.
type otherUIDResult struct {
	TokenErr  string // reading the token file
	RecordErr string // reading the daemon record
	Auto      int    // status of a whoami through the Go client (which looks for the token itself)
	Guessed   int    // status with a made-up token
	Detail    string // the problem detail of the first 401
}

// maybeOtherUIDClient is the child of TestFaultOtherUidOnTCP: another user
// of this machine trying the daemon's loopback port.
func maybeOtherUIDClient() {
	url, state := os.Getenv("MCPX_TEST_OTHERUID_URL"), os.Getenv("MCPX_TEST_OTHERUID_STATE")
	if url == "" {
		return
	}
	var res otherUIDResult
	if _, err := os.ReadFile(filepath.Join(state, wire.TokenFile)); err != nil {
		res.TokenErr = err.Error()
	}
	if _, err := client.ReadRecord(state); err != nil {
		res.RecordErr = err.Error()
	}
	_, _, err := client.New(url, client.Options{StateDir: state}).Whoami(context.Background(), client.Caller{})
	var p *wire.Problem
	if errors.As(err, &p) {
		res.Auto, res.Detail = p.Status, p.Detail
	} else if err == nil {
		res.Auto = 200
	}
	req, _ := http.NewRequest("GET", url+"/v1/instances", nil)
	req.Header.Set("Authorization", "Bearer 0000000000000000000000000000000000000000000000000000000000000000")
	req.Header.Set(wire.HeaderClient, "trust-test")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		res.Guessed = resp.StatusCode
	}
	json.NewEncoder(os.Stdout).Encode(res)
	os.Exit(0)
}

// TestFaultOtherUidOnTCP: another user of the machine (nobody) reaches the
// daemon's loopback port but cannot read its token, and gets 401 for
// everything; the daemon's own user, with no setup, gets in.
func TestFaultOtherUidOnTCP(t *testing.T) {
	proctest.CheckNoLeaks(t)
	if os.Getuid() != 0 {
		t.Fatal("this test runs as root, to run its client as nobody")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("looking up the nobody user: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)

	state, _ := serveInProcess(t)
	rec, err := client.ReadRecord(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{wire.RecordFile, wire.TokenFile} {
		if fi, err := os.Stat(filepath.Join(state, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", name, err, fi.Mode())
		}
	}
	if rec.URL == "" || rec.Token == "" || rec.Pid != os.Getpid() {
		t.Fatalf("record %+v", rec)
	}
	// The owner needs no setup: the Go client finds the token.
	who, _, err := client.New(rec.URL, client.Options{StateDir: state}).Whoami(t.Context(), client.Caller{})
	if err != nil || who.Daemon == nil || who.Daemon.Address != rec.Address {
		t.Fatalf("owner over TCP: %v, %+v", err, who)
	}

	// The child is this test binary, copied where nobody may run it.
	bin, err := os.MkdirTemp("", "mcpx-otheruid")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	os.Chmod(bin, 0o755)
	exe, _ := os.Executable()
	self, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(bin, "otheruid")
	if err := os.WriteFile(child, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(child)
	cmd.Dir = "/"
	cmd.Env = []string{"MCPX_TEST_OTHERUID_URL=" + rec.URL, "MCPX_TEST_OTHERUID_STATE=" + state,
		"HOME=/nonexistent", proctest.Env(t)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child as nobody: %v: %s", err, out)
	}
	var res otherUIDResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("child said %q: %v", out, err)
	}
	if !strings.Contains(res.TokenErr, "permission denied") || !strings.Contains(res.RecordErr, "permission denied") {
		t.Errorf("nobody could read the daemon's files: token %q, record %q", res.TokenErr, res.RecordErr)
	}
	if res.Auto != 401 || res.Guessed != 401 {
		t.Errorf("nobody got %d without the token and %d with a made-up one; want 401", res.Auto, res.Guessed)
	}
	if strings.Contains(res.Detail, state) || strings.Contains(res.Detail, rec.Token) {
		t.Errorf("the 401 leaks: %q", res.Detail)
	}
	t.Logf("nobody: %s", fmt.Sprint(res))
}
