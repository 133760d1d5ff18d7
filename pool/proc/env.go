package proc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// allowedEnv are the daemon's variables every child gets, as the
// official SDKs' stdio transports pass them (HOME, LOGNAME, PATH, SHELL,
// TERM, USER), plus the locale (LANG, LC_*) and TMPDIR. Everything else in
// the daemon's environment (its tokens, cloud credentials, MCPX_*) stays
// out unless Env.Inherit asks for it.
var allowedEnv = []string{"HOME", "LANG", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "USER"}

// allowedEnvPrefixes are the allowed families of variables.
var allowedEnvPrefixes = []string{"LC_"}

// Env says what a child's environment is made of beside the daemon's
// allowlisted variables. The zero value is the allowlist alone.
type Env struct {
	Inherit    []string // names of the daemon's variables passed beyond the allowlist
	InheritAll bool     // pass the daemon's whole environment
	// Dev are the KEY=VALUE of an execution environment (a devShell's
	// variables): its PATH goes before the daemon's, as in `nix develop`.
	Dev []string
	// Isolated: Dev's PATH replaces the daemon's, which no child gets (an
	// isolated environment's programs and nothing of the host's).
	Isolated bool
	Set      []string // KEY=VALUE, the server's own, set over the rest
}

// Environ builds a child's environment: the variables of base (the
// daemon's) that are allowed (every one with InheritAll; else the
// allowlist, testEnv and the names in Inherit), then e.Dev, then e.Set,
// then extra. Later entries win, as exec.Cmd keeps the last value of a
// duplicated name.
func Environ(base []string, e Env, extra ...string) []string {
	out := make([]string, 0, len(allowedEnv)+len(e.Dev)+len(e.Set)+len(extra)+4)
	for _, kv := range base {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if e.Isolated && name == "PATH" {
			continue
		}
		if e.InheritAll || envAllowed(name) || slices.Contains(e.Inherit, name) {
			out = append(out, kv)
		}
	}
	hostPath, hasPath := lookupEnv(out, "PATH")
	for _, kv := range e.Dev {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok && hasPath && hostPath != "" {
			kv = "PATH=" + v + ":" + hostPath
		}
		out = append(out, kv)
	}
	out = append(out, e.Set...)
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

// PathOf is the PATH env gives: its last entry, as exec keeps the last
// of a duplicated name.
func PathOf(env []string) string {
	path, _ := lookupEnv(env, "PATH")
	return path
}

// LookPath finds a command with no slash in the directories of env's PATH
// (a child's), as a shell would: "" if none holds an executable file.
func LookPath(name string, env []string) string {
	for _, dir := range filepath.SplitList(PathOf(env)) {
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
