package api

import (
	"testing"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
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
		broker.KindCanceled, broker.KindConfig, broker.KindInternal, broker.KindStaleClient, broker.KindRateLimited} {
		if _, ok := wire.LookupProblemType(string(k)); !ok {
			t.Errorf("broker kind %q is not a wire problem kind", k)
		}
	}
}
