// Package testenv finds the external programs mcpx's tests run for real:
// node and the pinned npm reference servers, gopls, git. A test asks for what
// it needs and gets an absolute path, or is skipped with the command that
// installs the missing piece:
//
//	node := testenv.Node(t)
//	bin := testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything")
//	cfg := &config.Server{Command: node, Args: []string{bin}}
//
// With MCPX_REQUIRE_DEPS=1 in the environment (.ci/run sets it) a missing
// dependency fails the test instead: CI must never pass by skipping.
package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// RequireDepsEnv names the environment variable that turns skips for missing
// dependencies into failures.
const RequireDepsEnv = "MCPX_REQUIRE_DEPS"

// GoplsVersion is the gopls the tests are written against.
const GoplsVersion = "v0.23.0"

// Install commands, quoted in skip messages. They run from the repository root.
const (
	installNPM   = "npm ci --prefix testdata/npm"
	installGopls = `cd "$(mktemp -d)" && GOFLAGS=-mod=mod go install golang.org/x/tools/gopls@` + GoplsVersion
	installGit   = "apt-get install -y git"
	installNode  = "apt-get install -y nodejs npm (Node.js 20 or newer)"
)

// minNodeMajor is the oldest Node.js the pinned npm packages run on.
const minNodeMajor = 20

// missing skips t, or fails it under MCPX_REQUIRE_DEPS=1, saying what is
// missing and how to install it.
func missing(t testing.TB, what, install string) {
	t.Helper()
	msg := fmt.Sprintf("%s; install it with: %s", what, install)
	if os.Getenv(RequireDepsEnv) == "1" {
		t.Fatalf("%s (%s=1: missing test dependencies are failures)", msg, RequireDepsEnv)
		return // unreachable with a real testing.TB
	}
	t.Skip(msg)
}

var repoRoot = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod in %s or any parent", dir)
		}
		d = parent
	}
})

// RepoRoot returns the module's root directory: the nearest parent of the
// test's working directory (its package directory) holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("finding the repository root: %v", err)
	}
	return root
}

type found struct {
	path string
	err  string // why it is unusable; "" = usable
}

var node = sync.OnceValue(func() found {
	path, err := exec.LookPath("node")
	if err != nil {
		return found{err: "node is not on PATH"}
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return found{err: fmt.Sprintf("%s --version: %v", path, err)}
	}
	v := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < minNodeMajor {
		return found{err: fmt.Sprintf("%s is Node.js %s; the test servers need v%d or newer", path, v, minNodeMajor)}
	}
	return found{path: path}
})

// Node returns the absolute path of node (v20 or newer).
func Node(t testing.TB) string {
	t.Helper()
	n := node()
	if n.err != "" {
		missing(t, n.err, installNode)
	}
	return n.path
}

// NPMPackageBin returns the absolute path of the bin script of pkg as
// installed under testdata/npm/node_modules. Run it as `node <path>`, never
// through npx: tests must not reach the registry. The installed version must
// be the one package-lock.json pins.
func NPMPackageBin(t testing.TB, pkg string) string {
	t.Helper()
	prefix := filepath.Join(RepoRoot(t), "testdata", "npm")
	bin, err := npmBin(prefix, pkg, "")
	if err != nil {
		missing(t, err.Error(), installNPM)
	}
	return bin
}

// NPMPackageBinNamed is NPMPackageBin for a package that declares several
// bin scripts: it returns the one called name ("redocly" of @redocly/cli).
func NPMPackageBinNamed(t testing.TB, pkg, name string) string {
	t.Helper()
	prefix := filepath.Join(RepoRoot(t), "testdata", "npm")
	bin, err := npmBin(prefix, pkg, name)
	if err != nil {
		missing(t, err.Error(), installNPM)
	}
	return bin
}

// NPMPrefixBin is NPMPackageBinNamed for a package installed under
// another npm prefix of testdata (dir, relative to it), with its own
// lockfile; name "" = the package's only bin script.
func NPMPrefixBin(t testing.TB, dir, pkg, name string) string {
	t.Helper()
	prefix := filepath.Join(RepoRoot(t), "testdata", filepath.FromSlash(dir))
	bin, err := npmBin(prefix, pkg, name)
	if err != nil {
		missing(t, err.Error(), "npm ci --prefix testdata/"+dir)
	}
	return bin
}

