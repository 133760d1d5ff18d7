package broker_test

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// remote is a non-owner, non-admin caller: its session and lease ids are
// namespaced by its name.
func remote(name string) broker.Caller {
	return broker.Caller{Name: name, Via: "tailnet", Rights: rights.Rights{{}}}
}

// childGone waits for the demo child whose pid the "pid" tool returned to
// be gone.
func childGone(t *testing.T, pidText string) {
	t.Helper()
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		t.Fatalf("pid %q: %v", pidText, err)
	}
	testenv.WaitFor(t, fmt.Sprintf("child %d to exit", pid), func() bool { return syscall.Kill(pid, 0) != nil })
}

func keys(b *broker.Broker) []string {
	var out []string
	for _, in := range b.Instances() {
		out = append(out, in.Key)
	}
	return out
}

func wantKind(t *testing.T, err error, kind broker.Kind, field string) *broker.Error {
	t.Helper()
	var be *broker.Error
	if !errors.As(err, &be) || be.Kind != kind || be.Field != field {
		t.Fatalf("error %v, want kind %s naming field %q", err, kind, field)
	}
	return be
}

func TestLeaseReleaseStopsItsInstanceAtOnce(t *testing.T) {
	// No reaper: only the release can stop the instance.
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopePid})
	bob := remote("bob")
	l, err := b.AcquireLease(bob, 0)
	if err != nil {
		t.Fatal(err)
	}
	if l.TTL != broker.DefaultLeaseTTL || l.Key != "lease:@tailnet:bob/"+l.ID {
		t.Errorf("lease %+v, want the default ttl and key lease:@tailnet:bob/<id>", l)
	}
	r := req("demo", "")
	r.Caller, r.Context.Lease = bob, l.ID
	child := callText(t, b, r, "pid", `{}`)
	if k := keys(b); !slices.Equal(k, []string{l.Key}) {
		t.Fatalf("instances %v, want one keyed %s", k, l.Key)
	}

	// Another caller cannot renew or release it, nor call under it.
	if _, err := b.RenewLease(remote("mallory"), l.ID, 0); err == nil {
		t.Error("another caller renewed bob's lease")
	}
	if err := b.ReleaseLease(t.Context(), remote("mallory"), l.ID); err == nil {
		t.Error("another caller released bob's lease")
	}
	m := r
	m.Caller = remote("mallory")
	_, err = b.CallTool(t.Context(), m, "pid", nil, nil)
	wantKind(t, err, broker.KindBadRequest, "Mcpx-Lease")

	if err := b.ReleaseLease(t.Context(), bob, l.ID); err != nil {
		t.Fatal(err)
	}
	if k := keys(b); len(k) != 0 {
		t.Errorf("instances %v after the release, want none", k)
	}
	childGone(t, child)

	// A released lease is no lifetime: the call is refused, not downgraded.
	_, err = b.CallTool(t.Context(), r, "pid", nil, nil)
	wantKind(t, err, broker.KindBadRequest, "Mcpx-Lease")
	_, err = b.RenewLease(bob, l.ID, 0)
	wantKind(t, err, broker.KindNotFound, "lease")
}

func TestLeaseExpiryStopsItsInstance(t *testing.T) {
	// A long reap interval: the owner check (every second) must do it.
	b := startDemoBroker(t, demoSetup{scopes: map[string]config.ScopeKind{"demo": config.ScopePid},
		opts: broker.Options{ReapInterval: time.Hour}})
	l, err := b.AcquireLease(local, time.Nanosecond) // raised to MinLeaseTTL
	if err != nil {
		t.Fatal(err)
	}
	if l.TTL != broker.MinLeaseTTL || l.Key != "lease:"+l.ID {
		t.Errorf("lease %+v, want ttl %s and the owner's key, not namespaced", l, broker.MinLeaseTTL)
	}
	r := req("demo", "")
	r.Context.Lease = l.ID
	r.Context.Pid = 1 // a declared lease wins over the pid
	child := callText(t, b, r, "pid", `{}`)
	if k := keys(b); !slices.Equal(k, []string{l.Key}) {
		t.Fatalf("instances %v, want one keyed %s", k, l.Key)
	}
	testenv.WaitFor(t, "the expired lease's instance to stop", func() bool { return len(b.Instances()) == 0 })
	childGone(t, child)
	_, err = b.CallTool(t.Context(), r, "pid", nil, nil)
	wantKind(t, err, broker.KindBadRequest, "Mcpx-Lease")
}

