package launcher

import (
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

func TestHint(t *testing.T) {
	for name, want := range map[string]string{"uvx": "uv", "docker": "Docker", "dnx": ".NET", "node": "Node.js", "gopls": ""} {
		got := Hint(name)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("Hint(%q) = %q, want one naming %q", name, got, want)
		}
	}
}

func TestDeps(t *testing.T) {
	deptest.Rules{StdlibOnly: "a leaf of words the pool and the registry share", NoHTTPServer: "words"}.Check(t)
}
