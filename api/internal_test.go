package api

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"mcpx.dev/mcpx/api/wire"
	"mcpx.dev/mcpx/broker"
)

// Every wire route has a handler and every handler a route.
func TestHandlersMatchRoutes(t *testing.T) {
	routed := map[string]bool{}
	for _, rt := range wire.Routes() {
		routed[rt.Name] = true
		if handlers[rt.Name] == nil {
			t.Errorf("route %s (%s %s) has no handler", rt.Name, rt.Method, rt.Pattern)
		}
	}
	for name := range handlers {
		if !routed[name] {
			t.Errorf("handler %s has no route in wire", name)
		}
	}
	if n := len(routes()); n != len(wire.Routes()) {
		t.Errorf("routes() has %d routes, wire %d", n, len(wire.Routes()))
	}
}

// Every broker.Kind is a problem kind of wire, with the same name.
func TestBrokerKindsAreWireKinds(t *testing.T) {
	for _, k := range []broker.Kind{broker.KindBadRequest, broker.KindNotFound, broker.KindForbidden,
		broker.KindChildFailed, broker.KindTimeout, broker.KindExhausted, broker.KindUnavailable,
		broker.KindCanceled, broker.KindConfig, broker.KindInternal, broker.KindStaleClient} {
		if _, ok := wire.LookupProblemType(string(k)); !ok {
			t.Errorf("broker kind %q is not a wire problem kind", k)
		}
	}
}

// The wire documents encode exactly as the broker values they are made from
// did before they had types of their own: a field added on one side only
// fails here.
func TestDocumentsMatchBroker(t *testing.T) {
	check := func(name string, v any, doc any) {
		t.Helper()
		want, _ := json.Marshal(v)
		got, _ := json.Marshal(doc)
		if string(got) != string(want) {
			t.Errorf("%s:\nbroker %s\nwire   %s", name, want, got)
		}
	}
	var si broker.ServerInfo
	fill(reflect.ValueOf(&si).Elem())
	check("ServerInfo", si, serverDoc(si))
	var in broker.Instance
	fill(reflect.ValueOf(&in).Elem())
	check("Instance", in, instanceDoc(in))
	var st broker.Stats
	fill(reflect.ValueOf(&st).Elem())
	check("Stats", st, statsDoc(st))
}

// fill sets every field of the struct v to a distinct non-zero value.
func fill(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(v.Type().Field(i).Name + "-value")
		case reflect.Int, reflect.Int64:
			if f.Type() == reflect.TypeFor[time.Duration]() {
				f.SetInt(int64(time.Second))
			} else {
				f.SetInt(int64(i + 1))
			}
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			name := v.Type().Field(i).Name
			f.Set(reflect.MakeSlice(f.Type(), 2, 2))
			f.Index(0).SetString(name)
			f.Index(1).SetString(name)
		case reflect.Map:
			name := v.Type().Field(i).Name
			if f.Type() == reflect.TypeFor[map[string]int]() {
				f.Set(reflect.ValueOf(map[string]int{name: i + 1}))
			} else {
				f.Set(reflect.ValueOf(map[string][]string{name: {name + "-a", name + "-b"}}))
			}
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
			fill(f.Elem())
		case reflect.Struct:
			f.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC).Add(time.Duration(i) * time.Hour)))
		default:
			panic("fill: add a case for " + f.Type().String())
		}
	}
}