func TestLeaseTTLBounds(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopePid})
	for _, ttl := range []time.Duration{-time.Second, broker.MaxLeaseTTL + time.Second} {
		_, err := b.AcquireLease(local, ttl)
		wantKind(t, err, broker.KindBadRequest, "ttl")
	}
	l, err := b.AcquireLease(local, broker.MaxLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := b.RenewLease(local, l.ID, time.Minute)
	if err != nil || l2.TTL != time.Minute || !l2.Expires.Before(l.Expires) {
		t.Errorf("renewed to %+v (%v), want a minute's ttl ending before the hour's", l2, err)
	}
	// An admin releases another caller's lease by its namespaced id.
	bl, err := b.AcquireLease(remote("bob"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.ReleaseLease(t.Context(), local, "@tailnet:bob/"+bl.ID); err != nil {
		t.Errorf("admin release of bob's lease: %v", err)
	}
}

func TestNamedSessionOutlivesItsCreator(t *testing.T) {
	b := startDemoBroker(t, demoSetup{scopes: map[string]config.ScopeKind{"demo": config.ScopePid},
		opts: broker.Options{ReapInterval: 200 * time.Millisecond}})
	owners := make([]*exec.Cmd, 2)
	children := make([]string, 2)
	for i := range owners {
		owners[i] = exec.Command("sleep", "60")
		if err := owners[i].Start(); err != nil {
			t.Fatal(err)
		}
		r := req("demo", "")
		r.Context.Pid = owners[i].Process.Pid
		children[i] = callText(t, b, r, "pid", `{}`)
	}
	named := fmt.Sprintf("pid:%d", owners[0].Process.Pid)
	unnamed := fmt.Sprintf("pid:%d", owners[1].Process.Pid)
	name := "keep me"
	s, err := b.SetSession(local, named, broker.SessionSettings{Name: &name})
	if err != nil || s.Name != name || s.Scope != "pid" || len(s.Instances) != 1 || s.Creator.Name != local.Name {
		t.Fatalf("named session %+v (%v)", s, err)
	}
	for _, o := range owners {
		o.Process.Kill()
		o.Wait()
	}
	// Both owners are dead; the reaper checks both keys on the same pass,
	// so once the unnamed one is gone the named one has been passed over.
	testenv.WaitFor(t, "the unnamed session to stop", func() bool { return !slices.Contains(keys(b), unnamed) })
	childGone(t, children[1])
	if !slices.Contains(keys(b), named) {
		t.Fatalf("the named session was stopped with its creator: instances %v", keys(b))
	}
	if err := syscall.Kill(mustAtoi(t, children[0]), 0); err != nil {
		t.Fatalf("the named session's child is gone: %v", err)
	}
	// It idles out by its own timeout.
	idle := 300 * time.Millisecond
	if _, err := b.SetSession(local, named, broker.SessionSettings{IdleTimeout: &idle}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the named session to idle out", func() bool { return len(b.Instances()) == 0 })
	childGone(t, children[0])
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSessionsAreTheirCreatorsOwn(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"s": config.ScopeSession, "g": config.ScopeGlobal})
	alice, bob := remote("alice"), remote("bob")
	for _, c := range []broker.Caller{alice, bob} {
		r := req("s", "")
		r.Caller, r.Context.Session = c, "S"
		callText(t, b, r, "pid", `{}`)
		r.Server = "g" // a shared key is no one's session
		callText(t, b, r, "pid", `{}`)
	}
	list := b.Sessions(alice)
	if len(list) != 1 || list[0].Key != "session:@tailnet:alice/S" || list[0].Creator.Name != "alice" || list[0].Calls != 1 {
		t.Fatalf("alice's sessions %+v, want only session:@tailnet:alice/S", list)
	}
	if all := b.Sessions(local); len(all) != 2 {
		t.Errorf("the admin sees %d sessions, want 2", len(all))
	}
	// bob's session does not exist to alice: she can neither see, change nor stop it.
	_, err := b.Session(alice, "session:@tailnet:bob/S")
	wantKind(t, err, broker.KindNotFound, "key")
	name := "mine"
	_, err = b.SetSession(alice, "session:@tailnet:bob/S", broker.SessionSettings{Name: &name})
	wantKind(t, err, broker.KindNotFound, "key")
	wantKind(t, b.StopSession(t.Context(), alice, "session:@tailnet:bob/S"), broker.KindNotFound, "key")
	// A caller named like another, on the other side of the owner line, is not it.
	_, err = b.Session(broker.Caller{Name: "bob", Via: "unix", Owner: true, Rights: rights.Rights{{}}}, "session:@tailnet:bob/S")
	wantKind(t, err, broker.KindNotFound, "key")
	// Nor is a token whose subject is bob: the same name, another way in.
	_, err = b.Session(broker.Caller{Name: "bob", Via: "jwt", Rights: rights.Rights{{}}}, "session:@tailnet:bob/S")
	wantKind(t, err, broker.KindNotFound, "key")
	if err := b.StopSession(t.Context(), alice, "session:@tailnet:alice/S"); err != nil {
		t.Fatal(err)
	}
	if k := keys(b); !slices.Equal(k, []string{"global", "session:@tailnet:bob/S"}) {
		t.Errorf("instances %v, want global and bob's session", k)
	}
}

func TestScopeOverride(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"open": config.ScopeGlobal, "fixed": config.ScopeGlobal}, func(s *config.Server) {
		if s.Name == "open" {
			s.ScopePolicy = config.ScopePolicy{Allow: []config.ScopeKind{config.ScopeGlobal, config.ScopeSession}, AllowOverride: true}
		}
	})
	r := req("open", "")
	r.Context.Session, r.Context.Scope = "s1", config.ScopeSession
	callText(t, b, r, "pid", `{}`)
	if k := keys(b); !slices.Equal(k, []string{"session:s1"}) {
		t.Fatalf("instances %v, want the override's key session:s1", k)
	}

	r.Context.Scope = config.ScopeCall
	_, err := b.CallTool(t.Context(), r, "pid", nil, nil)
	be := wantKind(t, err, broker.KindForbidden, "scopePolicy.allow")
	if be.Server != "open" {
		t.Errorf("denied override names server %q, want open", be.Server)
	}
	r.Server, r.Context.Scope = "fixed", config.ScopeSession
	_, err = b.CallTool(t.Context(), r, "pid", nil, nil)
	wantKind(t, err, broker.KindForbidden, "scopePolicy.allowOverride")
	r.Context.Scope = "galaxy"
	_, err = b.CallTool(t.Context(), r, "pid", nil, nil)
	wantKind(t, err, broker.KindBadRequest, "Mcpx-Scope")
	// Naming the configured scope is no override.
	r.Context.Scope = config.ScopeGlobal
	callText(t, b, r, "pid", `{}`)
	if k := keys(b); !slices.Equal(k, []string{"global", "session:s1"}) {
		t.Errorf("instances %v, want fixed's global instance added", k)
	}
}

