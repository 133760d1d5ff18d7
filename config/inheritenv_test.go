package config_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/config"
)

func TestInheritEnv(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want config.InheritEnv
		out  string // how `config show` writes it; "" = omitted
	}{
		{`true`, config.InheritEnv{All: true}, `true`},
		{`false`, config.InheritEnv{}, ``},
		{`["AWS_PROFILE","SSH_AUTH_SOCK"]`, config.InheritEnv{Names: []string{"AWS_PROFILE", "SSH_AUTH_SOCK"}}, `["AWS_PROFILE","SSH_AUTH_SOCK"]`},
		{`[]`, config.InheritEnv{Names: []string{}}, ``},
	} {
		cfg, err := config.Parse([]byte(`{"servers":{"s":{"command":"x","inheritEnv":`+tc.doc+`}}}`), "")
		if err != nil {
			t.Fatalf("%s: %v", tc.doc, err)
		}
		got := cfg.Servers["s"].InheritEnv
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.doc, diff)
		}
		b, err := json.Marshal(cfg.Servers["s"])
		if err != nil {
			t.Fatal(err)
		}
		if tc.out == "" && strings.Contains(string(b), "inheritEnv") || tc.out != "" && !strings.Contains(string(b), `"inheritEnv":`+tc.out) {
			t.Errorf("%s: marshalled as %s", tc.doc, b)
		}
	}
}

func TestInheritEnvErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"command":"x","inheritEnv":"yes"}`, "want true, false or a list"},
		{`{"command":"x","inheritEnv":["A=B"]}`, `invalid environment variable name "A=B"`},
		{`{"command":"x","inheritEnv":[1]}`, "want true, false or a list"},
		{`{"url":"http://h/mcp","inheritEnv":true}`, "inheritEnv is only for command servers"},
	} {
		_, err := config.Parse([]byte(`{"servers":{"s":`+tc.doc+`}}`), "c.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "inheritEnv") {
			t.Errorf("%s: error %v, want one naming inheritEnv and %q", tc.doc, err, tc.want)
		}
	}
}
