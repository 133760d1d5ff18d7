package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skip and Fatalf instead of stopping.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Skip(args ...any)                  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestMissingSkipsOrFails(t *testing.T) {
	t.Setenv(RequireDepsEnv, "")
	r := &recorder{TB: t}
	missing(r, "gopls is gone", installGopls)
	if r.failed != "" || !strings.Contains(r.skipped, "gopls is gone") || !strings.Contains(r.skipped, "go install golang.org/x/tools/gopls@v0.23.0") {
		t.Errorf("without %s: skipped %q, failed %q", RequireDepsEnv, r.skipped, r.failed)
	}

	t.Setenv(RequireDepsEnv, "1")
	r = &recorder{TB: t}
	missing(r, "node is gone", installNode)
	if r.skipped != "" || !strings.Contains(r.failed, "node is gone") || !strings.Contains(r.failed, RequireDepsEnv) {
		t.Errorf("with %s=1: skipped %q, failed %q", RequireDepsEnv, r.skipped, r.failed)
	}
}

func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("RepoRoot = %s: %v", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testing", "testenv")); err != nil {
		t.Fatalf("RepoRoot = %s is not this module's root: %v", root, err)
	}
}

func TestNPMBin(t *testing.T) {
	lock := `{"packages":{"":{},"node_modules/@scope/one":{"version":"1.2.3"},"node_modules/plain":{"version":"2.0.0"}}}`
	tests := []struct {
		name    string
		files   map[string]string
		pkg     string
		want    string // bin path relative to the prefix
		wantErr string
	}{
		{
			name:  "object bin",
			files: map[string]string{"node_modules/@scope/one/package.json": `{"version":"1.2.3","bin":{"one":"dist/index.js"}}`, "node_modules/@scope/one/dist/index.js": ""},
			pkg:   "@scope/one",
			want:  "node_modules/@scope/one/dist/index.js",
		},
		{
			name:  "string bin",
			files: map[string]string{"node_modules/plain/package.json": `{"version":"2.0.0","bin":"cli.js"}`, "node_modules/plain/cli.js": ""},
			pkg:   "plain",
			want:  "node_modules/plain/cli.js",
		},
		{name: "not installed", pkg: "plain", wantErr: "not installed"},
		{name: "not in lockfile", pkg: "other", wantErr: "not in"},
		{
			name:    "stale install",
			files:   map[string]string{"node_modules/plain/package.json": `{"version":"1.9.0","bin":"cli.js"}`, "node_modules/plain/cli.js": ""},
			pkg:     "plain",
			wantErr: "lockfile pins 2.0.0",
		},
		{
			name:    "bin script missing",
			files:   map[string]string{"node_modules/plain/package.json": `{"version":"2.0.0","bin":"cli.js"}`},
			pkg:     "plain",
			wantErr: "missing",
		},
		{
			name:    "no bin",
			files:   map[string]string{"node_modules/plain/package.json": `{"version":"2.0.0"}`},
			pkg:     "plain",
			wantErr: "no bin",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := t.TempDir()
			WriteFiles(t, prefix, tt.files)
			WriteFiles(t, prefix, map[string]string{"package-lock.json": lock})
			got, err := npmBin(prefix, tt.pkg, "")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("npmBin(%s) = %q, %v; want error containing %q", tt.pkg, got, err, tt.wantErr)
				}
				return
			}
			if want := filepath.Join(prefix, filepath.FromSlash(tt.want)); err != nil || got != want {
				t.Fatalf("npmBin(%s) = %q, %v; want %q", tt.pkg, got, err, want)
			}
		})
	}
}

// The pinned packages are what the broker's real-server tests run.
func TestPinnedPackagesInstalled(t *testing.T) {
	Node(t)
	for _, pkg := range []string{"@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-filesystem"} {
		bin := NPMPackageBin(t, pkg)
		if !filepath.IsAbs(bin) {
			t.Errorf("NPMPackageBin(%s) = %q, not absolute", pkg, bin)
		}
	}
}

func TestWorktrees(t *testing.T) {
	dir := t.TempDir()
	paths := Worktrees(t, filepath.Join(dir, "repo"), map[string]string{"a/b.txt": "x\n"}, "wt1", "wt2")
	if len(paths) != 3 {
		t.Fatalf("Worktrees returned %d paths, want 3", len(paths))
	}
	for _, p := range paths {
		if got := RunGit(t, p, "rev-parse", "--show-toplevel"); got != p {
			t.Errorf("toplevel of %s = %s", p, got)
		}
		if _, err := os.Stat(filepath.Join(p, "a", "b.txt")); err != nil {
			t.Error(err)
		}
	}
	if got := RunGit(t, paths[1], "log", "-1", "--format=%an <%ae>"); got != "mcpx test <test@mcpx.invalid>" {
		t.Errorf("commit author = %q, want the hermetic identity", got)
	}
}