func TestSessionSettingsAreChecked(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"s": config.ScopeSession})
	r := req("s", "")
	r.Context.Session = "S"
	callText(t, b, r, "pid", `{}`)
	long := time.Duration(-1)
	_, err := b.SetSession(local, "session:S", broker.SessionSettings{IdleTimeout: &long})
	wantKind(t, err, broker.KindBadRequest, "idleTimeout")
	bad := "a\nb"
	_, err = b.SetSession(local, "session:S", broker.SessionSettings{Name: &bad})
	wantKind(t, err, broker.KindBadRequest, "name")
	_, err = b.SetSession(local, "session:nope", broker.SessionSettings{Name: new("x")})
	wantKind(t, err, broker.KindNotFound, "key")
	doc, _ := json.Marshal(b.Sessions(local))
	if !json.Valid(doc) {
		t.Errorf("sessions do not marshal: %s", doc)
	}
}

// TestCallerKeysNeverCollide: a session id is confined to the caller that
// sent it, named by how it came and by its name. A token subject and a
// tailnet login of one name, an owner id shaped like a remote key, and a
// name holding "/" never land on one key.
func TestCallerKeysNeverCollide(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"s": config.ScopeSession})
	type ask struct {
		c  broker.Caller
		id string
	}
	asks := []ask{
		{remote("alice"), "S"},
		{broker.Caller{Name: "alice", Via: "jwt", Rights: rights.Rights{{}}}, "S"},
		{local, "@tailnet:alice/S"},
		{local, "S"},
		{remote("a/b"), "c"},
		{remote("a"), "b/c"},
	}
	seen := map[string]int{}
	for i, a := range asks {
		r := req("s", "")
		r.Caller, r.Context.Session = a.c, a.id
		tg, err := b.Target(r)
		if err != nil {
			t.Fatalf("%+v: %v", a, err)
		}
		if j, dup := seen[tg.Key]; dup {
			t.Errorf("%+v and %+v share the key %q", asks[j], a, tg.Key)
		}
		seen[tg.Key] = i
	}
}

