package api_test

import (
	"fmt"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/wire"
)

// TestSearchAndCatalog runs /v1/tools?q= and /v1/catalog against two real
// demo servers and one that fails to start.
func TestSearchAndCatalog(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{
		"demo":   "",
		"other":  "",
		"broken": fmt.Sprintf(`{"env": {%q: "3"}}`, demo.EnvExitAtStart),
	})
	cwd := cwdHeader(t.TempDir())

	var list wire.ToolList
	r := d.Unix.Do(t, "GET", "/v1/tools?q=other+echo", "", cwd...)
	if r.StatusCode != 200 {
		t.Fatalf("%d %s", r.StatusCode, r.Bytes)
	}
	r.Decode(t, &list)
	if list.Match != "all" || len(list.Hits) != 1 || len(list.Tools) != 1 {
		t.Fatalf("search other echo: match %q, %d hits, %d tools: %s", list.Match, len(list.Hits), len(list.Tools), r.Bytes)
	}
	if h := list.Hits[0]; h.Server != "other" || h.Name != "echo" || h.Score != 120 || len(h.Terms) != 2 {
		t.Errorf("hit %+v, want other.echo scoring 20 + 100", h)
	}
	if !strings.Contains(string(list.Tools[0]), `"server":"other"`) {
		t.Errorf("tool %s not tagged with its server", list.Tools[0])
	}
	if len(list.Errors) != 1 || list.Errors[0].Server != "broken" {
		t.Errorf("errors %+v, want one for broken", list.Errors)
	}

	// The demo's tools carry no annotations, so no tags.
	list = wire.ToolList{}
	d.Unix.Do(t, "GET", "/v1/tools?q=echo&tag=read-only", "", cwd...).Decode(t, &list)
	if len(list.Tools) != 0 || len(list.Hits) != 0 {
		t.Errorf("tag read-only found %d tools", len(list.Tools))
	}

	var c wire.Catalog
	r = d.Unix.Do(t, "GET", "/v1/catalog?budget=0", "", cwd...)
	if r.StatusCode != 200 {
		t.Fatalf("%d %s", r.StatusCode, r.Bytes)
	}
	r.Decode(t, &c)
	if len(c.Servers) != 2 || c.Servers[0].Server != "demo" || c.Servers[1].Server != "other" ||
		c.Servers[0].Tools == 0 || c.Servers[0].Tools != c.Servers[1].Tools || len(c.Signatures) != 0 {
		t.Errorf("budget 0: %s", r.Bytes)
	}
	if len(c.Errors) != 1 || c.Errors[0].Server != "broken" {
		t.Errorf("catalog errors %+v, want one for broken", c.Errors)
	}

	c = wire.Catalog{}
	d.Unix.Do(t, "GET", "/v1/catalog?budget=30&bias=echo", "", cwd...).Decode(t, &c)
	if c.Used > 30 || len(c.Signatures) < 2 || c.Signatures[0].Signature != "demo.echo({message: string})" ||
		c.Servers[0].Shown != c.Servers[1].Shown {
		t.Errorf("budget 30, bias echo: %+v", c)
	}

	if r := d.Unix.Do(t, "GET", "/v1/catalog?budget=lots", "", cwd...); r.StatusCode != 400 || !strings.Contains(string(r.Bytes), "budget") {
		t.Errorf("budget=lots: %d %s", r.StatusCode, r.Bytes)
	}
}
