package pool_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/pool"
)

// fakeOpener makes namespaces whose tool "scope" answers with the Scope it
// was opened in, and whose tool "spawn" starts a process that outlives the
// call (a setsid'd sleep) with the scope's environment.
type fakeOpener struct {
	id      string
	fail    string        // Open's error, if set
	hook    func()        // never compared: sameDef must not need it
	opens   *atomic.Int32 // namespaces opened
	closes  *atomic.Int32 // namespaces closed
	lastEnv *atomic.Value // the last scope's Env
}

func newFakeOpener(id string) *fakeOpener {
	return &fakeOpener{id: id, hook: func() {}, opens: new(atomic.Int32), closes: new(atomic.Int32), lastEnv: new(atomic.Value)}
}

func (o *fakeOpener) Identity() string { return o.id }
func (o *fakeOpener) Kind() string     { return "fake" }

func (o *fakeOpener) Open(_ context.Context, s adapter.Scope) (adapter.Namespace, error) {
	if o.fail != "" {
		return nil, errors.New(o.fail)
	}
	o.opens.Add(1)
	o.lastEnv.Store(s.Env)
	return &fakeNamespace{o: o, scope: s}, nil
}

type fakeNamespace struct {
	o     *fakeOpener
	scope adapter.Scope
}

func (n *fakeNamespace) ListTools(context.Context) ([]adapter.Tool, error) {
	return []adapter.Tool{{Name: "scope"}, {Name: "spawn"}}, nil
}

func (n *fakeNamespace) CallTool(ctx context.Context, c adapter.Call) (*adapter.Result, error) {
	switch c.Name {
	case "scope":
		b, _ := json.Marshal(map[string]string{"server": n.scope.Server, "instance": n.scope.Instance, "root": n.scope.Root, "cwd": n.scope.Cwd, "id": n.o.id})
		return adapter.TextResult(string(b), false), nil
	case "spawn":
		cmd := exec.Command("/bin/sh", "-c", "setsid sleep 1000 >/dev/null 2>&1 & echo $!")
		cmd.Env = n.scope.Env
		out, err := cmd.Output()
		if err != nil {
			return adapter.TextResult(err.Error(), true), nil
		}
		return adapter.TextResult(strings.TrimSpace(string(out)), false), nil
	}
	return nil, errors.New("no such tool")
}

func (n *fakeNamespace) Close() error { n.o.closes.Add(1); return nil }

// TestAdapterTakesAChildsPlace: an adapter's instance per key answers from
// its own scope (root, cwd by SpawnCwd, the server's env rules), status
// shows the adapter's kind, a change of its Identity (and nothing else)
// replaces it, and stopping it closes its namespace and kills what its
// calls left running, by the generation's mark.
func TestAdapterTakesAChildsPlace(t *testing.T) {
	root := realDir(t)
	op := newFakeOpener("v1")
	def := pool.Server{Name: "fake", Adapter: op, Env: map[string]string{"X": "1", proctest.MarkerEnv: proctest.Marker(t)}}
	p := newPool(t, pool.Options{Env: []string{"PATH=/usr/bin:/bin", "SECRET=no"}}, def)
	tg := pool.Target{Server: "fake", Key: "worktree:" + root, Root: root}
	got := mustCall(t, p, tg, "scope", nil)
	var s map[string]string
	json.Unmarshal([]byte(got), &s)
	if s["server"] != "fake" || s["root"] != root || s["cwd"] != root || s["instance"] == "" {
		t.Errorf("scope = %s; want the instance's root as its cwd", got)
	}
	env := strings.Join(op.lastEnv.Load().([]string), " ")
	if !strings.Contains(env, "PATH=/usr/bin:/bin") || !strings.Contains(env, "X=1") || strings.Contains(env, "SECRET") || !strings.Contains(env, pool.MarkEnv+"=") {
		t.Errorf("scope env = %s; want the allowlist, the server's env and the mark, not SECRET", env)
	}
	if st := p.Instances(); len(st) != 1 || st[0].Transport != "fake" || st[0].Pid != 0 || st[0].State != pool.StateReady {
		t.Fatalf("status = %+v; want one ready fake instance without a pid", st)
	}

	// The same definition again, with a new (incomparable) hook: kept.
	same := def
	op2 := *op
	op2.hook = func() {}
	same.Adapter = &op2
	p.SetServers([]pool.Server{same})
	mustCall(t, p, tg, "scope", nil)
	if n := op.opens.Load(); n != 1 {
		t.Errorf("an unchanged definition was reopened: %d opens", n)
	}

	// A call leaves a process behind; a new Identity replaces the
	// instance, whose stop closes the namespace and kills the process.
	pid, err := strconv.Atoi(mustCall(t, p, tg, "spawn", nil))
	if err != nil || !alive(pid) {
		t.Fatalf("spawn: pid %d, %v", pid, err)
	}
	next := def
	op3 := *op
	op3.id = "v2"
	next.Adapter = &op3
	p.SetServers([]pool.Server{next})
	if got := mustCall(t, p, tg, "scope", nil); !strings.Contains(got, `"id":"v2"`) {
		t.Errorf("after the change, scope = %s; want the new definition's", got)
	}
	waitGone(t, pid)
	if n := op.closes.Load(); n != 1 {
		t.Errorf("the old namespace was closed %d times, want once", n)
	}
}

// TestAdapterOpenErrorFailsThatStart: Open's error is that start's error,
// with its message; another server is not affected.
func TestAdapterOpenErrorFailsThatStart(t *testing.T) {
	bad := newFakeOpener("bad")
	bad.fail = "spec petstore.yaml: broken $ref"
	p := newPool(t, pool.Options{}, pool.Server{Name: "bad", Adapter: bad}, pool.Server{Name: "good", Adapter: newFakeOpener("good")})
	_, err := call(t.Context(), p, pool.Target{Server: "bad", Key: "global"}, "scope", nil)
	if !errors.Is(err, pool.ErrStart) || !strings.Contains(err.Error(), "opening the fake adapter: spec petstore.yaml: broken $ref") {
		t.Errorf("bad: %v; want ErrStart with Open's message", err)
	}
	mustCall(t, p, pool.Target{Server: "good", Key: "global"}, "scope", nil)
}
