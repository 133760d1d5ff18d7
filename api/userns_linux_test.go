package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

// A process of the daemon's own uid is not the owner when it lives in
// another user namespace — a confined child: whoami, the server list and
// the MCP endpoint refuse it (403, saying why; a JSON-RPC error on /mcp).
// The same process in the daemon's user namespace is the owner. The
// client is this test binary, started once in a new user namespace that
// maps our uid and gid to themselves (allowed unprivileged and as root).
func TestUnixCallerInAnotherUserNamespaceIsRefused(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.Start(t, apitest.Options{})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := func(nested bool) []nsAnswer {
		t.Helper()
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), proctest.Env(t), nsClientEnv+"="+d.Sock)
		if nested {
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Cloneflags:  syscall.CLONE_NEWUSER,
				UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
				GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
			}
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client (in another user namespace: %v): %v\n%s", nested, err, stderr.Bytes())
		}
		var answers []nsAnswer
		for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
			var a nsAnswer
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatalf("client printed %q: %v", sc.Text(), err)
			}
			answers = append(answers, a)
		}
		if len(answers) != 3 {
			t.Fatalf("client printed %d answers, want 3:\n%s", len(answers), out)
		}
		return answers
	}

	own := run(false)
	var who wire.Whoami
	if own[0].Status != 200 || json.Unmarshal(own[0].Body, &who) != nil || !who.Caller.Owner {
		t.Errorf("whoami from the daemon's user namespace: %d %s, want 200 as the owner", own[0].Status, own[0].Body)
	}
	if own[1].Status != 200 {
		t.Errorf("servers from the daemon's user namespace: %d %s, want 200", own[1].Status, own[1].Body)
	}
	if own[2].Status != 200 || !strings.Contains(string(own[2].Body), `"result"`) {
		t.Errorf("MCP initialize from the daemon's user namespace: %d %s, want 200 with a result", own[2].Status, own[2].Body)
	}

	const why = "a confined child may not drive the broker"
	nested := run(true)
	for i, what := range []string{"whoami", "servers"} {
		var p wire.Problem
		if a := nested[i]; a.Status != 403 || json.Unmarshal(a.Body, &p) != nil || !strings.Contains(p.Detail, why) {
			t.Errorf("%s from another user namespace: %d %s, want a 403 problem saying %q", what, a.Status, a.Body, why)
		}
	}
	var rpc struct {
		ID    json.RawMessage
		Error *struct {
			Code    int
			Message string
		}
	}
	if a := nested[2]; a.Status != 403 || json.Unmarshal(a.Body, &rpc) != nil || rpc.Error == nil || !strings.Contains(rpc.Error.Message, why) {
		t.Errorf("MCP initialize from another user namespace: %d %s, want 403 with a JSON-RPC error saying %q", a.Status, a.Body, why)
	}
}