func TestSessionsByName(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"s": config.ScopeSession})
	alice, bob := remote("alice"), remote("bob")
	for _, c := range []broker.Caller{alice, bob} {
		for _, id := range []string{"S", "T"} {
			r := req("s", "")
			r.Caller, r.Context.Session = c, id
			callText(t, b, r, "pid", `{}`)
		}
	}
	aS, aT, bS := "session:@tailnet:alice/S", "session:@tailnet:alice/T", "session:@tailnet:bob/S"
	name := "browser"
	for _, set := range []struct {
		c   broker.Caller
		key string
	}{{alice, aS}, {bob, bS}} {
		if s, err := b.SetSession(set.c, set.key, broker.SessionSettings{Name: &name}); err != nil || s.Key != set.key {
			t.Fatalf("naming %s: %+v (%v)", set.key, s, err)
		}
	}
	// Each caller's name is its own session.
	for _, own := range []struct {
		c    broker.Caller
		want string
	}{{alice, aS}, {bob, bS}} {
		if s, err := b.Session(own.c, name); err != nil || s.Key != own.want {
			t.Errorf("%s: session %q is %+v (%v), want %s", own.c.Name, name, s, err, own.want)
		}
	}
	// A caller's running session keeps its name.
	_, err := b.SetSession(alice, aT, broker.SessionSettings{Name: &name})
	if be := wantKind(t, err, broker.KindBadRequest, "name"); !strings.Contains(be.Msg, aS) {
		t.Errorf("a taken name: %v, want it to name %s", err, aS)
	}
	// To the admin, who sees both, the name is ambiguous, naming both keys.
	_, err = b.Session(local, name)
	if be := wantKind(t, err, broker.KindBadRequest, "key"); !strings.Contains(be.Msg, aS) || !strings.Contains(be.Msg, bS) {
		t.Errorf("an ambiguous name: %v, want it to name %s and %s", err, aS, bS)
	}
	wantKind(t, b.StopSession(t.Context(), local, name), broker.KindBadRequest, "key")
	// An unknown name is not found, as another caller's key is.
	_, err = b.Session(alice, "nosuch")
	wantKind(t, err, broker.KindNotFound, "key")
	// A name shaped like a key would hide one: refused.
	for _, bad := range []string{"pid:1", "session:x", "lease:y", "psession:z"} {
		_, err := b.SetSession(alice, aT, broker.SessionSettings{Name: &bad})
		wantKind(t, err, broker.KindBadRequest, "name")
	}
	// By its name: the idle timeout set, then stopped.
	idle := time.Hour
	if s, err := b.SetSession(bob, name, broker.SessionSettings{IdleTimeout: &idle}); err != nil || s.Key != bS || s.IdleTimeout != idle {
		t.Fatalf("set by name: %+v (%v)", s, err)
	}
	if err := b.StopSession(t.Context(), bob, name); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(keys(b), bS) {
		t.Errorf("stopped by name, bob's session runs on: %v", keys(b))
	}
	// Now the name is alice's alone, for the admin too.
	if key, err := b.SessionKey(local, name, "test"); err != nil || key != aS {
		t.Errorf("after bob's stopped: %q (%v), want %s", key, err, aS)
	}
}

