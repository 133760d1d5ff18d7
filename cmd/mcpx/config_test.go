package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestServeLogsConfigWarnings: `mcpx serve` on a client's config file (here
// Cline's) serves it, leaves its disabled server out of /v1/servers, and
// logs each warning once per load, at start and at each reload.
func TestServeLogsConfigWarnings(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "mcpx.sock")
	cfgPath := filepath.Join(dir, "cline_mcp_settings.json")
	doc := `{"mcpServers": {
		"echo": {"command": "/bin/true", "disabled": false, "autoApprove": ["echo"], "timeout": 60, "icon": "x"},
		"old": {"url": "https://h.example/sse", "transportType": "sse", "disabled": true}
	}}`
	if err := os.WriteFile(cfgPath, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, stopDaemon := context.WithCancel(t.Context())
	defer stopDaemon()
	var logs testenv.SyncBuffer
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--config", cfgPath, "--socket", sock, "--state-dir", filepath.Join(dir, "state")},
			strings.NewReader(""), &testenv.SyncBuffer{}, &logs)
	}()
	testenv.WaitFor(t, "the socket to answer", func() bool { return client.Answers(sock) }) // it exists a moment before it accepts

	list, _, err := client.New(sock, client.Options{}).Servers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list.Servers {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "echo" {
		t.Errorf("/v1/servers lists %q, want only echo (old is disabled)", names)
	}
	const (
		icon     = `unknown field \"icon\", ignored`
		sse      = `disabled, but the legacy SSE transport is not supported`
		disabled = `msg="server disabled in the config: not served" server=old`
	)
	for _, want := range []string{icon, sse, disabled} {
		if n := strings.Count(logs.String(), want); n != 1 {
			t.Errorf("the log has %q %d times, want once:\n%s", want, n, logs.String())
		}
	}
	if strings.Contains(logs.String(), "autoApprove") {
		t.Errorf("autoApprove is logged; it should be ignored silently:\n%s", logs.String())
	}

	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	testenv.WaitFor(t, "the reload", func() bool { return strings.Contains(logs.String(), "config reloaded") })
	testenv.WaitFor(t, "the reload's warnings", func() bool { return strings.Count(logs.String(), icon) == 2 })
	stopDaemon()
	if code := <-served; code != exitOK {
		t.Errorf("serve exited %d:\n%s", code, logs.String())
	}
	if n := strings.Count(logs.String(), sse); n != 2 {
		t.Errorf("the log has %q %d times after one reload, want twice:\n%s", sse, n, logs.String())
	}
}
