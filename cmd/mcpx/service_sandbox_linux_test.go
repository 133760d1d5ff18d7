package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/deploy"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// The daemon under the unit's sandboxing options. There is no systemd user
// manager here (nor, often, in CI), so the test builds the options' mount
// namespace by hand, as a user manager would: a user namespace mapping
// only the user (PrivateUsers=), a mount namespace whose mounts are slaves
// of the host's (PrivateMounts=), every mount read-only but /dev, /proc,
// /sys and ReadWritePaths= (ProtectSystem=strict), /proc/sys and /sys
// read-only (ProtectKernelTunables=), a private /tmp and /var/tmp
// (PrivateTmp=), a UTS namespace (ProtectHostname=), no new privileges,
// the runtime directory (RuntimeDirectory=). It runs the unit's ExecStart.
// The seccomp options filter system calls and hide no file; they are not
// reproduced (sandboxNotReproduced). An option the unit sets that is in
// neither list fails the test.

// sandboxEnv carries a sandbox's spec to this test binary re-executed in
// its namespaces (sandboxInit).
const sandboxEnv = "MCPX_TEST_SANDBOX"

// sandboxSpec is what sandboxInit sets up before it runs Args as mcpx.
type sandboxSpec struct {
	Options map[string]string // the unit's [Service] settings
	Runtime string            // %t: $XDG_RUNTIME_DIR
	Home    string            // %h
	Args    []string          // ExecStart without the binary
}

// sandboxReproduced are the [Service] settings sandboxInit applies (or
// that are not sandboxing: the command, restarts, the environment).
var sandboxReproduced = []string{"Type", "ExecStart", "ExecReload", "Restart", "RestartSec", "Environment",
	"NoNewPrivileges", "ProtectSystem", "ReadWritePaths", "PrivateTmp", "PrivateUsers", "PrivateMounts",
	"ProtectKernelTunables", "ProtectControlGroups", "ProtectHostname", "RuntimeDirectory", "RuntimeDirectoryMode"}

// sandboxNotReproduced are the settings it does not, with why that does not
// matter to what the daemon sees of the user's files.
var sandboxNotReproduced = map[string]string{
	"ProtectKernelModules":    "hides /lib/modules and filters module system calls",
	"ProtectKernelLogs":       "hides /dev/kmsg and /proc/kmsg",
	"KeyringMode":             "the kernel keyring, not files",
	"RestrictSUIDSGID":        "seccomp",
	"RestrictRealtime":        "seccomp",
	"LockPersonality":         "seccomp",
	"SystemCallArchitectures": "seccomp",
	"SystemCallFilter":        "seccomp",
	"SystemCallErrorNumber":   "seccomp",
	"RestrictAddressFamilies": "seccomp",
}

func init() {
	if spec := os.Getenv(sandboxEnv); spec != "" {
		sandboxInit(spec) // does not return
	}
}

// sandboxInit sets up the sandbox of spec in the namespaces it was started
// in and executes this binary as `mcpx <Args>`.
func sandboxInit(spec string) {
	runtime.LockOSThread() // no_new_privs is the thread's, and exec is from it
	var sb sandboxSpec
	err := json.Unmarshal([]byte(spec), &sb)
	if err == nil {
		err = sb.apply()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(97)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, sandboxEnv+"=") })
	err = syscall.Exec("/proc/self/exe", append([]string{"mcpx"}, sb.Args...), env)
	fmt.Fprintln(os.Stderr, "sandbox: exec:", err)
	os.Exit(97)
}

func (sb sandboxSpec) yes(key string) bool {
	v := sb.Options[key]
	return v == "yes" || v == "true" || v == "1"
}

func (sb sandboxSpec) apply() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making / a slave: %w", err)
	}
	var rw []string
	for _, w := range unitWords(sb.Options["ReadWritePaths"]) {
		optional := strings.HasPrefix(w, "-")
		p := strings.NewReplacer("%t", sb.Runtime, "%h", sb.Home, "%%", "%").Replace(strings.TrimPrefix(w, "-"))
		if _, err := os.Stat(p); err != nil {
			if optional {
				continue
			}
			return fmt.Errorf("ReadWritePaths: %w", err)
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s: %w", p, err)
		}
		rw = append(rw, p)
	}
	switch v := sb.Options["ProtectSystem"]; v {
	case "strict":
		if err := readOnlyBut(append(rw, "/dev", "/proc", "/sys")); err != nil {
			return err
		}
	case "":
	default:
		return fmt.Errorf("ProtectSystem=%s: the sandbox knows strict only", v)
	}
	if sb.yes("ProtectKernelTunables") {
		if err := unix.Mount("/proc/sys", "/proc/sys", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		for _, p := range []string{"/proc/sys", "/sys"} {
			if err := setReadOnly(p, unix.AT_RECURSIVE); err != nil {
				return err
			}
		}
	}
	if sb.yes("ProtectControlGroups") {
		if err := setReadOnly("/sys/fs/cgroup", unix.AT_RECURSIVE); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	if sb.yes("PrivateTmp") {
		for _, p := range []string{"/tmp", "/var/tmp"} {
			if err := unix.Mount("tmpfs", p, "tmpfs", 0, "mode=1777"); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("PrivateTmp: %s: %w", p, err)
			}
		}
	}
	if d := sb.Options["RuntimeDirectory"]; d != "" {
		if err := os.MkdirAll(filepath.Join(sb.Runtime, d), 0o700); err != nil {
			return err
		}
	}
	if sb.yes("NoNewPrivileges") {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return err
		}
	}
	return nil
}

