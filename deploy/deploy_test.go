package deploy_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/deploy"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// service is a unit with every option set, its paths needing quoting.
func service(bin string) deploy.Service {
	return deploy.Service{
		Binary:   bin,
		StateDir: "/home/ann/.local/state/mcpx",
		Config:   "/home/ann/my config/mcpx %.json",
		Tailnet:  &deploy.Tailnet{Hostname: "mcpx-ann", AuthKeyFile: "/home/ann/.config/mcpx/authkey", Tags: "tag:mcpx,tag:dev"},
		Path:     []string{"/home/ann/.nix-profile/bin", "/opt/node/bin"},
		Writable: []string{"/home/ann"},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./deploy -update)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got; go test ./deploy -update rewrites it):\n%s", name, d)
	}
}

func TestRenderGolden(t *testing.T) {
	for _, tc := range []struct {
		p    deploy.Platform
		file string
	}{{deploy.Linux, "mcpx.service.golden"}, {deploy.Darwin, "mcpx.plist.golden"}} {
		f, err := deploy.Render(tc.p, "/x", service("/usr/local/bin/mcpx"))
		if err != nil {
			t.Fatal(err)
		}
		golden(t, tc.file, f.Content)
	}
}

func TestRenderRejects(t *testing.T) {
	for name, s := range map[string]deploy.Service{
		"relative binary":  {Binary: "mcpx", StateDir: "/s"},
		"relative state":   {Binary: "/b/mcpx", StateDir: "s"},
		"newline":          {Binary: "/b/mcpx", StateDir: "/s\nExecStartPre=/bin/evil"},
		"relative keyfile": {Binary: "/b/mcpx", StateDir: "/s", Tailnet: &deploy.Tailnet{AuthKeyFile: "key"}},
		"colon in PATH":    {Binary: "/b/mcpx", StateDir: "/s", Path: []string{"/a:/b"}},
	} {
		if _, err := deploy.Render(deploy.Linux, "/x", s); err == nil {
			t.Errorf("%s: rendered, want an error", name)
		}
	}
	if _, err := deploy.Render("windows", "/x", deploy.Service{Binary: "/b", StateDir: "/s"}); err == nil {
		t.Error("windows: rendered, want an error")
	}
}

// TestSystemdVerify runs systemd-analyze verify --user on the rendered unit:
// it exits 0 and says nothing (it reports unknown keys and bad values on
// stderr, exit status 0).
func TestSystemdVerify(t *testing.T) {
	analyze := testenv.Program(t, "systemd-analyze", "apt-get install -y systemd")
	dir := t.TempDir()
	bin, err := os.Executable() // an executable file: verify checks ExecStart's
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	testenv.Mkdir(t, run)
	os.Chmod(run, 0o700)
	verify := func(unit []byte) (string, error) {
		path := filepath.Join(dir, deploy.UnitName)
		testenv.WriteFile(t, path, string(unit))
		cmd := exec.Command(analyze, "verify", "--user", path)
		// A user manager needs $XDG_RUNTIME_DIR to resolve RuntimeDirectory.
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+run, "HOME="+filepath.Join(dir, "home"), "SYSTEMD_LOG_COLOR=0")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, s := range []deploy.Service{service(bin), {Binary: bin, StateDir: filepath.Join(dir, "state")}} {
		f, err := deploy.Render(deploy.Linux, "/x", s)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := verify(f.Content); err != nil || out != "" {
			t.Errorf("systemd-analyze verify --user: %v\n%s\nunit:\n%s", err, out, f.Content)
		}
	}
	// The check can fail: a misspelt key is reported.
	f, _ := deploy.Render(deploy.Linux, "/x", service(bin))
	bad := bytes.Replace(f.Content, []byte("ProtectSystem="), []byte("ProtectSytem="), 1)
	if out, _ := verify(bad); !strings.Contains(out, "ProtectSytem") {
		t.Errorf("systemd-analyze verify accepted a unit with ProtectSytem=: %q", out)
	}

	// systemd-analyze security scores the unit's exposure (0 safe, 10
	// unsafe; a user unit is scored as if it ran as root): 9.2 before the
	// hardening, 6.1 now.
	path := filepath.Join(dir, deploy.UnitName)
	testenv.WriteFile(t, path, string(f.Content))
	cmd := exec.Command(analyze, "security", "--offline=true", "--user", "--no-pager", path)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+run, "HOME="+filepath.Join(dir, "home"), "SYSTEMD_LOG_COLOR=0")
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("systemd-analyze security --offline: %v\n%s", err, out)
	}
	if score, _ := strconv.ParseFloat(string(m[1]), 64); score > 6.5 {
		t.Errorf("exposure %s, want at most 6.5:\n%s", m[1], out)
	}
	t.Logf("systemd-analyze security: exposure %s", m[1])
}

