package api

import (
	"encoding/json"
	"flag"
	"hash/fnv"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/clientgen/catalog"
	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/documents from the converters' output")

// TestDocuments pins the JSON of every document the converters build from
// the broker's values: each value has every field set (filled), so a
// field the converter forgets, or a member whose name or form changes,
// shows as a diff against testdata/documents/<name>.json. What callers
// other than the owner see is pinned beside the owner's view.
func TestDocuments(t *testing.T) {
	owner := broker.Caller{Name: "owner", Via: "unix", Owner: true, Rights: rights.All()}
	plain := broker.Caller{Name: "bob", Via: "tailnet", Rights: rights.Rights{{}}}

	si := filled[broker.ServerInfo]()
	in := filled[broker.Instance]()
	in.Key = "session:other"
	st := filled[broker.Stats]()
	sess := filled[broker.Session]()
	sess.Instances = []broker.Instance{in}
	lease := filled[broker.Lease]()
	src := filled[broker.Sources]()
	nl := filled[broker.NixList]()
	nr := filled[broker.NixRefreshed]()
	dropped := filled[[]broker.NixProgram]()
	q := filled[broker.CallStatsQuery]()
	sum := filled[broker.CallStats]()
	ev := filled[broker.Event]()
	ev.Kind, ev.Key = pool.EventCrash, "session:other"
	sb := filled[broker.SandboxView]()
	hit := filled[catalog.Hit]()
	cat := filled[catalog.Catalog]()

	event := func(c broker.Caller) wire.LifecycleEvent {
		doc, ok := eventFor(c, ev)
		if !ok {
			t.Fatalf("eventFor(%s): not shown", c.Name)
		}
		return doc
	}
	instance := func(c broker.Caller) wire.Instance {
		doc, ok := instanceFor(c, in)
		if !ok {
			t.Fatalf("instanceFor(%s): not shown", c.Name)
		}
		return doc
	}
	for name, doc := range map[string]any{
		"server":         serverDoc(si),
		"stats":          statsDoc(st),
		"instance-owner": instance(owner),
		"instance-plain": instance(plain),
		"session-plain":  sessionDoc(plain, sess),
		"lease":          leaseDoc(lease),
		"config-sources": sourcesDoc(src),
		"nix-list":       nixListDoc(nl),
		"nix-refreshed":  nixRefreshedDoc(nr),
		"nix-gc":         nixGCDoc(dropped),
		"call-stats":     callStatsDoc(q, sum, &wire.RecordsStatus{Enabled: true}),
		"statsrow":       statsRow(sum.Total),
		"event-owner":    event(owner),
		"event-plain":    event(plain),
		"search-hit":     hitDoc(hit),
		"catalog":        catalogDoc(cat, nil),
		"sandbox-owner":  sandboxFor(owner, sb),
		"sandbox-plain":  sandboxFor(plain, sb),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := json.MarshalIndent(doc, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "documents", name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (write it with -update)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s changed (-want +got); if on purpose, -update:\n%s", name, diff)
			}
		})
	}
}

// filled returns a T whose every field is set, recursively, to a non-zero
// value derived from the field's name alone (not its position, so a value
// nested one level deeper keeps its figures): the same every run.
func filled[T any]() T {
	var v T
	fillField(reflect.ValueOf(&v).Elem(), "v")
	return v
}

// number is a small number derived from name.
func number(name string) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32()%97) + 1
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
	rawType      = reflect.TypeFor[json.RawMessage]()
)

func fillField(v reflect.Value, name string) {
	n := number(name)
	switch v.Kind() {
	case reflect.String:
		v.SetString(name + "-value")
	case reflect.Int, reflect.Int64, reflect.Int32:
		if v.Type() == durationType {
			v.SetInt(int64(n) * int64(time.Second))
		} else {
			v.SetInt(int64(n))
		}
	case reflect.Uint, reflect.Uint64, reflect.Uint32, reflect.Uint16:
		v.SetUint(uint64(n))
	case reflect.Float64, reflect.Float32:
		v.SetFloat(float64(n) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		if v.Type() == rawType {
			v.SetBytes([]byte(`{"` + name + `":true}`))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fillField(v.Index(0), name)
		fillField(v.Index(1), name+"#2")
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fillField(k, name+"-key")
		e := reflect.New(v.Type().Elem()).Elem()
		fillField(e, name)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillField(v.Elem(), name)
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(n) * time.Hour)))
			return
		}
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fillField(v.Field(i), f.Name)
			}
		}
	case reflect.Interface:
		// left nil: no document member is an interface
	default:
		panic("fillField: add a case for " + v.Type().String())
	}
}
