package confine_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

func TestFingerprint(t *testing.T) {
	a := &confine.Spec{Why: confine.WhyConfig, Read: []string{"/b", "/a"}, Write: []string{"/r"}, Network: sandbox.NetworkProxy, Allow: []string{"x.example", "y.example"}}
	same := &confine.Spec{Why: confine.WhyCaller, Read: []string{"/a", "/b", "/a"}, Write: []string{"/r"}, Network: sandbox.NetworkProxy, Allow: []string{"y.example", "x.example"}, Mode: sandbox.Enforce}
	if a.Fingerprint() != same.Fingerprint() {
		t.Errorf("order, repeats, why and the spelled-out mode changed the fingerprint")
	}
	for name, other := range map[string]*confine.Spec{
		"read":    {Read: []string{"/a"}, Write: []string{"/r"}, Network: sandbox.NetworkProxy, Allow: a.Allow},
		"write":   {Read: a.Read, Write: []string{"/r", "/s"}, Network: sandbox.NetworkProxy, Allow: a.Allow},
		"network": {Read: a.Read, Write: a.Write, Network: sandbox.NetworkAll},
		"allow":   {Read: a.Read, Write: a.Write, Network: sandbox.NetworkProxy, Allow: []string{"x.example"}},
		"mode":    {Read: a.Read, Write: a.Write, Network: sandbox.NetworkProxy, Allow: a.Allow, Mode: sandbox.BestEffort},
		"limits":  {Read: a.Read, Write: a.Write, Network: sandbox.NetworkProxy, Allow: a.Allow, Limits: sandbox.Limits{Memory: 1 << 30}},
	} {
		if other.Fingerprint() == a.Fingerprint() {
			t.Errorf("a different %s has the same fingerprint", name)
		}
	}
	var none *confine.Spec
	if none.Fingerprint() != "" {
		t.Errorf("an unconfined child's fingerprint is %q, want \"\" (its key unchanged)", none.Fingerprint())
	}
}

func TestPolicy(t *testing.T) {
	tmp := t.TempDir()
	s := &confine.Spec{Network: sandbox.NetworkProxy, Allow: []string{"api.example"}, Read: []string{"/opt/data", "${mcpx.tmpdir}/ro"},
		Write: []string{"/src/app", "${mcpx.tmpdir}/cache"}, Limits: confine.DefaultLimits}
	p := s.Policy(confine.Facts{
		TmpDir: tmp, Program: []string{"/srv/x"},
		Env:  []string{"LOG=debug", "HOME=/own/home"},
		Base: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "AWS_SECRET_ACCESS_KEY=s3cr3t", "SSH_AUTH_SOCK=/run/agent", "MCPX_TOKEN=t"},
	})
	for _, want := range []string{"/srv/x", "/opt/data", tmp + "/ro", "/usr"} {
		if !slices.Contains(p.Read, want) {
			t.Errorf("read %v lacks %s", p.Read, want)
		}
	}
	for _, want := range []string{"/src/app", tmp + "/cache", tmp, "/dev/null"} {
		if !slices.Contains(p.Write, want) {
			t.Errorf("write %v lacks %s", p.Write, want)
		}
	}
	env := strings.Join(p.Env, "\n")
	for _, want := range []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "TMPDIR=" + tmp, "LOG=debug", "HOME=/own/home",
		"HTTPS_PROXY=http://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128", "NO_PROXY=localhost,127.0.0.1,::1"} {
		if !slices.Contains(p.Env, want) {
			t.Errorf("env lacks %s:\n%s", want, env)
		}
	}
	for _, secret := range []string{"AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK", "MCPX_TOKEN"} {
		if strings.Contains(env, secret) {
			t.Errorf("the daemon's %s reached the child's environment:\n%s", secret, env)
		}
	}
	p.Env = append(p.Env, "MCPX_INSTANCE=m") // what package proc adds
	if err := p.Validate(); err != nil {
		t.Errorf("the finished policy is not valid: %v", err)
	}
	if p.Limits != confine.DefaultLimits || p.Network != sandbox.NetworkProxy {
		t.Errorf("limits %+v network %s, want the spec's", p.Limits, p.Network)
	}

	loop := &confine.Spec{Network: sandbox.NetworkLoopback, Ports: []uint16{5432}}
	lp := loop.Policy(confine.Facts{TmpDir: tmp, Ports: []uint16{9222}})
	if want := []uint16{5432, 9222}; !slices.Equal(lp.ConnectTCP, want) || !slices.Equal(lp.BindTCP, want) {
		t.Errorf("loopback ports: connect %v bind %v, want the spec's and the allocations' %v", lp.ConnectTCP, lp.BindTCP, want)
	}
	if strings.Contains(strings.Join(lp.Env, " "), "PROXY") {
		t.Errorf("a loopback child got proxy variables: %v", lp.Env)
	}
}

