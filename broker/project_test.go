package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/config/chain"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// projectFixture is a user config and repositories with project configs
// under one canonical temporary directory, and a broker serving them.
type projectFixture struct {
	root     string
	userFile string
	b        *broker.Broker
}

// demoDef is a server definition running the demo server (this test
// binary) with the extra environment env, scoped global so that only the
// definition can keep two callers' children apart.
func demoDef(t testing.TB, env map[string]string) map[string]any {
	e := map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)}
	for k, v := range env {
		e[k] = v
	}
	return map[string]any{"command": os.Args[0], "env": e, "scope": "global"}
}

// markerDef is demoDef run through sh, which first creates the file
// marker: a caller whose call runs this command leaves it behind. Its
// sandbox lets it write marker's directory, which a caller who is not
// the owner gets only when its rights reach it (docs/sandbox.md).
func markerDef(t testing.TB, marker string) map[string]any {
	d := demoDef(t, map[string]string{"FLAVOR": "marked"})
	d["command"] = "sh"
	d["args"] = []string{"-c", `touch "$0" && exec "$1"`, marker, os.Args[0]}
	d["sandbox"] = map[string]any{"write": []string{filepath.Dir(marker)}}
	return d
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t testing.TB, path string) string {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// newProjectFixture writes the user config (servers base and gone) and
// starts a broker with it, the chain's user dir set and the walk stopped
// at the temporary directory.
func newProjectFixture(t *testing.T) *projectFixture {
	proctest.CheckNoLeaks(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &projectFixture{root: root, userFile: filepath.Join(root, "home/.config/mcpx/config.json")}
	writeJSON(t, f.userFile, map[string]any{"servers": map[string]any{
		"base": demoDef(t, map[string]string{"FLAVOR": "user"}),
		"gone": demoDef(t, map[string]string{"FLAVOR": "user"}),
		"fs":   demoDef(t, map[string]string{"FLAVOR": "user"}),
	}})
	cfg, err := config.Load(f.userFile)
	if err != nil {
		t.Fatal(err)
	}
	f.b, err = broker.New(broker.Options{Config: cfg, ReapInterval: -1, Chain: chain.Options{
		UserDir:     filepath.Dir(f.userFile),
		CeilingDirs: []string{filepath.Dir(root)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		f.b.Close(ctx)
	})
	return f
}

var owner = broker.Caller{Name: "local:1", Via: "unix", Local: true, Owner: true, Rights: rights.All()}

func names(t *testing.T, b *broker.Broker, c broker.Caller, cwd string) []string {
	t.Helper()
	infos, err := b.ServersAt(broker.Request{Caller: c, Context: broker.CallContext{Cwd: cwd}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, si := range infos {
		out = append(out, si.Name)
	}
	return out
}

// projText calls tool on server as c at cwd and returns the result's text.
func projText(t *testing.T, b *broker.Broker, c broker.Caller, cwd, server, tool string, args any) string {
	t.Helper()
	raw, _ := json.Marshal(args)
	res, err := b.CallTool(t.Context(), broker.Request{Caller: c, Context: broker.CallContext{Cwd: cwd}, Server: server}, tool, raw, nil)
	if err != nil {
		t.Fatalf("%s.%s at %s: %v", server, tool, cwd, err)
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("%s.%s: result %s", server, tool, res)
	}
	return r.Content[0].Text
}

// TestProjectConfigMerges: a repository's project config adds a server
// and disables an inherited one for callers inside it only, and
// ConfigSources names each definition's file.
func TestProjectConfigMerges(t *testing.T) {
	f := newProjectFixture(t)
	repo := filepath.Join(f.root, "home/src/repo")
	projFile := filepath.Join(repo, ".config/mcpx/config.json")
	writeJSON(t, projFile, map[string]any{"servers": map[string]any{
		"extra": demoDef(t, map[string]string{"FLAVOR": "repo"}),
		"gone":  map[string]any{"disabled": true},
	}})
	inside := mkdir(t, filepath.Join(repo, "sub/dir"))
	outside := mkdir(t, filepath.Join(f.root, "home/elsewhere"))

	if got, want := names(t, f.b, owner, inside), []string{"base", "extra", "fs"}; !slices.Equal(got, want) {
		t.Errorf("servers inside the repo = %v, want %v", got, want)
	}
	if got, want := names(t, f.b, owner, outside), []string{"base", "fs", "gone"}; !slices.Equal(got, want) {
		t.Errorf("servers outside the repo = %v, want %v", got, want)
	}
	if got := projText(t, f.b, owner, inside, "extra", "env", map[string]string{"name": "FLAVOR"}); got != "repo" {
		t.Errorf("extra's FLAVOR = %q, want the project definition's", got)
	}
	_, err := f.b.CallTool(t.Context(), broker.Request{Caller: owner, Context: broker.CallContext{Cwd: inside}, Server: "gone"}, "echo", nil, nil)
	if be := (*broker.Error)(nil); !errors.As(err, &be) || be.Kind != broker.KindNotFound {
		t.Errorf("calling the disabled server inside the repo: %v, want not found", err)
	}

	src, err := f.b.ConfigSources(broker.Request{Caller: owner, Context: broker.CallContext{Cwd: inside}})
	if err != nil {
		t.Fatal(err)
	}
	bySrv := map[string]broker.ServerSource{}
	for _, s := range src.Servers {
		bySrv[s.Name] = s
	}
	if s := bySrv["extra"]; s.File != projFile || s.Kind != chain.KindProject || !strings.HasPrefix(s.Instance, "extra@") {
		t.Errorf("extra's source = %+v, want the project file and a hashed instance name", s)
	}
	if s := bySrv["base"]; s.File != f.userFile || s.Kind != chain.KindUser || s.Instance != "base" {
		t.Errorf("base's source = %+v, want the user config", s)
	}
	if s := bySrv["gone"]; s.File != f.userFile || s.DisabledBy != projFile {
		t.Errorf("gone's source = %+v, want defined by the user config, disabled by the project file", s)
	}
	if len(src.Chain) != 2 || src.Chain[0].Config != projFile || !src.Chain[0].Applied || src.Chain[1].Kind != chain.KindUser {
		t.Errorf("chain = %+v, want the project dir (applied) then the user's", src.Chain)
	}
}

// TestProjectDefinitionsNeverShareChildren: two repositories defining fs
// differently get a child each, though the server is global, and each sees
// its own definition; a repository without one gets the user's.
func TestProjectDefinitionsNeverShareChildren(t *testing.T) {
	f := newProjectFixture(t)
	var dirs []string
	for _, r := range []string{"a", "b"} {
		repo := filepath.Join(f.root, "src", r)
		writeJSON(t, filepath.Join(repo, ".mcpx/config.json"), map[string]any{"servers": map[string]any{
			"fs": demoDef(t, map[string]string{"FLAVOR": r}),
		}})
		dirs = append(dirs, repo)
	}
	plain := mkdir(t, filepath.Join(f.root, "src/plain"))
	pids := map[string]bool{}
	for i, want := range []string{"a", "b", "user"} {
		dir := append(dirs, plain)[i]
		if got := projText(t, f.b, owner, dir, "fs", "env", map[string]string{"name": "FLAVOR"}); got != want {
			t.Errorf("fs's FLAVOR at %s = %q, want %q", dir, got, want)
		}
		pids[projText(t, f.b, owner, dir, "fs", "pid", nil)] = true
	}
	if len(pids) != 3 {
		t.Errorf("three definitions of fs ran in %d children, want 3", len(pids))
	}
	// The same repository again reuses its child.
	if pid := projText(t, f.b, owner, dirs[0], "fs", "pid", nil); !pids[pid] {
		t.Errorf("repo a's second call ran in a new child %s", pid)
	}
	var servers []string
	for _, in := range f.b.Instances() {
		servers = append(servers, in.Server)
	}
	slices.Sort(servers)
	if len(servers) != 3 || servers[0] != "fs" || !strings.HasPrefix(servers[1], "fs@") || !strings.HasPrefix(servers[2], "fs@") {
		t.Errorf("instances = %v, want fs and two fs@hash", servers)
	}
}

// TestProjectConfigTrust: a caller without the projectConfig right is served
// the owner's config from inside the repository, and the project file's
// command never runs for it (its marker file is never made); the same cwd
// with the right, or as the owner, gets the project's server.
func TestProjectConfigTrust(t *testing.T) {
	f := newProjectFixture(t)
	repo := filepath.Join(f.root, "src/repo")
	marker := filepath.Join(f.root, "marker")
	projFile := filepath.Join(repo, ".mcpx/config.json")
	writeJSON(t, projFile, map[string]any{"servers": map[string]any{
		"base":  markerDef(t, marker), // overrides the user's
		"extra": markerDef(t, marker), // adds one
	}})
	guest := broker.Caller{Name: "guest", Via: "jwt", Rights: rights.Rights{{Roots: []string{f.root}}}}

	if got, want := names(t, f.b, guest, repo), []string{"base", "fs", "gone"}; !slices.Equal(got, want) {
		t.Errorf("guest's servers in the repo = %v, want the owner's %v", got, want)
	}
	if got := projText(t, f.b, guest, repo, "base", "env", map[string]string{"name": "FLAVOR"}); got != "user" {
		t.Errorf("guest's base FLAVOR = %q, want the owner's definition", got)
	}
	_, err := f.b.CallTool(t.Context(), broker.Request{Caller: guest, Context: broker.CallContext{Cwd: repo}, Server: "extra"}, "echo", nil, nil)
	if be := (*broker.Error)(nil); !errors.As(err, &be) || be.Kind != broker.KindNotFound {
		t.Errorf("guest calling the project's server: %v, want not found", err)
	}
	src, err := f.b.ConfigSources(broker.Request{Caller: guest, Context: broker.CallContext{Cwd: repo}})
	if err != nil {
		t.Fatal(err)
	}
	if src.ProjectConfig || len(src.Chain) == 0 || src.Chain[0].Config != projFile || src.Chain[0].Applied ||
		!strings.Contains(src.Chain[0].Skipped, "projectConfig: true") {
		t.Errorf("guest's sources = %+v, want the project file skipped, saying why", src)
	}
	for _, d := range src.Chain[1:] {
		if d.Path != "" || d.Config != "" {
			t.Errorf("guest sees the owner's file %+v", d)
		}
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the project's command ran for a caller without projectConfig (marker: %v)", err)
	}

	// projectConfig is a rule's, in its roots only: a rule that says it
	// for another directory does not trust this one.
	elsewhere := guest
	elsewhere.Name = "elsewhere"
	elsewhere.Rights = append(rights.Rights{{Roots: []string{mkdir(t, filepath.Join(f.root, "src/other"))}, ProjectConfig: true}}, guest.Rights...)
	if got, want := names(t, f.b, elsewhere, repo), []string{"base", "fs", "gone"}; !slices.Equal(got, want) {
		t.Errorf("servers in the repo of a caller trusted elsewhere = %v, want the owner's %v", got, want)
	}
	src, err = f.b.ConfigSources(broker.Request{Caller: elsewhere, Context: broker.CallContext{Cwd: repo}})
	if err != nil {
		t.Fatal(err)
	}
	if !src.ProjectConfig || len(src.Chain) == 0 || src.Chain[0].Applied || !strings.Contains(src.Chain[0].Skipped, "reaches it") {
		t.Errorf("sources of a caller trusted elsewhere = %+v, want the project file skipped, saying no projectConfig rule reaches it", src)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the project's command ran for a caller trusted in another directory only (marker: %v)", err)
	}

	trusted := guest
	trusted.Name, trusted.Rights = "trusted", rights.Rights{{Roots: []string{f.root}, ProjectConfig: true}}
	if got := projText(t, f.b, trusted, repo, "extra", "env", map[string]string{"name": "FLAVOR"}); got != "marked" {
		t.Errorf("trusted caller's extra FLAVOR = %q, want the project's", got)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the project's command did not run for a trusted caller, so the marker proves nothing: %v", err)
	}
}

// TestProjectConfigBrokenFile: a project file that does not load fails only
// the chains it is on, with a 400 naming the file; a caller it does not
// apply to is unaffected.
func TestProjectConfigBrokenFile(t *testing.T) {
	f := newProjectFixture(t)
	repo := filepath.Join(f.root, "src/broken")
	bad := filepath.Join(repo, ".mcpx/config.json")
	writeJSON(t, bad, map[string]any{"servers": map[string]any{"x": map[string]any{"comand": "true"}}})
	other := mkdir(t, filepath.Join(f.root, "src/fine"))

	_, err := f.b.ServersAt(broker.Request{Caller: owner, Context: broker.CallContext{Cwd: repo}})
	be := (*broker.Error)(nil)
	if !errors.As(err, &be) || be.Kind != broker.KindBadRequest || !strings.Contains(be.Msg, bad) || !strings.Contains(be.Msg, "comand") {
		t.Fatalf("servers in the broken repo: %v, want a bad request naming %s and the field", err, bad)
	}
	if got := names(t, f.b, owner, other); len(got) != 3 {
		t.Errorf("servers elsewhere = %v, want the user's three", got)
	}
	guest := broker.Caller{Name: "guest", Via: "jwt", Rights: rights.Rights{{Roots: []string{f.root}}}}
	if got := names(t, f.b, guest, repo); len(got) != 3 {
		t.Errorf("guest's servers in the broken repo = %v, want the owner's three", got)
	}
	// Fixing the file is noticed without a reload (its stat changed).
	writeJSON(t, bad, map[string]any{"servers": map[string]any{"x": demoDef(t, nil)}})
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(bad, future, future); err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, f.b, owner, repo), []string{"base", "fs", "gone", "x"}; !slices.Equal(got, want) {
		t.Errorf("servers after the fix = %v, want %v", got, want)
	}
}

// TestProjectFileEditReplacesChildren: editing a project file is noticed at
// the next call without a reload: the new definition gets a new child, and
// the old definition's child is drained and stopped.
func TestProjectFileEditReplacesChildren(t *testing.T) {
	f := newProjectFixture(t)
	repo := filepath.Join(f.root, "src/repo")
	file := filepath.Join(repo, ".mcpx/config.json")
	writeJSON(t, file, map[string]any{"servers": map[string]any{"fs": demoDef(t, map[string]string{"FLAVOR": "one"})}})
	if got := projText(t, f.b, owner, repo, "fs", "env", map[string]string{"name": "FLAVOR"}); got != "one" {
		t.Fatalf("FLAVOR = %q, want one", got)
	}
	before := f.b.Instances()
	if len(before) != 1 {
		t.Fatalf("instances = %+v, want one", before)
	}
	writeJSON(t, file, map[string]any{"servers": map[string]any{"fs": demoDef(t, map[string]string{"FLAVOR": "two"})}})
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(file, future, future); err != nil {
		t.Fatal(err)
	}
	if got := projText(t, f.b, owner, repo, "fs", "env", map[string]string{"name": "FLAVOR"}); got != "two" {
		t.Errorf("FLAVOR after the edit = %q, want two", got)
	}
	testenv.WaitFor(t, "the old definition's child to stop", func() bool {
		in := f.b.Instances()
		return len(in) == 1 && in[0].Server != before[0].Server && strings.HasPrefix(in[0].Server, "fs@")
	})
}

// TestProjectConfigAboveRoots: a project file above a trusted caller's
// roots neither applies to it nor appears in its report.
func TestProjectConfigAboveRoots(t *testing.T) {
	f := newProjectFixture(t)
	above := filepath.Join(f.root, "src/.mcpx/config.json")
	writeJSON(t, above, map[string]any{"servers": map[string]any{"up": demoDef(t, nil)}})
	repo := mkdir(t, filepath.Join(f.root, "src/repo"))
	c := broker.Caller{Name: "dev", Via: "jwt", Rights: rights.Rights{{Roots: []string{repo}, ProjectConfig: true}}}
	if got, want := names(t, f.b, c, repo), []string{"base", "fs", "gone"}; !slices.Equal(got, want) {
		t.Errorf("servers below the project dir's roots = %v, want %v", got, want)
	}
	src, err := f.b.ConfigSources(broker.Request{Caller: c, Context: broker.CallContext{Cwd: repo}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range src.Chain {
		if d.Kind == chain.KindProject {
			t.Errorf("the report names a project dir above the caller's roots: %+v", d)
		}
	}
	if got := names(t, f.b, owner, repo); !slices.Contains(got, "up") {
		t.Errorf("the owner's servers at the repo = %v, want up from the project file above", got)
	}
}

// BenchmarkTargetChain: where a call lands, for the owner in a directory
// with no project file and in one with a project file two levels up (its
// chain cached, its file stat'ed per call, its merge cached).
func BenchmarkTargetChain(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	user := filepath.Join(root, "home/.config/mcpx/config.json")
	writeJSON(b, user, map[string]any{"servers": map[string]any{"base": demoDef(b, nil)}})
	cfg, err := config.Load(user)
	if err != nil {
		b.Fatal(err)
	}
	br, err := broker.New(broker.Options{Config: cfg, ReapInterval: -1, Chain: chain.Options{UserDir: filepath.Dir(user), CeilingDirs: []string{filepath.Dir(root)}}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close(context.Background())
	writeJSON(b, filepath.Join(root, "repo/.mcpx/config.json"), map[string]any{"servers": map[string]any{"fs": demoDef(b, nil)}})
	for _, bc := range []struct{ name, cwd, server string }{
		{"plain", mkdir(b, filepath.Join(root, "plain/a/b")), "base"},
		{"project", mkdir(b, filepath.Join(root, "repo/a/b")), "fs"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := broker.Request{Caller: owner, Context: broker.CallContext{Cwd: bc.cwd}, Server: bc.server}
			for b.Loop() {
				if _, err := br.Target(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestProjectFileOwnerChange (real-use 14): a trusted project file that
// another user comes to own is skipped at once, and the reverse is used
// at once, though neither its size, mtime, inode nor mode changed. Root's
// file is trusted as the daemon user's own (config.ReadTrusted), whoever the
// daemon runs as. Run as root, the owners change by real chowns;
// otherwise the daemon's uid changes instead (SetDaemonUID), as if the
// file's owner had.
func TestProjectFileOwnerChange(t *testing.T) {
	f := newProjectFixture(t)
	repo := filepath.Join(f.root, "home/src/repo")
	projFile := filepath.Join(repo, ".config/mcpx/config.json")
	writeJSON(t, projFile, map[string]any{"servers": map[string]any{"extra": demoDef(t, nil)}})
	with, without := []string{"base", "extra", "fs", "gone"}, []string{"base", "fs", "gone"}
	check := func(when string, want []string) {
		t.Helper()
		if got := names(t, f.b, owner, repo); !slices.Equal(got, want) {
			t.Errorf("%s: servers in the repo = %v, want %v", when, got, want)
		}
	}
	check("the daemon user's file", with)
	if os.Getuid() != 0 {
		broker.SetDaemonUID(t, os.Getuid()+1)
		check("after its owner changed", without)
		broker.SetDaemonUID(t, os.Getuid())
		check("owned by the daemon's user again", with)
		return
	}
	const daemon, other = 12345, 23456
	chown := func(uid int) {
		t.Helper()
		if err := os.Chown(projFile, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	broker.SetDaemonUID(t, daemon)
	chown(daemon)
	check("owned by the daemon's user", with)
	chown(other)
	check("after chown to another user", without)
	chown(0)
	check("after chown to root, the daemon not root", with)
	chown(daemon)
	check("after chown back", with)
}

// TestSkippedProjectFileNamedInNotFound (real-use 15): calling a server
// that only a skipped project file defines is "no such server" with a hint,
// for the owner, naming the file and why it is skipped; other callers'
// hints name no file.
func TestSkippedProjectFileNamedInNotFound(t *testing.T) {
	f := newProjectFixture(t)
	repo := filepath.Join(f.root, "home/src/repo")
	projFile := filepath.Join(repo, ".config/mcpx/config.json")
	writeJSON(t, projFile, map[string]any{"servers": map[string]any{"extra": demoDef(t, nil)}})
	if err := os.Chmod(projFile, 0o666); err != nil {
		t.Fatal(err)
	}
	call := func(c broker.Caller) *broker.Error {
		t.Helper()
		_, err := f.b.CallTool(t.Context(), broker.Request{Caller: c, Context: broker.CallContext{Cwd: repo}, Server: "extra"}, "echo", nil, nil)
		be := (*broker.Error)(nil)
		if !errors.As(err, &be) || be.Kind != broker.KindNotFound {
			t.Fatalf("calling extra from a skipped project file: %v, want not found", err)
		}
		return be
	}
	if be := call(owner); !strings.Contains(be.Hint, projFile) || !strings.Contains(be.Hint, "other users may write it") {
		t.Errorf("owner's hint %q, want it to name %s and why it is skipped", be.Hint, projFile)
	}
	guest := broker.Caller{Name: "guest", Via: "jwt", Rights: rights.Rights{{Roots: []string{f.root}, ProjectConfig: true}}}
	if be := call(guest); strings.Contains(be.Hint, projFile) {
		t.Errorf("a guest's hint names the file: %q", be.Hint)
	}
}

// TestProjectFileSwappedAfterItsStat: a project file that passes the trust
// check and is then replaced (renamed over, as anyone who may write its
// directory can) by a file others may write is judged again when it is
// read: the replacement's server is never served, and the file is skipped
// saying why.
func TestProjectFileSwappedAfterItsStat(t *testing.T) {
	f := newProjectFixture(t)
	repo := filepath.Join(f.root, "src/repo")
	projFile := filepath.Join(repo, ".mcpx/config.json")
	writeJSON(t, projFile, map[string]any{"servers": map[string]any{"extra": demoDef(t, map[string]string{"FLAVOR": "project"})}})
	swapped := false
	broker.SetAfterStamp(t, func(path string) {
		if path != projFile || swapped {
			return
		}
		swapped = true
		evil := projFile + ".evil"
		writeJSON(t, evil, map[string]any{"servers": map[string]any{"evil": demoDef(t, map[string]string{"FLAVOR": "evil"})}})
		if err := os.Chmod(evil, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(evil, projFile); err != nil {
			t.Fatal(err)
		}
	})
	got := names(t, f.b, owner, repo)
	if !swapped {
		t.Fatal("the project file was never read: this test could not fail")
	}
	if slices.Contains(got, "evil") {
		t.Errorf("servers = %v: the file swapped in after the trust check was read as trusted", got)
	}
	src, err := f.b.ConfigSources(broker.Request{Caller: owner, Context: broker.CallContext{Cwd: repo}})
	if err != nil {
		t.Fatal(err)
	}
	if len(src.Chain) == 0 || src.Chain[0].Config != projFile || src.Chain[0].Applied || !strings.Contains(src.Chain[0].Skipped, "other users may write it") {
		t.Errorf("sources = %+v, want the swapped-in file skipped, saying others may write it", src.Chain)
	}
}
