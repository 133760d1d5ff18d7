package pool

import (
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
// names in inherit), then the server's own env (KEY=VALUE, already
// substituted), then extra. Later entries win, as exec.Cmd keeps the last
// value of a duplicated name.
func childEnv(base []string, inheritAll bool, inherit []string, env []string, extra ...string) []string {
	out := make([]string, 0, len(allowedEnv)+len(env)+len(extra)+4)
	for _, kv := range base {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if inheritAll || envAllowed(name) || slices.Contains(inherit, name) {
			out = append(out, kv)
		}
	}
	out = append(out, env...)
	return append(out, extra...)
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