// TestProgramReads lays out the program kinds a confined child runs and
// checks what of each is readable, and that neither the home directory,
// a temporary directory nor / ever is.
func TestProgramReads(t *testing.T) {
	root := t.TempDir()
	home, tmp := filepath.Join(root, "home"), filepath.Join(root, "tmp")
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", tmp)
	file := func(rel string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	reg := "state/registry/npm/@scope/srv@1.0.0"
	regBin := file(reg + "/node_modules/@scope/srv/dist/index.js")
	file(reg + "/node_modules/dep/index.js")
	devEntry := file("home/src/proj/src/main.js")
	file("home/src/proj/package.json")
	loose := file("home/scripts/loose.js")
	py := file("opt/tool/server.py")
	gobin := file("opt/bin/gopls")
	link := filepath.Join(root, "opt/bin/x-server")
	if err := os.Symlink(regBin, link); err != nil {
		t.Fatal(err)
	}
	inHome := file("home/server")
	inTmp, scriptInTmp := file("tmp/server"), file("tmp/server.py")

	for _, c := range []struct {
		name      string
		exe       string
		args      []string
		want, not []string
	}{
		{"registry npm package", "/usr/bin/node", []string{"node", regBin, "--stdio"},
			[]string{"/usr/bin/node", filepath.Join(root, reg)}, []string{filepath.Join(root, "state"), home}},
		{"node entry in a project", "/usr/bin/node", []string{"node", "--inspect", devEntry},
			[]string{filepath.Join(root, "home/src/proj")}, []string{home}},
		{"node entry with no package", "/usr/bin/node", []string{"node", loose},
			[]string{filepath.Join(root, "home/scripts")}, []string{home}},
		{"relative script", "/usr/bin/python3", []string{"python3", "server.py"},
			[]string{filepath.Join(root, "opt/tool")}, nil},
		{"a binary", gobin, []string{"gopls", "mcp"}, []string{filepath.Join(root, "opt/bin")}, nil},
		{"a link into a package", link, []string{"x-server"}, []string{filepath.Join(root, reg), filepath.Join(root, "opt/bin")}, nil},
		{"a binary in the home directory", inHome, []string{"server"}, []string{inHome}, []string{home}},
		{"a binary in the temporary directory", inTmp, []string{"server"}, []string{inTmp}, []string{tmp}},
		{"a script in the temporary directory", "/usr/bin/python3", []string{"python3", scriptInTmp}, []string{scriptInTmp}, []string{tmp}},
	} {
		dir := ""
		if c.name == "relative script" {
			dir = filepath.Dir(py)
		}
		got := confine.ProgramReads(c.exe, c.args, dir)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: %v lacks %s", c.name, got, w)
			}
		}
		for _, n := range append(c.not, "/", root) {
			if slices.Contains(got, n) {
				t.Errorf("%s: %v holds %s", c.name, got, n)
			}
		}
	}
}

// TestGoToolchain: gopls and go read the toolchain's root and the module
// cache the go command would use, and are pointed at that cache and the
// go env file; other programs get nothing of it.
func TestGoToolchain(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "sdk", "go1.26")
	goBin := filepath.Join(root, "bin", "go")
	if err := os.MkdirAll(filepath.Dir(goBin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goBin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	pathDir := filepath.Join(dir, "bin")
	os.MkdirAll(pathDir, 0o755)
	if err := os.Symlink(goBin, filepath.Join(pathDir, "go")); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	envFile := filepath.Join(home, ".config", "go", "env")
	os.MkdirAll(filepath.Dir(envFile), 0o755)
	base := []string{"PATH=/nowhere:" + pathDir, "HOME=" + home}
	for _, c := range []struct {
		name      string
		exe       string
		env, base []string
		file      string // the go env file's contents; "" = none
		reads     []string
		vars      []string
	}{
		{"defaults from HOME", "/opt/gopls", nil, base, "",
			[]string{root, filepath.Join(home, "go", "pkg", "mod")}, []string{"GOMODCACHE=" + filepath.Join(home, "go", "pkg", "mod")}},
		{"GOPATH", "/usr/bin/go", nil, append(base, "GOPATH=/gp:/other"), "",
			[]string{root, "/gp/pkg/mod"}, []string{"GOMODCACHE=/gp/pkg/mod"}},
		{"the go env file", "/opt/gopls", nil, base, "GOMODCACHE=/from/file\nGOPRIVATE=x\n",
			[]string{root, "/from/file", envFile}, []string{"GOMODCACHE=/from/file", "GOENV=" + envFile}},
		{"the server's own over the daemon's and the file", "/opt/gopls", []string{"GOMODCACHE=/mine", "GOROOT=/goroot"}, append(base, "GOMODCACHE=/daemons"), "GOMODCACHE=/from/file\n",
			[]string{"/goroot", "/mine", envFile}, []string{"GOMODCACHE=/mine", "GOENV=" + envFile}},
		{"another program", "/usr/bin/node", nil, base, "", nil, nil},
	} {
		os.Remove(envFile)
		if c.file != "" {
			os.WriteFile(envFile, []byte(c.file), 0o600)
		}
		reads, vars := confine.GoToolchain(c.exe, c.env, c.base)
		if !slices.Equal(reads, c.reads) || !slices.Equal(vars, c.vars) {
			t.Errorf("%s: reads %v vars %v, want %v %v", c.name, reads, vars, c.reads, c.vars)
		}
	}
}

// BenchmarkFingerprint is what a confined caller's every call pays for its
// instance's key (pool's Target.key): a grant holder's default Spec with
// its root.
func BenchmarkFingerprint(b *testing.B) {
	s := &confine.Spec{Why: confine.WhyCaller, Write: []string{"/home/u/src/project"}, Network: sandbox.NetworkNone, Limits: confine.DefaultLimits}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Fingerprint()
	}
}