// npmBin finds pkg's bin script (the one called name; "" = its only one)
// under prefix/node_modules and checks the installed version against
// prefix/package-lock.json.
func npmBin(prefix, pkg, name string) (string, error) {
	lock, err := os.ReadFile(filepath.Join(prefix, "package-lock.json"))
	if err != nil {
		return "", fmt.Errorf("reading the lockfile: %w", err)
	}
	var l struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(lock, &l); err != nil {
		return "", fmt.Errorf("parsing %s/package-lock.json: %w", prefix, err)
	}
	pinned, ok := l.Packages["node_modules/"+pkg]
	if !ok {
		return "", fmt.Errorf("%s is not in %s/package-lock.json: add it to package.json and run npm install --prefix testdata/npm", pkg, prefix)
	}
	dir := filepath.Join(prefix, "node_modules", filepath.FromSlash(pkg))
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", fmt.Errorf("npm package %s is not installed under %s", pkg, prefix)
	}
	var m struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("parsing %s/package.json: %w", dir, err)
	}
	if m.Version != pinned.Version {
		return "", fmt.Errorf("npm package %s is %s under %s, the lockfile pins %s", pkg, m.Version, prefix, pinned.Version)
	}
	rel, err := binEntry(pkg, m.Bin)
	if name != "" {
		var bins map[string]string
		json.Unmarshal(m.Bin, &bins) //nolint:errcheck // a string bin has no names: not found below
		if rel, err = bins[name], nil; rel == "" {
			err = fmt.Errorf("npm package %s declares no bin script %q", pkg, name)
		}
	}
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("npm package %s: bin script %s is missing", pkg, bin)
	}
	return bin, nil
}

// binEntry picks the bin script from package.json's "bin": a string, or an
// object with exactly one entry.
func binEntry(pkg string, raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil || len(m) == 0 {
		return "", fmt.Errorf("npm package %s declares no bin script", pkg)
	}
	if len(m) > 1 {
		return "", fmt.Errorf("npm package %s declares %d bin scripts; testenv expects one", pkg, len(m))
	}
	for _, v := range m {
		s = v
	}
	return s, nil
}

var gopls = sync.OnceValue(func() found {
	var candidates []string
	if p, err := exec.LookPath("gopls"); err == nil {
		candidates = append(candidates, p)
	}
	if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) > 0 && lines[0] != "" {
			candidates = append(candidates, filepath.Join(lines[0], "gopls"))
		}
		if len(lines) > 1 {
			for _, p := range filepath.SplitList(lines[1]) {
				candidates = append(candidates, filepath.Join(p, "bin", "gopls"))
			}
		}
	}
	why := "gopls is not on PATH nor in $(go env GOPATH)/bin"
	for _, p := range candidates {
		out, err := exec.Command(p, "version").Output()
		if err != nil {
			continue
		}
		if v := strings.Fields(string(out)); len(v) >= 2 && v[1] == GoplsVersion {
			return found{path: p}
		}
		why = fmt.Sprintf("%s is %s; the tests need gopls %s", p, strings.TrimSpace(string(out)), GoplsVersion)
	}
	return found{err: why}
})

// Gopls returns the absolute path of gopls v0.23.0 (PATH, then GOBIN, then
// GOPATH/bin). Its MCP server runs over stdio as `gopls mcp`.
func Gopls(t testing.TB) string {
	t.Helper()
	g := gopls()
	if g.err != "" {
		missing(t, g.err, installGopls)
	}
	return g.path
}

var git = sync.OnceValue(func() found {
	path, err := exec.LookPath("git")
	if err != nil {
		return found{err: "git is not on PATH"}
	}
	return found{path: path}
})

// Git returns the absolute path of git.
func Git(t testing.TB) string {
	t.Helper()
	g := git()
	if g.err != "" {
		missing(t, g.err, installGit)
	}
	return g.path
}

// Program returns the absolute path of the program called name, skipping t
// (failing it under MCPX_REQUIRE_DEPS=1) when it is not on PATH; install is
// the command that installs it, e.g. "apt-get install -y systemd".
func Program(t testing.TB, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		missing(t, name+" is not on PATH", install)
	}
	return path
}

// installChromium installs the browser the dashboard tests drive.
const installChromium = "apt-get install -y chromium"

// Chromium returns the path of Debian's chromium, which the dashboard's
// browser tests drive through playwright-core (executablePath): playwright's
// own browser downloads are not used.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	missing(t, "chromium is not installed", installChromium)
	return ""
}
