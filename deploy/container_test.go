package deploy_test

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// instruction is one Containerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// parseContainerfile splits the recipe into stages of instructions.
func parseContainerfile(t *testing.T, text string) [][]instruction {
	t.Helper()
	var stages [][]instruction
	var cur string
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(strings.TrimSpace(line), "#") && cur == "" {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cur += strings.TrimSuffix(line, `\`) + " "
			continue
		}
		cur += line
		if strings.TrimSpace(cur) == "" {
			cur = ""
			continue
		}
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur), " ")
		cur = ""
		in := instruction{strings.ToUpper(cmd), strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("%s before the first FROM", in.cmd)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	return stages
}

func jsonArgs(t *testing.T, in instruction) []string {
	t.Helper()
	var a []string
	if err := json.Unmarshal([]byte(in.args), &a); err != nil {
		t.Fatalf("%s %s: not the exec (JSON) form: %v", in.cmd, in.args, err)
	}
	return a
}

// TestContainerfile checks the recipe's structure: a static build of
// cmd/mcpx with the Go of go.mod, pinned base images, a final stage that
// runs as a numeric non-root user, and the state directory the command
// names being a volume owned by that user.
func TestContainerfile(t *testing.T) {
	root := testenv.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// real-use 28: the socket admits uid 65532 only (TestStaticNonRoot);
	// the header must say how anyone else reaches the daemon.
	for _, want := range []string{"podman exec mcpx mcpx call", "--listen 127.0.0.1:", "--token-file"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the Containerfile does not say how a caller of another uid reaches the daemon (%q)", want)
		}
	}
	stages := parseContainerfile(t, string(b))
	if len(stages) != 3 {
		t.Fatalf("%d stages, want a build stage, a minimal image and the default one", len(stages))
	}
	gomod, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	for i, st := range stages {
		image, _, _ := strings.Cut(st[0].args, " ")
		if !strings.Contains(image, ":") || strings.HasSuffix(image, ":latest") {
			t.Errorf("stage %d: base image %q is not pinned to a tag", i, image)
		}
	}
	if from := stages[0][0].args; goVersion == nil || !strings.Contains(from, "golang:"+string(goVersion[1])+"-") {
		t.Errorf("build stage %q does not use the Go of go.mod (%s)", from, goVersion)
	}
	static := false
	for _, in := range stages[0] {
		if in.cmd == "RUN" && strings.Contains(in.args, "CGO_ENABLED=0 go build") && strings.Contains(in.args, "./cmd/mcpx") {
			static = true
		}
	}
	if !static {
		t.Error("the build stage does not build ./cmd/mcpx with CGO_ENABLED=0")
	}
	if !strings.HasSuffix(stages[1][0].args, " AS minimal") {
		t.Errorf("the second stage is FROM %s, want the minimal image (AS minimal)", stages[1][0].args)
	}
	for _, st := range stages[1:] {
		checkFinalStage(t, st)
	}
	// The default image puts a runtime set on PATH: git and node unless
	// the RUNTIMES build argument says otherwise.
	var runtimes string
	installs := false
	for _, in := range stages[2] {
		if in.cmd == "ARG" && strings.HasPrefix(in.args, "RUNTIMES=") {
			runtimes = strings.Trim(strings.TrimPrefix(in.args, "RUNTIMES="), `"`)
		}
		if in.cmd == "RUN" && strings.Contains(in.args, "apt-get install") && strings.Contains(in.args, "$RUNTIMES") {
			installs = true
		}
	}
	if f := strings.Fields(runtimes); !slices.Contains(f, "git") || !slices.Contains(f, "nodejs") || !installs {
		t.Errorf("the default image: ARG RUNTIMES=%q, installed: %v; want git and nodejs installed from $RUNTIMES", runtimes, installs)
	}
}

// checkFinalStage checks an image stage: a numeric non-root user, the
// state directory a volume owned by it, the entrypoint a file it copies.
func checkFinalStage(t *testing.T, stage []instruction) {
	t.Helper()
	final := map[string][]instruction{}
	for _, in := range stage {
		final[in.cmd] = append(final[in.cmd], in)
	}
	if len(final["USER"]) != 1 {
		t.Fatalf("final stage: %d USER instructions, want 1", len(final["USER"]))
	}
	user := final["USER"][0].args
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %s: want a numeric non-root uid (a name cannot be checked by the runtime before start)", user)
	}
	entry := jsonArgs(t, final["ENTRYPOINT"][0])
	cmd := jsonArgs(t, final["CMD"][0])
	i := slices.Index(cmd, "--state-dir")
	if len(cmd) == 0 || cmd[0] != "serve" || i < 0 || i+1 >= len(cmd) {
		t.Fatalf("CMD %v: want serve --state-dir DIR", cmd)
	}
	state := cmd[i+1]
	if sock := slices.Index(cmd, "--socket"); sock < 0 || !strings.HasPrefix(cmd[sock+1], state+"/") {
		t.Errorf("CMD %v: the socket is not in the state volume", cmd)
	}
	if len(final["VOLUME"]) != 1 || !slices.Contains(jsonArgs(t, final["VOLUME"][0]), state) {
		t.Errorf("the state directory %s is not a VOLUME", state)
	}
	copied := map[string]string{} // destination -> COPY args
	for _, in := range final["COPY"] {
		f := strings.Fields(in.args)
		copied[f[len(f)-1]] = in.args
	}
	if c := copied[state]; !strings.Contains(c, "--chown="+user) {
		t.Errorf("the state directory %s is not created owned by %s: COPY %s", state, user, c)
	}
	if _, ok := copied[entry[0]]; !ok {
		t.Errorf("ENTRYPOINT %s is not a file the final stage copies", entry[0])
	}
}

