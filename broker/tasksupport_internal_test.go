package broker

import (
	"encoding/json"
	"testing"
)

// TestTaskSupport: the fast path for definitions without an execution
// member answers what the parse answers.
func TestTaskSupport(t *testing.T) {
	for _, c := range []struct{ def, want string }{
		{`{"name":"echo","inputSchema":{"type":"object"}}`, "forbidden"},
		{`{"name":"echo","description":"line\nline"}`, "forbidden"},
		{`{"name":"t","execution":{"taskSupport":"required"}}`, "required"},
		{`{"name":"t","Execution":{"TaskSupport":"optional"}}`, "optional"},
		{`{"name":"t","EXECUTION":{"taskSupport":"required"}}`, "required"},
		{`{"name":"t","\u0065xecution":{"taskSupport":"optional"}}`, "optional"},
		{`{"name":"t","execution":{}}`, "forbidden"},
		{`not json`, "forbidden"},
	} {
		if got := taskSupport(json.RawMessage(c.def)); got != c.want {
			t.Errorf("taskSupport(%s) = %q, want %q", c.def, got, c.want)
		}
	}
}
