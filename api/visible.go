package api

import (
	"strings"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// privateLastError replaces an instance's last error for callers other than
// the daemon's own user: the error may name commands and paths.
const privateLastError = "the last start or run failed; the daemon's owner sees why in `mcpx status` and the daemon's log"

// instanceFor returns in as caller c may see it, or false if c may not see
// it at all (a server c may not use). The daemon's own user (Owner) sees
// everything; admins every instance but not the private detail of errors;
// other callers see their own instances whole and others' without key,
// root, cwd or pid, which name other callers' sessions and directories.
func instanceFor(c broker.Caller, in broker.Instance) (wire.Instance, bool) {
	if !c.Rights.MayUse(in.Server) {
		return wire.Instance{}, false
	}
	if c.Owner {
		return instanceDoc(in), true
	}
	if in.LastError != "" {
		in.LastError = privateLastError
	}
	in.StderrTail = "" // the child's output may name anything of the owner's
	if strings.HasPrefix(in.Exec, "missing:") {
		in.Exec = "missing" // the command is the owner's
	}
	if !c.Rights.Admin() && !ownsInstance(c, in) {
		in.Key, in.Root, in.Cwd, in.Pid = "", "", "", 0
	}
	return instanceDoc(in), true
}

// ownsInstance reports whether in is c's to see whole: keyed by c's own
// session or lease (broker.Caller.OwnsKey), shared by everyone (global),
// or rooted in a directory where one rule of c's rights allows its server.
func ownsInstance(c broker.Caller, in broker.Instance) bool {
	switch {
	case c.OwnsKey(in.Key):
		return true
	case in.Key == "global":
		return true
	case strings.HasPrefix(in.Key, "repo:"), strings.HasPrefix(in.Key, "worktree:"), strings.HasPrefix(in.Key, "cwd:"):
		at := func(dir string) bool { return c.Rights.Allows(rights.Use{Server: in.Server, Dir: dir}) }
		return in.Root != "" && at(in.Root) && (in.Cwd == "" || at(in.Cwd))
	}
	return false // call: and pid: keys belong to one call or process, not c's
}
