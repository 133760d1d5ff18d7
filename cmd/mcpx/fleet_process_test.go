package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/daemon/doctor"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/internal/testing/testtailnet"
	"mcpx.dev/mcpx/wire"
)

// TestFleetProcess is the fleet's acceptance test: a test control server
// (this binary as a test tailnet, granting every node the demo server
// under the test's directory),
// two real `mcpx serve --tailnet --tailnet-tags tag:mcpx` brokers, alpha
// and beta, and a laptop running the CLI with its own embedded node. From
// the laptop, `mcpx fleet ls --tsnet` lists both with their servers and
// instances; a call to each by name lands on that machine (the demo
// server's pid is an instance of that daemon, as its owner's status shows);
// status, tools, events and sessions work by name too. Alpha's GET
// /v1/fleet (through its socket) lists itself and beta; doctor reads
// alpha's node state from the running daemon. Once beta is stopped, both
// views show it unreachable (bounded by the probe's timeout) and alpha ok.
// Every process is gone at the end.
func TestFleetProcess(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	mcpx, dir, marker := processTest(t)

	url, stopControl := startTestTailnet(t, mcpx, marker, dir)

	type daemon struct {
		cmd  *exec.Cmd
		sock string
		logs *testenv.SyncBuffer
	}
	start := func(name string) daemon {
		d := daemon{sock: filepath.Join(dir, name+".sock"), logs: new(testenv.SyncBuffer)}
		env := append(os.Environ(), marker, "XDG_CONFIG_HOME="+filepath.Join(dir, name, "config"))
		d.cmd = exec.Command(mcpx, "serve", "--socket", d.sock, "--state-dir", filepath.Join(dir, name, "state"),
			"--listen", "off", "--tailnet", "--tailnet-hostname", name, "--tailnet-tags", wire.DefaultFleetTag,
			"--tailnet-control-url", url, "--tailnet-up-timeout", "30s")
		d.cmd.Env, d.cmd.Stdout, d.cmd.Stderr = append(env, testtailnet.Env...), d.logs, d.logs
		if err := d.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.cmd.Process.Kill(); d.cmd.Wait() })
		return d
	}
	alpha, beta := start("alpha"), start("beta")
	for name, d := range map[string]daemon{"alpha": alpha, "beta": beta} {
		testenv.WaitFor(t, name+" to serve", func() bool { return strings.Contains(d.logs.String(), "mcpx serving") })
	}

	// run runs the CLI; laptop ones with its own node (--tsnet).
	run := func(laptop bool, args ...string) (string, string, error) {
		cmd := exec.Command(mcpx, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), marker, "PWD="+dir, "MCPX_NO_AUTOSTART=1", "XDG_CONFIG_HOME="+filepath.Join(dir, "alpha", "config"))
		if laptop {
			cmd.Args = append(cmd.Args, "--tsnet")
			cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+filepath.Join(dir, "laptop", "state"),
				"MCPX_TSNET_CONTROL_URL="+url, "MCPX_TSNET_HOSTNAME=laptop")
			cmd.Env = append(cmd.Env, testtailnet.Env...)
		}
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return strings.TrimSpace(out.String()), errOut.String(), err
	}
	fleetOf := func(laptop bool, args ...string) map[string]wire.FleetBroker {
		t.Helper()
		out, errOut, err := run(laptop, append([]string{"fleet", "ls", "--json"}, args...)...)
		var f wire.Fleet
		if err != nil || json.Unmarshal([]byte(out), &f) != nil {
			t.Fatalf("fleet ls %v: %v\n%s\n%s", args, err, out, errOut)
		}
		got := map[string]wire.FleetBroker{}
		for _, b := range f.Brokers {
			got[b.Name] = b
		}
		return got
	}

	// A call to each broker by name lands there: the demo server that
	// answers is an instance of that daemon.
	pids := map[string]int{}
	for name, d := range map[string]daemon{"alpha": alpha, "beta": beta} {
		out, errOut, err := run(true, "call", "--broker", name, "--cwd", dir, "demo.pid", "{}")
		pid, perr := strconv.Atoi(out)
		if err != nil || perr != nil {
			t.Fatalf("call demo.pid on %s: %q, %v\n%s\n%s", name, out, err, errOut, d.logs.String())
		}
		pids[name] = pid
		out, errOut, err = run(false, "status", "--json", "--broker", d.sock)
		var list wire.InstanceList
		if err != nil || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("status of %s: %v\n%s\n%s", name, err, out, errOut)
		}
		if !slices.ContainsFunc(list.Instances, func(in wire.Instance) bool { return in.Pid == pid }) {
			t.Errorf("the call to %s was answered by pid %d, which is not one of %s's instances: %+v", name, pid, name, list.Instances)
		}
	}
	if pids["alpha"] == pids["beta"] {
		t.Errorf("alpha and beta answered with the same pid %d", pids["alpha"])
	}

	// The laptop's view: both brokers, with their servers and instances.
	began := time.Now()
	got := fleetOf(true)
	t.Logf("fleet ls --tsnet took %v (a new process and node)", time.Since(began))
	for _, name := range []string{"alpha", "beta"} {
		b := got[name]
		if b.State != wire.FleetOK || b.DNSName != name+".tail-scale.ts.net" || !slices.Contains(b.Tags, wire.DefaultFleetTag) ||
			len(b.Servers) != 1 || b.Servers[0].Name != "demo" || b.Instances != 1 || b.Version == "" || b.Caller == "" {
			t.Errorf("laptop's fleet: %s = %+v, want ok with demo and its one instance", name, b)
		}
	}
	if len(got) != 2 {
		t.Errorf("laptop's fleet: %v, want alpha and beta only (the laptop is untagged)", got)
	}
	out, errOut, err := run(true, "fleet", "ls")
	if err != nil || !strings.Contains(out, "alpha.tail-scale.ts.net") || !strings.Contains(out, "beta.tail-scale.ts.net") ||
		!strings.Contains(out, "tagged tag:mcpx, as seen from laptop.") {
		t.Errorf("fleet ls: %v\n%s\n%s", err, out, errOut)
	}

	// Every command drives a broker by name.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "tailnet node beta (beta.tail-scale.ts.net)"},
		{[]string{"tools", "--cwd", dir, "demo"}, "pid"},
		{[]string{"events"}, "spawn"},
		{[]string{"sessions", "ls"}, ""},
		{[]string{"whoami", "--cwd", dir}, "via tailnet"},
	} {
		out, errOut, err := run(true, append(tc.args, "--broker", "beta")...)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("%v --broker beta: %v\n%s\n%s\nwant %q", tc.args, err, out, errOut, tc.want)
		}
	}

	// Alpha's view (GET /v1/fleet through its socket): itself, then beta.
	got = fleetOf(false, "--broker", alpha.sock)
	if a := got["alpha"]; !a.Self || a.State != wire.FleetOK || a.Instances != 1 {
		t.Errorf("alpha's fleet: alpha = %+v, want itself, ok", a)
	}
	if b := got["beta"]; b.Self || b.State != wire.FleetOK || len(b.Servers) != 1 || b.Caller != wire.DefaultFleetTag {
		t.Errorf("alpha's fleet: beta = %+v, want ok, asked as alpha's tagged node", b)
	}

	// Doctor asks the running daemon how its node is.
	out, _, _ = run(false, "doctor", "--json", "--socket", alpha.sock, "--state-dir", filepath.Join(dir, "alpha", "state"), "--tailnet")
	var doc struct{ Findings []doctor.Finding }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	i := slices.IndexFunc(doc.Findings, func(f doctor.Finding) bool { return f.Check == "tailnet" })
	if i < 0 || !doc.Findings[i].OK || doc.Findings[i].Subject != "alpha.tail-scale.ts.net" {
		t.Errorf("doctor's tailnet finding: %+v, want alpha's node up", doc.Findings)
	}

	// Beta stops: both views show it unreachable, alpha still ok.
	if err := beta.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := beta.cmd.Wait(); err != nil {
		t.Errorf("beta exited with %v after SIGTERM:\n%s", err, beta.logs.String())
	}
	for _, view := range []struct {
		laptop bool
		args   []string
	}{{true, nil}, {false, []string{"--broker", alpha.sock}}} {
		got := fleetOf(view.laptop, view.args...)
		if b := got["beta"]; b.State != wire.FleetUnreachable || b.Error == "" {
			t.Errorf("after beta stopped (laptop %v): beta = %+v, want unreachable with the reason", view.laptop, b)
		}
		if a := got["alpha"]; a.State != wire.FleetOK {
			t.Errorf("after beta stopped (laptop %v): alpha = %+v, want ok", view.laptop, a)
		}
	}

	if err := alpha.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := alpha.cmd.Wait(); err != nil {
		t.Errorf("alpha exited with %v after SIGTERM:\n%s", err, alpha.logs.String())
	}
	if err := stopControl(); err != nil {
		t.Errorf("the test tailnet exited with %v", err)
	}
}