// readOnlyBut makes every mount read-only but those at or below keep.
func readOnlyBut(keep []string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if slices.ContainsFunc(keep, func(k string) bool { return mp == k || strings.HasPrefix(mp, strings.TrimSuffix(k, "/")+"/") }) {
			continue
		}
		if err := setReadOnly(mp, 0); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
			return err
		}
	}
	return sc.Err()
}

func setReadOnly(path string, flags int) error {
	err := unix.MountSetattr(-1, path, uint(flags)|unix.AT_SYMLINK_NOFOLLOW, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if err != nil {
		return fmt.Errorf("making %s read-only: %w", path, err)
	}
	return nil
}

// unescapeMountPath reads mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unitWords splits a unit setting's value into words: double quotes group,
// \ escapes (systemd.syntax(7)); specifiers are left for the caller.
func unitWords(v string) []string {
	var words []string
	var cur strings.Builder
	in, started := false, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' && i+1 < len(v):
			i++
			cur.WriteByte(v[i])
			started = true
		case c == '"':
			in, started = !in, true
		case (c == ' ' || c == '\t') && !in:
			if started {
				words = append(words, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteByte(c)
			started = true
		}
	}
	if started {
		words = append(words, cur.String())
	}
	return words
}

// serviceOptions are the [Service] settings of a unit.
func serviceOptions(unit string) map[string]string {
	opts := map[string]string{}
	in := false
	for line := range strings.Lines(unit) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			in = line == "[Service]"
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && in && !strings.HasPrefix(line, "#") {
			opts[k] = v
		}
	}
	return opts
}

// startSandboxed runs the daemon of unit under its sandboxing options and
// returns its socket; it is stopped (SIGTERM, then waited for) at cleanup.
func startSandboxed(t *testing.T, unit, dir string) string {
	t.Helper()
	opts := serviceOptions(unit)
	for k := range opts {
		if _, known := sandboxNotReproduced[k]; !known && !slices.Contains(sandboxReproduced, k) {
			t.Fatalf("the unit sets %s, which this sandbox neither reproduces nor knows to be harmless to what the daemon sees", k)
		}
	}
	for k, why := range sandboxNotReproduced {
		if _, ok := opts[k]; ok {
			t.Logf("not reproduced: %s (%s)", k, why)
		}
	}
	exec := unitWords(strings.NewReplacer("%%", "%", "$$", "$").Replace(opts["ExecStart"]))
	run := filepath.Join(dir, "run")
	home := filepath.Join(dir, "home")
	b, _ := json.Marshal(sandboxSpec{Options: opts, Runtime: run, Home: home, Args: exec[1:]})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := execCommand(self)
	cmd.Env = append(os.Environ(), sandboxEnv+"="+string(b), "XDG_RUNTIME_DIR="+run, "HOME="+home, "MCPX_NO_AUTOSTART=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		// The mounts are made by this binary after exec: it keeps
		// CAP_SYS_ADMIN in its namespace for that (the daemon it then
		// executes, if not root, loses it, as under a user manager).
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
		Pdeathsig:   syscall.SIGKILL,
	}
	var logs testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the sandboxed daemon: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("the sandboxed daemon did not stop on SIGTERM:\n%s", logs.String())
		}
	})
	if ns, self := nsOf(cmd.Process.Pid), nsOf(os.Getpid()); ns == self {
		t.Fatalf("the sandboxed daemon shares this test's mount namespace %s", ns)
	}
	sock := filepath.Join(run, "mcpx", "mcpx.sock")
	testenv.WaitFor(t, "the sandboxed daemon's socket", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the sandboxed daemon exited: %v\n%s", err, logs.String())
		default:
		}
		_, err := os.Stat(sock)
		return err == nil
	})
	return sock
}

