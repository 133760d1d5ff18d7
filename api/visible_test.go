package api

import (
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
)

// A caller that is not the daemon's own user sees no private error detail,
// and no key, root, cwd or pid of other callers' instances.
func TestInstancesKeepPrivateDetailPrivate(t *testing.T) {
	const secret = "exec: /opt/secret/bin/server: permission denied"
	instances := []broker.Instance{
		{ID: "git-1", Server: "git", Key: "session:@tailnet:alice/s1", Pid: 11, LastError: secret},
		{ID: "git-2", Server: "git", Key: "session:@tailnet:bob/s2", Pid: 12},
		{ID: "git-3", Server: "git", Key: "worktree:/home/owner/private", Root: "/home/owner/private", Cwd: "/home/owner/private", Pid: 13},
		{ID: "git-4", Server: "git", Key: "worktree:/srv/shared/app", Root: "/srv/shared/app", Cwd: "/srv/shared/app", Pid: 14},
		{ID: "git-5", Server: "git", Key: "call:1a2b-7", Pid: 15},
		{ID: "git-6", Server: "git", Key: "global", Pid: 16},
		{ID: "db-1", Server: "db", Key: "global", Pid: 17},
	}
	see := func(c broker.Caller) map[string]string {
		out := map[string]string{}
		for _, in := range instances {
			if doc, ok := instanceFor(c, in); ok {
				out[doc.ID] = strings.Join([]string{doc.Key, doc.Root, doc.Cwd, doc.LastError}, "|")
				if strings.Contains(doc.LastError, "/opt/secret") && !c.Local {
					t.Errorf("%s sees the private error of %s: %q", c.Name, doc.ID, doc.LastError)
				}
				if doc.Pid != 0 && doc.Key == "" {
					t.Errorf("%s sees the pid of %s, whose key it may not see", c.Name, doc.ID)
				}
			}
		}
		return out
	}

	alice := broker.Caller{Name: "alice", Via: "tailnet", Rights: rights.Rights{{Servers: []string{"git"}, Roots: []string{"/srv/shared"}}}}
	got := see(alice)
	want := map[string]string{
		"git-1": "session:@tailnet:alice/s1|||" + privateLastError, // hers, but the error detail is the owner's
		"git-2": "|||",                                             // bob's session
		"git-3": "|||",                                             // a directory outside her roots
		"git-4": "worktree:/srv/shared/app|/srv/shared/app|/srv/shared/app|",
		"git-5": "|||", // someone's call
		"git-6": "global|||",
		// db-1: a server she may not use is not listed at all
	}
	if len(got) != len(want) {
		t.Errorf("alice sees %d instances, want %d: %v", len(got), len(want), got)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("alice sees %s as %q, want %q", id, got[id], w)
		}
	}

	owner := broker.Caller{Name: "local:1000", Via: "unix", Local: true, Owner: true, Rights: rights.All()}
	if got := see(owner); len(got) != len(instances) || !strings.Contains(got["git-1"], secret) || got["git-2"] != "session:@tailnet:bob/s2|||" {
		t.Errorf("the owner sees %v; want everything", got)
	}
	admin := broker.Caller{Name: "ops", Via: "tailnet", Rights: rights.Rights{{Admin: true}}}
	if got := see(admin); len(got) != len(instances) || got["git-1"] != "session:@tailnet:alice/s1|||"+privateLastError {
		t.Errorf("a remote admin sees %v; want every instance, no private detail", got)
	}
}
