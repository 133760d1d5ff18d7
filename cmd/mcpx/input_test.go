package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/wire"
)

// The form on a fake terminal: one prompt per property in the schema's
// order, defaults on an empty line, choices by number, booleans y/n, a bad
// answer asked again, an optional field left out.
func TestTerminalForm(t *testing.T) {
	schema := `{"type":"object","properties":{
		"name":{"type":"string","title":"Name","description":"your name"},
		"color":{"type":"string","enum":["red","green","blue"],"default":"green"},
		"hero":{"type":"string","oneOf":[{"const":"h1","title":"Superman"},{"const":"h2","title":"Wonder Woman"}]},
		"agree":{"type":"boolean"},
		"count":{"type":"integer"},
		"fish":{"type":"array","items":{"anyOf":[{"const":"f1","title":"Tuna"},{"const":"f2","title":"Trout"}]}},
		"note":{"type":"string"}},
		"required":["name","hero","agree","count"]}`
	tests := []struct {
		name, typed string
		want        wire.InputAnswer
		prompts     []string
	}{
		{"accept", "\nAda\n\n2\nmaybe\ny\nthree\n3\n1, f2\n\n",
			wire.InputAnswer{Action: "accept", Content: json.RawMessage(`{"agree":true,"color":"green","count":3,"fish":["f1","f2"],"hero":"h2","name":"Ada"}`)},
			[]string{"The server asks: who?", "Name (your name): ", "color\n  1) red\n  2) green\n  3) blue [\"green\"]: ", "2) Wonder Woman: ", "agree [y/n]: ", "answer y or n", "count: want a whole number", "note [optional]: "}},
		{"decline", "d\n", wire.InputAnswer{Action: "decline"}, nil},
		{"cancel", "c\n", wire.InputAnswer{Action: "cancel"}, nil},
		{"eof mid-form declines", "a\nAda\n", wire.InputAnswer{Action: "decline"}, nil},
		{"a required field never given", "a\n\n\n\n", wire.InputAnswer{Action: "decline"}, []string{"name is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			f := newTerminalForm(strings.NewReader(tt.typed), &out)
			got, err := f.answer(t.Context(), wire.InputRequest{Kind: wire.InputElicitation, Message: "who?", RequestedSchema: json.RawMessage(schema)})
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.Content != nil {
				var g, w any
				json.Unmarshal(got.Content, &g)
				json.Unmarshal(tt.want.Content, &w)
				if diff := cmp.Diff(w, g); diff != "" || got.Action != tt.want.Action {
					t.Errorf("answer %s %s (-want +got):\n%s", got.Action, got.Content, diff)
				}
			} else if got.Action != tt.want.Action || got.Content != nil {
				t.Errorf("answer %s %s, want %s", got.Action, got.Content, tt.want.Action)
			}
			for _, p := range tt.prompts {
				if !strings.Contains(out.String(), p) {
					t.Errorf("the terminal shows\n%s\nwithout %q", out.String(), p)
				}
			}
		})
	}
}

// The demo's ask form reads as the fields it asks for.
func TestFormFieldsOfDemoAsk(t *testing.T) {
	fields, err := formFields(json.RawMessage(demo.AskFormSchema))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fields {
		names = append(names, f.Name)
	}
	if want := []string{"name", "color", "agree", "count"}; !cmp.Equal(names, want) || !fields[0].Required || fields[1].Required {
		t.Errorf("fields %v (name required %v, color required %v), want %v with only name required", names, fields[0].Required, fields[1].Required, want)
	}
}

func TestTerminalFormDeclinesSampling(t *testing.T) {
	var out strings.Builder
	got, err := newTerminalForm(strings.NewReader(""), &out).answer(t.Context(), wire.InputRequest{Kind: wire.InputSampling})
	if err != nil || got.Action != wire.ActionDecline {
		t.Errorf("sampling answer %+v, %v; want a decline", got, err)
	}
}
