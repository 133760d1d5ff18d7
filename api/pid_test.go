package api_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

// pidClientEnv makes this test binary a client (see maybePidClient): it
// connects to the socket in the variable and asks /v1/whoami once per pid in
// pidListEnv ("self" and "parent" are its own and its parent's), printing
// each answer's status.
const (
	pidClientEnv = "MCPX_API_TEST_PID_CLIENT"
	pidListEnv   = "MCPX_API_TEST_PIDS"
)

func maybePidClient() {
	sock := os.Getenv(pidClientEnv)
	if sock == "" {
		return
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	var out []string
	for _, p := range strings.Split(os.Getenv(pidListEnv), ",") {
		switch p {
		case "self":
			p = strconv.Itoa(os.Getpid())
		case "parent":
			p = strconv.Itoa(os.Getppid())
		}
		req, _ := http.NewRequest("GET", "http://mcpx/v1/whoami", nil)
		req.Header.Set(wire.HeaderPid, p)
		resp, err := hc.Do(req)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		resp.Body.Close()
		out = append(out, strconv.Itoa(resp.StatusCode))
	}
	fmt.Println(strings.Join(out, " "))
	os.Exit(0)
}

// Mcpx-Pid from a unix caller must be the connecting process or one of its
// ancestors. The caller here is a real process two levels below the test:
// test -> sh -> client.
func TestPidMustBeThePeerOrAnAncestor(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.Start(t, apitest.Options{})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A process that is no ancestor of the client: a sibling of the shell.
	stranger := exec.Command("sleep", "60")
	stranger.Env = append(os.Environ(), proctest.Env(t))
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stranger.Process.Kill(); stranger.Wait() })

	pids := []string{"self", "parent", strconv.Itoa(os.Getpid()), strconv.Itoa(stranger.Process.Pid)}
	// "; exit" keeps sh alive as the client's parent (a shell may exec a
	// lone last command).
	cmd := exec.Command("sh", "-c", `"$0"; exit $?`, exe)
	cmd.Env = append(os.Environ(), proctest.Env(t), pidClientEnv+"="+d.Sock, pidListEnv+"="+strings.Join(pids, ","))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "200 200 200 400"; got != want {
		t.Errorf("statuses for the client's own pid, its shell's, the test's and a stranger's: %s, want %s", got, want)
	}

	// The problem names the header.
	p := d.Unix.Do(t, "GET", "/v1/whoami", "", wire.HeaderPid, strconv.Itoa(stranger.Process.Pid)).Problem(t)
	if p.Status != 400 || p.Field != wire.HeaderPid || !strings.Contains(p.Detail, "Mcpx-Pid") || !strings.Contains(p.Detail, "ancestors") {
		t.Errorf("stranger's pid: %+v", p)
	}
	// TCP callers' Mcpx-Pid is ignored, as before: no 400, no pid.
	var w wire.Whoami
	d.TCP.Do(t, "GET", "/v1/whoami", "", wire.HeaderPid, strconv.Itoa(stranger.Process.Pid)).Decode(t, &w)
	if w.Context.Pid != 0 {
		t.Errorf("tcp caller's pid was kept: %+v", w.Context)
	}
}
