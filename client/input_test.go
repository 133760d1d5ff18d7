package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// The demo's ask tool elicits a form: OnInput sees it and its answer
// reaches the tool; an answer the schema refuses is asked for again; an
// OnInput that fails, or none while streaming, declines.
func TestCallOnInput(t *testing.T) {
	d := startDemo1(t)
	args := json.RawMessage(`{"question":"who are you?"}`)
	for _, c := range d.both() {
		cl := client.Caller{Cwd: t.TempDir()}
		var mu sync.Mutex
		var asked []wire.InputRequest
		answers := []string{`{"name":""}`, `{"name":"Ada","count":3}`} // the first breaks minLength
		res, err := c.Call(t.Context(), cl, "demo", "ask", args, client.CallOptions{
			OnInput: func(_ context.Context, in wire.InputRequest) (wire.InputAnswer, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, in)
				return wire.InputAnswer{Action: wire.ActionAccept, Content: json.RawMessage(answers[len(asked)-1])}, nil
			}})
		got, isErr := text(t, res)
		if err != nil || isErr || !strings.HasPrefix(got, "accept ") {
			t.Fatalf("%s: result %q, %v; want accept", c.Addr(), got, err)
		}
		var content map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(got, "accept ")), &content); err != nil || content["name"] != "Ada" || content["count"] != 3.0 {
			t.Errorf("%s: the tool saw %s, want name Ada, count 3", c.Addr(), got)
		}
		if len(asked) != 2 || asked[0].Message != "who are you?" || asked[0].Kind != wire.InputElicitation || asked[0].Input != asked[1].Input {
			t.Errorf("%s: asked %+v, want the same question twice", c.Addr(), asked)
		}

		for name, o := range map[string]client.CallOptions{
			"failing OnInput": {OnInput: func(context.Context, wire.InputRequest) (wire.InputAnswer, error) {
				return wire.InputAnswer{}, errors.New("no user here")
			}},
			"streamed without OnInput": {OnProgress: func(json.RawMessage) {}},
			"not streamed":             {},
		} {
			res, err := c.Call(t.Context(), cl, "demo", "ask", args, o)
			if got, _ := text(t, res); err != nil || got != "decline" {
				t.Errorf("%s: %s: result %q, %v; want decline", c.Addr(), name, got, err)
			}
		}
	}
}
