package scripts

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The bounds of the dependency cache by default (Deps.MaxSets,
// Deps.MaxBytes): after an install, the sets beyond the MaxDepSets most
// recently used, or beyond MaxDepBytes together, are removed, least
// recently used first (never the one just installed).
const (
	MaxDepSets     = 16
	MaxDepBytes    = 1 << 30
	InstallTimeout = 5 * time.Minute
)

// depMarker is the file an installed set's directory holds once its
// install has finished; its mtime is the set's last use.
const depMarker = ".mcpx-deps.json"

type depRecord struct {
	Packages map[string]string `json:"packages"`
	Registry string            `json:"registry,omitempty"`
	Bytes    int64             `json:"bytes"`
}

// install returns the directory of the set want (name → range), installing
// it with npm when no run has: into a directory of its own, renamed into
// place when complete, so that a run never sees half a set and two runs
// installing one set both end with it.
func (d *Deps) install(want map[string]string) (string, error) {
	names := slices.Sorted(maps.Keys(want))
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s@%s\n", n, want[n])
	}
	fmt.Fprintf(h, "registry %s\n", d.Registry)
	dir := filepath.Join(d.Cache, hex.EncodeToString(h.Sum(nil))[:20])
	marker := filepath.Join(dir, depMarker)
	if _, err := os.Stat(marker); err == nil {
		now := time.Now()
		os.Chtimes(marker, now, now) //nolint:errcheck // the use time only orders pruning
		return dir, nil
	}
	specs := make([]string, len(names))
	for i, n := range names {
		specs[i] = n + "@" + cmp.Or(want[n], "latest")
	}
	if err := os.MkdirAll(d.Cache, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(d.Cache, ".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	pj, _ := json.Marshal(map[string]any{"name": "mcpx-script-deps", "private": true, "dependencies": want})
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), pj, 0o600); err != nil {
		return "", err
	}
	if d.Log != nil {
		fmt.Fprintf(d.Log, "mcpx: installing npm packages %s (once: the set is kept in %s)\n", strings.Join(specs, " "), dir)
	}
	if err := d.npmInstall(tmp, specs); err != nil {
		return "", err
	}
	size := dirBytes(tmp)
	rec, _ := json.Marshal(depRecord{Packages: want, Registry: d.Registry, Bytes: size})
	if err := os.WriteFile(filepath.Join(tmp, depMarker), rec, 0o600); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(marker); serr != nil { // not another run's finished install
			return "", fmt.Errorf("keeping the npm packages %s in %s: %w", strings.Join(specs, " "), dir, err)
		}
	}
	d.prune(dir)
	return dir, nil
}

// npmInstall runs npm install in dir, bounded by InstallTimeout; an error
// names the packages and says what to do.
func (d *Deps) npmInstall(dir string, specs []string) error {
	ctx := d.Context
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, InstallTimeout)
	defer cancel()
	npm := cmp.Or(d.NPM, "npm")
	args := []string{"install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-package-lock", "--loglevel=error", "--fetch-retries=0"}
	if d.Registry != "" {
		args = append(args, "--registry="+d.Registry)
	}
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil {
		return nil
	}
	pkgs := strings.Join(specs, " ")
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("installing the npm packages %s: npm is not on PATH; install Node.js's npm, or install the packages into the project (npm install) with \"host\" in script.deps.from", pkgs)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("installing the npm packages %s: npm did not finish in %s", pkgs, InstallTimeout)
	}
	return npmError(out.String(), pkgs, d.Registry)
}

var (
	npmCode     = regexp.MustCompile(`(?m)^npm (?:error|ERR!) code (\S+)`)
	npmNotFound = regexp.MustCompile(`'(\S+)' (?:is not in (?:this|the npm) registry|could not be found)`)
	npmURL      = regexp.MustCompile(`request to (\S+) failed`)
)

// npmError is what an npm install that failed says, in mcpx's words.
func npmError(out, pkgs, registry string) error {
	reg := "the npm registry (npm config get registry)"
	if registry != "" {
		reg = "the npm registry " + registry + " (script.deps.registry)"
	}
	code := ""
	if m := npmCode.FindStringSubmatch(out); m != nil {
		code = m[1]
	}
	switch code {
	case "E404":
		what := pkgs
		if m := npmNotFound.FindStringSubmatch(out); m != nil {
			what = m[1]
		}
		return fmt.Errorf("npm package %s is not in %s: check the name and version in the script's import or its manifest", what, reg)
	case "ECONNREFUSED", "ENOTFOUND", "ETIMEDOUT", "EAI_AGAIN", "ECONNRESET", "ENETUNREACH", "EHOSTUNREACH":
		if m := npmURL.FindStringSubmatch(out); m != nil {
			reg += ", at " + m[1] + ","
		}
		return fmt.Errorf("installing the npm packages %s: %s cannot be reached (%s; offline?): connect to it, point script.deps.registry at one that is reachable, or install the packages into the project (npm install) with \"host\" in script.deps.from", pkgs, reg, code)
	case "ETARGET":
		return fmt.Errorf("installing the npm packages %s: %s has no version matching the range asked for: check the version in the import or manifest", pkgs, reg)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return fmt.Errorf("installing the npm packages %s: npm install failed: %s", pkgs, strings.Join(lines[max(len(lines)-5, 0):], "; "))
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error { //nolint:errcheck // a size for pruning only
		if err == nil && e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// prune removes the sets beyond MaxDepSets or MaxDepBytes, least recently
// used first, keeping keep; and installs left half-done over an hour ago.
func (d *Deps) prune(keep string) {
	ents, err := os.ReadDir(d.Cache)
	if err != nil {
		return
	}
	type set struct {
		dir  string
		used time.Time
		size int64
	}
	var sets []set
	for _, e := range ents {
		p := filepath.Join(d.Cache, e.Name())
		if strings.HasPrefix(e.Name(), ".tmp-") {
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Hour {
				os.RemoveAll(p)
			}
			continue
		}
		fi, err := os.Stat(filepath.Join(p, depMarker))
		if err != nil || p == keep {
			continue
		}
		var rec depRecord
		if b, err := os.ReadFile(filepath.Join(p, depMarker)); err == nil {
			json.Unmarshal(b, &rec) //nolint:errcheck // a set of unknown size counts 0
		}
		sets = append(sets, set{p, fi.ModTime(), rec.Bytes})
	}
	slices.SortFunc(sets, func(a, b set) int { return b.used.Compare(a.used) })
	total := dirBytes(keep)
	maxSets, maxBytes := cmp.Or(d.MaxSets, MaxDepSets), cmp.Or(d.MaxBytes, MaxDepBytes)
	for i, s := range sets {
		total += s.size
		if i+1 >= maxSets || total > maxBytes {
			os.RemoveAll(s.dir)
		}
	}
}
