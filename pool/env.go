package pool

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// allowedEnv are the daemon's variables every stdio child gets, as the
// official SDKs' stdio transports pass them (HOME, LOGNAME, PATH, SHELL,
// TERM, USER), plus the locale (LANG, LC_*) and TMPDIR. Everything else in
// the daemon's environment (its tokens, cloud credentials, MCPX_*) stays
// out unless the server's InheritEnv asks for it.
var allowedEnv = []string{"HOME", "LANG", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "USER"}

// allowedEnvPrefixes are the allowed families of variables.
var allowedEnvPrefixes = []string{"LC_"}

// childEnv builds a child's environment: the variables of base that are
// allowed (every one with inheritAll; else the allowlist, testEnv and the
// names in inherit), then those of its execution environment (devEnv, as
// Options.Resolve returned them: a devShell's variables, whose PATH goes
// before the host's, as in `nix develop`), then the server's own env
// (KEY=VALUE, already substituted), then extra. Later entries win, as
// exec.Cmd keeps the last value of a duplicated name.
func childEnv(base []string, inheritAll bool, inherit, devEnv, env []string, extra ...string) []string {
	out := make([]string, 0, len(allowedEnv)+len(devEnv)+len(env)+len(extra)+4)
	for _, kv := range base {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if inheritAll || envAllowed(name) || slices.Contains(inherit, name) {
			out = append(out, kv)
		}
	}
	hostPath, hasPath := lookupEnv(out, "PATH")
	for _, kv := range devEnv {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok && hasPath && hostPath != "" {
			kv = "PATH=" + v + ":" + hostPath
		}
		out = append(out, kv)
	}
	out = append(out, env...)
	return append(out, extra...)
}

// lookupEnv returns the value env gives name: its last entry.
func lookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// lookPathIn finds a command with no slash in the directories of path (a
// child's PATH), as a shell would: "" if none holds an executable file.
func lookPathIn(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}

func envAllowed(name string) bool {
	if slices.Contains(allowedEnv, name) || slices.Contains(testEnv, name) {
		return true
	}
	for _, p := range allowedEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