// tempDirIn is a new directory in parent (absolute), removed at cleanup:
// t.TempDir is under $TMPDIR, and these must be where the test says.
func tempDirIn(t *testing.T, parent, pattern string) string {
	t.Helper()
	d, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	abs, err := filepath.Abs(d)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// readOnlyDir is a new directory outside the unit's ReadWritePaths (/tmp,
// /var/tmp, and the test's home and runtime directories, in /dev/shm): in
// this package, else in a system directory root may write; "" if there is
// none (a checkout under /tmp, not root).
func readOnlyDir(t *testing.T) string {
	t.Helper()
	for _, parent := range []string{".", "/var/lib", "/srv", "/opt"} {
		abs, err := filepath.Abs(parent)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		if under(abs, "/tmp") || under(abs, "/var/tmp") || under(abs, "/dev") {
			continue
		}
		d, err := os.MkdirTemp(abs, "mcpx-sandbox-ro-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return ""
}

func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// nsOf is the mount namespace of pid.
func nsOf(pid int) string {
	ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	return ns
}

// execCommand is exec.Command (a name the test's variables do not shadow).
func execCommand(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }

// TestServiceSandboxServesATmpWorktree: the daemon under the sandboxing
// options of the unit `mcpx service install` writes serves a caller whose
// cwd is a worktree in /tmp: its child starts there and may write there.
// Under the unit's former options (PrivateTmp=yes, /tmp not writable) the
// same call fails with "does not exist on the broker's machine", which is
// how a user met it.
func TestServiceSandboxServesATmpWorktree(t *testing.T) {
	testenv.UserNamespaces(t)
	proctest.CheckNoLeaks(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The daemon's files outside /tmp (/dev/shm stays visible under every
	// option), the caller's worktree in /tmp itself (not $TMPDIR).
	dir := tempDirIn(t, "/dev/shm", "mcpx-sandbox-")
	app := tempDirIn(t, "/tmp", "mcpx-app-")
	for _, d := range []string{"run", "home", "state"} {
		testenv.Mkdir(t, filepath.Join(dir, d))
	}
	os.Chmod(filepath.Join(dir, "run"), 0o700)
	env := map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)}
	cfg, _ := json.Marshal(map[string]any{"servers": map[string]any{
		"demo": map[string]any{"command": self, "env": env, "scope": "cwd"},
		// Writes a file in its cwd, then serves the demo.
		"writer": map[string]any{"command": "/bin/sh", "args": []string{"-c", `touch written && exec "$0"`, self}, "env": env, "scope": "cwd"},
	}})
	testenv.WriteFile(t, filepath.Join(dir, "config.json"), string(cfg))
	s := deploy.Service{Binary: self, StateDir: filepath.Join(dir, "state"), Config: filepath.Join(dir, "config.json"), Writable: []string{filepath.Join(dir, "home")}}
	f, err := deploy.Render(deploy.Linux, "/x", s)
	if err != nil {
		t.Fatal(err)
	}

	// A directory the sandbox leaves read-only (ProtectSystem=strict):
	// outside every ReadWritePaths — this package, unless the checkout is
	// itself under /tmp or /var/tmp (a CI clone may be).
	ro := readOnlyDir(t)
	callIn := func(sock, server, cwd string) (string, error) {
		c := client.New(sock, client.Options{StateDir: t.TempDir()})
		res, err := c.CallTool(t.Context(), client.Caller{Cwd: cwd}, server, "cwd", json.RawMessage(`{}`), nil)
		if err != nil {
			return "", err
		}
		var r struct{ Content []struct{ Text string } }
		if err := json.Unmarshal(res, &r); err != nil || len(r.Content) == 0 {
			return "", fmt.Errorf("result %s: %v", res, err)
		}
		return r.Content[0].Text, nil
	}
	call := func(sock, server string) (string, error) { return callIn(sock, server, app) }

	t.Run("unit", func(t *testing.T) {
		sock := startSandboxed(t, string(f.Content), dir)
		if got, err := call(sock, "demo"); err != nil || got != app {
			t.Errorf("cwd of the child for a caller in %s: %q, %v", app, got, err)
		}
		if _, err := call(sock, "writer"); err != nil {
			t.Errorf("writer: %v", err)
		}
		if _, err := os.Stat(filepath.Join(app, "written")); err != nil {
			t.Errorf("the child could not write in the /tmp worktree: %v", err)
		}
		// The sandbox holds: elsewhere the file system is read-only.
		if ro == "" {
			t.Log("no directory outside ReadWritePaths to try (a checkout under /tmp, not root): the read-only check is left out")
			return
		}
		if _, err := callIn(sock, "writer", ro); err == nil {
			t.Errorf("writer in %s (outside ReadWritePaths) started", ro)
		}
		if _, err := os.Stat(filepath.Join(ro, "written")); err == nil {
			t.Errorf("the child wrote in %s, outside ReadWritePaths", ro)
		}
	})
	t.Run("former unit", func(t *testing.T) {
		old := strings.Replace(string(f.Content), " /tmp -/var/tmp %t\n", "\nPrivateTmp=yes\n", 1)
		if old == string(f.Content) {
			t.Fatal("the unit's ReadWritePaths changed: update the former unit here")
		}
		sock := startSandboxed(t, old, dir)
		if _, err := call(sock, "demo"); err == nil || !strings.Contains(err.Error(), "does not exist on the broker's machine") {
			t.Errorf("a caller in %s under PrivateTmp=yes: %v, want the cwd not found", app, err)
		}
	})
}