// TestUnitShowsTheUsersFiles: the unit hides none of the user's files
// from their own broker (PrivateTmp= hid /tmp worktrees), and /tmp, where
// worktrees live, is writable under ProtectSystem=strict.
func TestUnitShowsTheUsersFiles(t *testing.T) {
	f, err := deploy.Render(deploy.Linux, "/x", service("/usr/local/bin/mcpx"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(f.Content)) {
		key, _, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch key {
		case "PrivateTmp", "ProtectHome", "InaccessiblePaths", "TemporaryFileSystem", "PrivateDevices":
			t.Errorf("the unit sets %s, which hides the user's files or devices from their broker: %s", key, line)
		case "ReadWritePaths":
			if !strings.Contains(line, " /tmp ") {
				t.Errorf("ReadWritePaths does not make /tmp writable: %s", line)
			}
		}
	}
}

// TestPlistValid checks the launchd agent against Apple's plist DTD
// (testdata/PropertyList-1.0.dtd) with xmllint.
func TestPlistValid(t *testing.T) {
	xmllint := testenv.Program(t, "xmllint", "apt-get install -y libxml2-utils")
	dir := t.TempDir()
	check := func(content []byte) (string, error) {
		path := filepath.Join(dir, deploy.Label+".plist")
		testenv.WriteFile(t, path, string(content))
		out, err := exec.Command(xmllint, "--noout", "--nonet", "--dtdvalid", filepath.Join("testdata", "PropertyList-1.0.dtd"), path).CombinedOutput()
		return string(out), err
	}
	s := service("/usr/local/bin/mcpx")
	s.Config = `/home/ann/a&b <c>.json` // must be escaped
	for _, s := range []deploy.Service{s, {Binary: "/b/mcpx", StateDir: "/s"}} {
		f, err := deploy.Render(deploy.Darwin, "/x", s)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := check(f.Content); err != nil {
			t.Errorf("xmllint --dtdvalid: %v\n%s\n%s", err, out, f.Content)
		}
	}
	// The check can fail: a <key> without a value is invalid.
	f, _ := deploy.Render(deploy.Darwin, "/x", s)
	bad := bytes.Replace(f.Content, []byte("<true/>"), nil, 1)
	if _, err := check(bad); err == nil {
		t.Error("xmllint accepted a dict with a key and no value")
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func actions(rs []deploy.Result) []deploy.Action {
	var a []deploy.Action
	for _, r := range rs {
		a = append(a, r.Action)
	}
	return a
}

func install(t *testing.T, state string, parts []deploy.Part, dry bool) []deploy.Result {
	t.Helper()
	rec, err := deploy.LoadRecords(state)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rec.Install(parts, dry)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func uninstall(t *testing.T, state string, parts []deploy.Part) []deploy.Result {
	t.Helper()
	rec, err := deploy.LoadRecords(state)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rec.Uninstall(parts, false)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestServiceFileLifecycle: install, no-op reinstall, update of our own
// file, refusal over a user's edit (with the diff), uninstall.
func TestServiceFileLifecycle(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	path := deploy.ServiceFile(deploy.Linux, filepath.Join(dir, "home"), "")
	part := func(s deploy.Service) []deploy.Part {
		p, err := deploy.ServicePart(deploy.Linux, path, s)
		if err != nil {
			t.Fatal(err)
		}
		return []deploy.Part{p}
	}
	v1 := deploy.Service{Binary: "/opt/mcpx/bin/mcpx", StateDir: state}
	if got := actions(install(t, state, part(v1), true)); got[0] != deploy.Create {
		t.Fatalf("dry run: %v, want create", got)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a dry run wrote the unit")
	}
	install(t, state, part(v1), false)
	first := read(t, path)
	if got := actions(install(t, state, part(v1), false)); got[0] != deploy.Unchanged {
		t.Fatalf("second install: %v, want unchanged", got)
	}
	v2 := v1
	v2.Binary = "/usr/bin/mcpx" // an upgrade moved the binary: our file, rewritten
	if got := actions(install(t, state, part(v2), false)); got[0] != deploy.Update {
		t.Fatalf("install of a changed service: %v, want update", got)
	}
	if read(t, path) == first {
		t.Fatal("the update left the file as it was")
	}
	edited := strings.Replace(read(t, path), "RestartSec=2s", "RestartSec=30s", 1)
	testenv.WriteFile(t, path, edited)
	rs := install(t, state, part(v1), false)
	if rs[0].Action != deploy.Edited || !strings.Contains(rs[0].Diff, "+ RestartSec=30s") || !strings.Contains(rs[0].Diff, "- RestartSec=2s") {
		t.Fatalf("install over an edited unit: %v, diff:\n%s", rs[0].Action, rs[0].Diff)
	}
	if read(t, path) != edited {
		t.Fatal("install overwrote the user's edit")
	}
	if got := actions(uninstall(t, state, part(v2))); got[0] != deploy.Edited {
		t.Fatalf("uninstall of an edited unit: %v, want edited", got)
	}
	testenv.WriteFile(t, path, strings.Replace(edited, "RestartSec=30s", "RestartSec=2s", 1)) // edit undone
	if got := actions(uninstall(t, state, part(v2))); got[0] != deploy.Remove {
		t.Fatalf("uninstall: %v, want remove", got)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("uninstall left the unit")
	}
	if got := actions(uninstall(t, state, part(v2))); got[0] != deploy.Absent {
		t.Fatalf("second uninstall: %v, want absent", got)
	}
}

// TestPreexistingFileIsNotOurs: a unit mcpx never wrote is the user's.
func TestPreexistingFileIsNotOurs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpx.service")
	testenv.WriteFile(t, path, "[Service]\nExecStart=/my/own/mcpx serve\n")
	p, _ := deploy.ServicePart(deploy.Linux, path, deploy.Service{Binary: "/b/mcpx", StateDir: "/s"})
	rs := install(t, filepath.Join(dir, "state"), []deploy.Part{p}, false)
	if rs[0].Action != deploy.Edited || !strings.Contains(rs[0].Diff, "+ ExecStart=/my/own/mcpx serve") {
		t.Fatalf("install over a foreign unit: %v\n%s", rs[0].Action, rs[0].Diff)
	}
}

// TestInstructionsOnce: the section goes after the user's text, once, however
// often install runs; uninstall leaves the user's text.
func TestInstructionsOnce(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	path := filepath.Join(dir, "CLAUDE.md")
	mine := "# My rules\n\nAlways write tests.\n"
	testenv.WriteFile(t, path, mine)
	parts := []deploy.Part{deploy.Instructions(path, "Session.")}
	for i := range 3 {
		want := deploy.Create
		if i > 0 {
			want = deploy.Unchanged
		}
		if got := actions(install(t, state, parts, false)); got[0] != want {
			t.Fatalf("install %d: %v, want %v", i+1, got, want)
		}
	}
	got := read(t, path)
	if n := strings.Count(got, "<!-- mcpx:begin -->"); n != 1 {
		t.Fatalf("%d sections after three installs:\n%s", n, got)
	}
	if !strings.HasPrefix(got, mine+"\n<!-- mcpx:begin -->") {
		t.Fatalf("the user's text was not kept first:\n%s", got)
	}
	// The user adds a line after the section: still our section, unchanged.
	testenv.WriteFile(t, path, got+"\nMore of mine.\n")
	if got := actions(install(t, state, parts, false)); got[0] != deploy.Unchanged {
		t.Fatalf("install after the user's own addition: %v", got)
	}
	// An edit inside the section is the user's.
	inside := strings.Replace(read(t, path), "one go;", "one go, always;", 1)
	testenv.WriteFile(t, path, inside)
	if rs := install(t, state, parts, false); rs[0].Action != deploy.Edited || !strings.Contains(rs[0].Diff, "always") {
		t.Fatalf("install over an edited section: %v\n%s", rs[0].Action, rs[0].Diff)
	}
	testenv.WriteFile(t, path, strings.Replace(inside, "one go, always;", "one go;", 1))
	uninstall(t, state, parts)
	if got := read(t, path); got != mine+"\nMore of mine.\n" {
		t.Fatalf("after uninstall:\n%q", got)
	}
	// Two sections (pasted by hand) are an error naming the fix.
	testenv.WriteFile(t, path, deploy.InstructionsText("Session.")+deploy.InstructionsText("Session."))
	rec, _ := deploy.LoadRecords(state)
	if _, err := rec.Install(parts, false); err == nil || !strings.Contains(err.Error(), "two mcpx sections") {
		t.Fatalf("install into a file with two sections: %v", err)
	}
}

// TestHookMerge: the SessionStart hook joins the user's settings and hooks,
// once; uninstall takes only ours out.
func TestHookMerge(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	path := filepath.Join(dir, "settings.json")
	testenv.WriteFile(t, path, `{"model": "opus", "cleanupPeriodDays": 30,
  "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}}`)
	parts := []deploy.Part{deploy.SessionStartHook(path, "/opt/my bin/mcpx", "claude")}
	install(t, state, parts, false)
	if got := actions(install(t, state, parts, false)); got[0] != deploy.Unchanged {
		t.Fatalf("second install: %v", got)
	}
	var doc struct {
		Model string `json:"model"`
		Days  int    `json:"cleanupPeriodDays"`
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct{ Type, Command string }
		}
	}
	if err := json.Unmarshal([]byte(read(t, path)), &doc); err != nil {
		t.Fatal(err)
	}
	ss := doc.Hooks["SessionStart"]
	if doc.Model != "opus" || doc.Days != 30 || len(doc.Hooks["Stop"]) != 1 || len(ss) != 2 ||
		ss[0].Hooks[0].Command != "echo hi" || ss[1].Hooks[0].Command != `'/opt/my bin/mcpx' hook claude` {
		t.Fatalf("merged settings: %+v", doc)
	}
	uninstall(t, state, parts)
	if err := json.Unmarshal([]byte(read(t, path)), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Hooks["SessionStart"]) != 1 || doc.Hooks["SessionStart"][0].Hooks[0].Command != "echo hi" || doc.Model != "opus" {
		t.Fatalf("after uninstall: %+v", doc)
	}
	testenv.WriteFile(t, path, `{"hooks": [1]}`)
	rec, _ := deploy.LoadRecords(state)
	if _, err := rec.Install(parts, false); err == nil || !strings.Contains(err.Error(), `"hooks" is not an object`) {
		t.Fatalf("install into a malformed settings file: %v", err)
	}
}

// TestOpencodePlugin loads the plugin in node and calls its shell.env hook
// as opencode does: the shell gets the session, and the parent when
// opencode runs inside an mcpx session.
func TestOpencodePlugin(t *testing.T) {
	node := testenv.Node(t)
	dir := t.TempDir()
	h, _ := deploy.LookupHarness("opencode")
	parts := h.Parts(deploy.Env{Home: dir, Getenv: func(string) string { return "" }, Binary: "/b/mcpx"})
	plugin := filepath.Join(dir, "mcpx.mjs")
	testenv.WriteFile(t, plugin, parts[1].Want)
	script := `const { McpxSession } = await import(process.argv[1]);
const hooks = await McpxSession({});
const output = { env: {} };
await hooks["shell.env"]({ cwd: "/", sessionID: "ses_abc" }, output);
console.log(JSON.stringify(output.env));`
	for _, tc := range []struct{ parent, want string }{
		{"", `{"MCPX_SESSION_ID":"ses_abc"}`},
		{"outer", `{"MCPX_SESSION_ID":"ses_abc","MCPX_PARENT_SESSION_ID":"outer"}`},
	} {
		cmd := exec.Command(node, "--input-type=module", "-e", script, plugin)
		cmd.Env = append(os.Environ(), "MCPX_SESSION_ID="+tc.parent)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != tc.want {
			t.Errorf("parent %q: %v %s, want %s", tc.parent, err, out, tc.want)
		}
	}
}