// TestScopeOverrideByCallerKind: an allowOverride that lists caller kinds
// takes the override of those kinds only (an undeclared one is "api"),
// and pool.scopePolicy bounds every server's: a server whose own policy
// is wider gets no more than the pool allows. Each refusal names the
// server, the kind and the setting to change.
func TestScopeOverrideByCallerKind(t *testing.T) {
	t.Parallel()
	var bound *config.ScopePolicy
	b := startDemoBroker(t, demoSetup{scopes: map[string]config.ScopeKind{"kinds": config.ScopeGlobal, "open": config.ScopeGlobal},
		server: func(s *config.Server) {
			s.ScopePolicy = config.ScopePolicy{AllowOverride: true}
			if s.Name == "kinds" {
				s.ScopePolicy.OverrideBy = []config.CallerKind{config.CallerFlag, config.CallerScript}
			}
		},
		config: func(c *config.Config) {
			bound = &config.ScopePolicy{Allow: []config.ScopeKind{config.ScopeGlobal, config.ScopeSession}, AllowOverride: true, OverrideBy: []config.CallerKind{config.CallerFlag}}
			c.Pool.ScopePolicy = bound
		}})
	call := func(server string, scope config.ScopeKind, from config.CallerKind) error {
		r := req(server, "")
		r.Context.Session, r.Context.Scope, r.Context.ScopeFrom = "s1", scope, from
		_, err := b.CallTool(t.Context(), r, "pid", nil, nil)
		return err
	}
	if err := call("kinds", config.ScopeSession, config.CallerFlag); err != nil {
		t.Fatalf("a --scope override of a server taking flag: %v", err)
	}
	for _, from := range []config.CallerKind{"", config.CallerEnv} {
		be := wantKind(t, call("kinds", config.ScopeSession, from), broker.KindForbidden, "scopePolicy.allowOverride")
		kind := cmp.Or(from, config.CallerAPI)
		if be.Server != "kinds" || !strings.Contains(be.Msg, fmt.Sprintf("kind %q", kind)) || !strings.Contains(be.Hint, fmt.Sprintf("add %q to servers.kinds.scopePolicy.allowOverride", kind)) {
			t.Errorf("override from %q: %v, want it to name the server, kind %q and the setting", from, be, kind)
		}
	}
	// The pool bounds the server's own "true" (and the script kind "kinds" takes).
	for _, server := range []string{"open", "kinds"} {
		be := wantKind(t, call(server, config.ScopeSession, config.CallerScript), broker.KindForbidden, "pool.scopePolicy.allowOverride")
		if be.Server != server || !strings.Contains(be.Hint, `add "script" to pool.scopePolicy.allowOverride`) {
			t.Errorf("%s from a script under the pool's bound: %v", server, be)
		}
	}
	be := wantKind(t, call("open", config.ScopeCall, config.CallerFlag), broker.KindForbidden, "pool.scopePolicy.allow")
	if !strings.Contains(be.Hint, `add "call" to pool.scopePolicy.allow`) {
		t.Errorf("a scope outside the pool's allow: %v", be)
	}
	if err := call("open", config.ScopeSession, config.CallerFlag); err != nil {
		t.Errorf("an override both allow: %v", err)
	}
}
