package pool

import (
	"context"
	"testing"

	"mcpx.dev/mcpx/adapter"
)

type keyOpener struct {
	id   string
	hook func()
}

func (o keyOpener) Open(context.Context, adapter.Scope) (adapter.Namespace, error) { return nil, nil }
func (o keyOpener) Identity() string                                               { return o.id }
func (o keyOpener) Kind() string                                                   { return "fake" }

// TestAdapterIdentityInTheSchemaKey: an adapter's Identity names its
// definition in the schema cache, so a changed adapter lists anew; what it
// holds besides (a function) does not.
func TestAdapterIdentityInTheSchemaKey(t *testing.T) {
	key := func(o adapter.Opener) string {
		def := &Server{Name: "a", Adapter: o}
		sp, err := resolveSpawn(def, vars{root: "/src/app"})
		if err != nil {
			t.Fatal(err)
		}
		return schemaKey(def, "/src/app", sp, "")
	}
	v1, v1again, v2 := key(keyOpener{"v1", func() {}}), key(keyOpener{"v1", func() {}}), key(keyOpener{"v2", nil})
	if v1 != v1again || v1 == v2 {
		t.Errorf("keys v1 %s, v1 again %s, v2 %s; want v1 twice and v2 apart", v1, v1again, v2)
	}
	if child := key(nil); child == v1 {
		t.Error("an adapter and a child of the same fields share a key")
	}
	a, b := &Server{Name: "a", Adapter: keyOpener{"v1", func() {}}}, &Server{Name: "a", Adapter: keyOpener{"v1", func() {}}}
	if !sameDef(a, b) || sameDef(a, &Server{Name: "a", Adapter: keyOpener{"v2", nil}}) || sameDef(a, &Server{Name: "a"}) {
		t.Error("sameDef must compare adapters by kind and Identity")
	}
}