// TestStaticNonRoot builds the binary as the Containerfile does and shows
// what the image promises without a container runtime (there is none
// offline): the binary is static (no ELF interpreter), and run as an
// unprivileged user (uid 65532, the image's) it serves from its state
// directory, spawns its demo child as that user, and cannot write outside
// the directories that user owns.
func TestStaticNonRoot(t *testing.T) {
	proctest.CheckNoLeaks(t)
	setpriv := testenv.Program(t, "setpriv", "apt-get install -y util-linux")
	goBin := testenv.Program(t, "go", "see https://go.dev/doc/install")
	if os.Getuid() != 0 {
		// Not a missing dependency: changing uid needs root (CI runs as root).
		t.Skip("running as another user needs root")
	}
	const uid = 65532
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		os.Chmod(d, 0o755) // traversable by the unprivileged user
	}
	bin := filepath.Join(dir, "mcpx")
	build := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/mcpx")
	build.Dir = testenv.RepoRoot(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := testenv.GoBuild(build); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has an ELF interpreter: it is not static")
		}
	}
	f.Close()

	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(state, uid, uid); err != nil {
		t.Fatal(err)
	}
	as := func(uid int, args ...string) *exec.Cmd {
		cmd := exec.Command(setpriv, append([]string{"--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(uid), "--clear-groups", "--", bin}, args...)...)
		cmd.Env = []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin", "MCPX_NO_AUTOSTART=1", proctest.Env(t)}
		return cmd
	}
	asUser := func(args ...string) *exec.Cmd { return as(uid, args...) }
	sock := filepath.Join(state, "mcpx.sock")
	daemon := asUser("serve", "--state-dir", state, "--socket", sock, "--listen", "127.0.0.1:0")
	var logs testenv.SyncBuffer
	daemon.Stderr = &logs
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- daemon.Wait() }()
	defer func() {
		daemon.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			daemon.Process.Kill()
			<-exited
		}
	}()
	testenv.WaitFor(t, "the daemon's socket", func() bool { _, err := os.Stat(sock); return err == nil })

	out, err := asUser("call", "--broker", sock, "demo.pid").Output()
	if err != nil {
		t.Fatalf("call through the unprivileged daemon: %v\n%s", err, logs.String())
	}
	pid := regexp.MustCompile(`[0-9]+`).Find(out)
	status, err := os.ReadFile(filepath.Join("/proc", string(pid), "status"))
	if err != nil {
		t.Fatalf("the demo child %s: %v (call answered %s)", pid, err, out)
	}
	if !regexp.MustCompile(`(?m)^Uid:\s+65532\s+65532\s+65532\s+65532$`).Match(status) {
		t.Errorf("the demo child does not run as uid %d:\n%s", uid, status)
	}
	for _, name := range []string{"daemon.json", "token"} {
		st, err := os.Stat(filepath.Join(state, name))
		if err != nil {
			t.Errorf("no %s in the state directory: %v", name, err)
			continue
		}
		if sys := st.Sys().(*syscall.Stat_t); sys.Uid != uid || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: uid %d mode %v, want %d and 0600", name, sys.Uid, st.Mode().Perm(), uid)
		}
	}
	// real-use 28: the socket admits its owner only. A caller of another
	// uid (the host's user, outside the container) cannot use it; it can
	// reach the daemon on loopback TCP with the token, which the
	// Containerfile says how to get.
	const stranger = uid + 1
	asStranger := func(args ...string) *exec.Cmd { return as(stranger, args...) }
	if out, err := asStranger("call", "--broker", sock, "demo.pid").CombinedOutput(); err == nil || !strings.Contains(string(out), "permission denied") {
		t.Errorf("uid %d called through the socket of uid %d: %v\n%s", stranger, uid, err, out)
	}
	var rec struct {
		URL string `json:"url"`
	}
	recJSON, _ := os.ReadFile(filepath.Join(state, "daemon.json"))
	if err := json.Unmarshal(recJSON, &rec); err != nil || rec.URL == "" {
		t.Fatalf("the daemon record has no URL: %v\n%s", err, recJSON)
	}
	token, _ := os.ReadFile(filepath.Join(state, "token"))
	tokenFile := filepath.Join(dir, "stranger.token") // as `podman exec mcpx cat /state/token > …` gives it
	if err := os.WriteFile(tokenFile, token, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := asStranger("call", "--broker", rec.URL, "--token-file", tokenFile, "demo.echo", `{"message":"over tcp"}`).CombinedOutput(); err != nil || !strings.Contains(string(out), "over tcp") {
		t.Errorf("uid %d over loopback TCP with the token: %v\n%s", stranger, err, out)
	}
	// Elsewhere (here a root-owned directory, as the image's file system
	// is) the same user can write nothing: a daemon pointed there fails.
	other := filepath.Join(dir, "elsewhere")
	out, err = asUser("serve", "--state-dir", other, "--socket", filepath.Join(other, "s.sock"), "--listen", "off").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "permission denied") {
		t.Errorf("a daemon of uid %d wrote outside its state directory: %v\n%s", uid, err, out)
	}
	if _, err := os.Stat(other); err == nil {
		t.Errorf("%s was created", other)
	}
}
