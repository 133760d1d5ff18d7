package broker

import (
	"net/url"
	"strings"

	"mcpx.dev/mcpx/auth/rights"
)

// Caller is who is calling, as the API layer authenticated it.
type Caller struct {
	Name  string // login name, node name or "local:uid"
	Via   string // "unix", "tcp-loopback", "tailnet", "jwt"
	Uid   int    // unix callers
	Local bool   // same machine (unix socket): Mcpx-Pid is trusted
	// Owner is the daemon's own user (a unix-socket peer of its uid, or a
	// loopback TCP caller with the daemon's token): sees private detail
	// (commands, paths, a child's stderr), and its session ids are not
	// namespaced, so the CLI and a script of the same user share sessions.
	Owner bool
	// Rights are what the caller may use, where and how (package rights:
	// rules, each checked whole); the zero Rights allow nothing. The owner's
	// callers have rights.All. Admin (rights.Rights.Admin) may stop
	// instances and manage sessions; ProjectConfig lets the project files on
	// the caller's config chain (config.json found upward from its cwd,
	// below the user's config) define the servers it is served: they name
	// commands the daemon will run. The owner's always may. See
	// docs/project-config.md.
	Rights rights.Rights
	// Token is the jti of the signed token that admitted a "jwt" caller:
	// a token it mints lives only while this one does.
	Token string
}

// callerKey confines keys named by caller-chosen ids (sessions, leases) to
// the caller that chose them: two remote callers who send the same
// Mcpx-Session must not share a child or its state. Such a key names the
// caller by how it came and by its name, `session:@<via>:<name>/<id>`
// (the name path-escaped, so it holds no "/"): a token whose subject is
// "alice" and the tailnet login "alice" are two callers. The owner's
// callers (unix socket or token) are one user and share freely, under the
// id as sent; an owner's id that begins with "@" gets one more, so it can
// never be read as another caller's key. Directory keys are shared by
// design (the roots check guards them).
func callerKey(key string, c Caller) string {
	for _, p := range callerKeyPrefixes {
		rest, ok := strings.CutPrefix(key, p)
		if !ok {
			continue
		}
		if c.Owner {
			if strings.HasPrefix(rest, "@") {
				return p + "@" + rest
			}
			return key
		}
		return p + "@" + c.Via + ":" + url.PathEscape(c.Name) + "/" + rest
	}
	return key
}

// callerKeyPrefixes are the scope-key prefixes of caller-chosen ids.
var callerKeyPrefixes = []string{"session:", "psession:", "lease:"}

// OwnsKey reports whether key is one of c's own caller-chosen keys (a
// session, parent session or lease key callerKey made for c). Other keys —
// directory keys, global, pid: and call: — are nobody's in this sense.
func (c Caller) OwnsKey(key string) bool {
	for _, p := range callerKeyPrefixes {
		rest, ok := strings.CutPrefix(key, p)
		if !ok {
			continue
		}
		if c.Owner {
			return !strings.HasPrefix(rest, "@") || strings.HasPrefix(rest, "@@")
		}
		return strings.HasPrefix(rest, "@"+c.Via+":"+url.PathEscape(c.Name)+"/")
	}
	return false
}
