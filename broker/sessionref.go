package broker

import (
	"fmt"
	"slices"
	"strings"
)

// A session is named by its key or by the name SetSession gave it,
// wherever the API takes one (`mcpx sessions show mybrowser`). A key wins:
// a name may not look like one (checkSessionName). A name is one caller's
// label: two sessions of one caller never share it while both run, but an
// admin sees every caller's, and a name two of them share is ambiguous.

// SessionKey resolves ref, a session's key or its name, to the key of a
// session c may see. op names the operation for the error: KindNotFound
// for a key or name c may not see (another caller's sessions do not exist
// to it), KindBadRequest for a name that is several sessions'.
func (b *Broker) SessionKey(c Caller, ref, op string) (string, error) {
	if _, ok := sessionScope(ref); ok {
		meta, known := b.sessions.get(ref)
		if !mayManageSession(c, meta, known) {
			return "", sessionNotFound(op, ref)
		}
		return ref, nil
	}
	keys := b.namedKeys(c, ref)
	switch len(keys) {
	case 0:
		return "", sessionNotFound(op, ref)
	case 1:
		return keys[0], nil
	}
	return "", &Error{Kind: KindBadRequest, Op: op, Field: "key",
		Msg:  fmt.Sprintf("session name %q is ambiguous: it names %s", ref, strings.Join(keys, ", ")),
		Hint: "name the session by its key (`mcpx sessions ls` lists them)"}
}

// namedKeys returns the keys of the sessions c may see named name, sorted:
// those with running instances if any has, else those without (a name
// outlives its instances, for the log and the events of a session that
// ended).
func (b *Broker) namedKeys(c Caller, name string) []string {
	if name == "" {
		return nil
	}
	b.sessions.mu.Lock()
	var all []string
	for key, m := range b.sessions.m {
		if m.name == name && mayManageSession(c, *m, true) {
			all = append(all, key)
		}
	}
	b.sessions.mu.Unlock()
	if len(all) < 2 {
		return all
	}
	running := map[string]bool{}
	for _, in := range b.Instances() {
		running[in.Key] = true
	}
	live := slices.DeleteFunc(slices.Clone(all), func(k string) bool { return !running[k] })
	if len(live) > 0 {
		all = live
	}
	slices.Sort(all)
	return all
}

// claimName gives name to key among the sessions c may see: a session of
// theirs that runs under that name keeps it (KindBadRequest naming it); one
// with no running instance gives it up. Called with b.sessions.mu not held.
func (b *Broker) claimName(c Caller, key, name string) error {
	if name == "" {
		return nil
	}
	running := map[string]bool{}
	for _, in := range b.Instances() {
		running[in.Key] = true
	}
	b.sessions.mu.Lock()
	defer b.sessions.mu.Unlock()
	for k, m := range b.sessions.m {
		if k == key || m.name != name || !mayManageSession(c, *m, true) {
			continue
		}
		if running[k] {
			return &Error{Kind: KindBadRequest, Op: "set session", Field: "name",
				Msg:  fmt.Sprintf("session name %q is taken by %s", name, k),
				Hint: "pick another name, or clear that session's first (`mcpx sessions set " + k + " --name=`)"}
		}
		m.name = ""
	}
	return nil
}
