package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"mcpx.dev/mcpx/internal/atomicfile"
)

// defaultNPMRegistry is npm's own registry: a package from it needs no
// --registry.
const defaultNPMRegistry = "https://registry.npmjs.org"

// NPMDir is where Add installs version of the npm package id:
// <state>/registry/npm/<id>@<version> (a scoped id makes two levels).
func NPMDir(stateDir, id, version string) string {
	return filepath.Join(stateDir, "registry", "npm", filepath.FromSlash(id)+"@"+version)
}

// installNPM installs p once into its NPMDir and returns the absolute path
// of its bin script; installed says whether npm ran (false: it was there).
func installNPM(ctx context.Context, npm, stateDir string, p *Package, log io.Writer) (bin string, installed bool, err error) {
	if err := checkNPMID(p.Identifier); err != nil {
		return "", false, err
	}
	dir := NPMDir(stateDir, p.Identifier, p.Version)
	if bin, err := npmBin(dir, p.Identifier, p.Version); err == nil {
		return bin, false, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("installing %s@%s: %w", p.Identifier, p.Version, err)
	}
	// A package.json of its own, so npm installs here and not into a
	// parent directory's project.
	if err := atomicfile.Write(filepath.Join(dir, "package.json"), []byte(`{"private": true}`+"\n"), 0o600); err != nil {
		return "", false, err
	}
	args := []string{"install", "--prefix", dir, "--no-audit", "--no-fund", "--save-exact", p.Identifier + "@" + p.Version}
	if u := strings.TrimRight(p.RegistryBaseURL, "/"); u != "" && u != defaultNPMRegistry {
		args = append(args, "--registry", u)
	}
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", false, fmt.Errorf("installing %s@%s: %s is not on PATH: it comes with Node.js (https://nodejs.org), which the server needs too", p.Identifier, p.Version, npm)
		}
		return "", false, fmt.Errorf("installing %s@%s: %s %s: %w (its output is above)", p.Identifier, p.Version, npm, strings.Join(args, " "), err)
	}
	bin, err = npmBin(dir, p.Identifier, p.Version)
	return bin, err == nil, err
}

// checkNPMID refuses an identifier that is not an npm package name (it
// becomes a directory below the state dir and an npm argument).
func checkNPMID(id string) error {
	name := strings.TrimPrefix(id, "@")
	scope, rest, scoped := strings.Cut(name, "/")
	ok := id != "" && !strings.HasPrefix(id, "-") && !strings.Contains(id, "..") && !strings.ContainsAny(id, `\: `)
	if scoped {
		ok = ok && strings.HasPrefix(id, "@") && scope != "" && rest != "" && !strings.Contains(rest, "/")
	} else {
		ok = ok && !strings.HasPrefix(id, "@")
	}
	if !ok {
		return fmt.Errorf("npm package %q is not an npm package name", id)
	}
	return nil
}

// npmBin is the bin script of package id installed under dir at version.
func npmBin(dir, id, version string) (string, error) {
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(id))
	data, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return "", err
	}
	var m struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("reading %s/package.json: %w", pkgDir, err)
	}
	if m.Version != version {
		return "", fmt.Errorf("%s under %s is version %s, not %s", id, dir, m.Version, version)
	}
	rel, err := binScript(id, m.Bin)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(pkgDir, filepath.FromSlash(rel))
	if !strings.HasPrefix(bin, pkgDir+string(filepath.Separator)) {
		return "", fmt.Errorf("npm package %s's bin %q leaves its directory", id, rel)
	}
	if fi, err := os.Stat(bin); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("npm package %s's bin script %s is missing", id, bin)
	}
	return bin, nil
}

// binScript picks the bin of package.json's "bin": a string, the only
// entry of an object, or the entry named as the package's last segment.
func binScript(id string, raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil || len(m) == 0 {
		return "", fmt.Errorf("npm package %s declares no bin script: mcpx runs an npm server's bin with node", id)
	}
	if len(m) == 1 {
		for _, v := range m {
			return v, nil
		}
	}
	if v, ok := m[id[strings.LastIndex(id, "/")+1:]]; ok {
		return v, nil
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return "", fmt.Errorf("npm package %s declares %d bin scripts (%s) and none is named as the package", id, len(m), strings.Join(names, ", "))
}
