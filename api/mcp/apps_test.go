package mcp_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
)

// startApps is a daemon with the demo server and its MCP App (EnvApps).
func startApps(t *testing.T) *apitest.Daemon {
	t.Helper()
	return apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global", "env": {"` + demo.EnvApps + `": "1"}}`})
}

// asJSON is v through JSON, for comparing what a client decoded with
// what the demo server set.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	json.Unmarshal(b, &out)
	return out
}

// TestMCPAppsPassThrough: an MCP App's tool _meta (ui.resourceUri and the
// older ui/resourceUri) and its ui:// resource (MIME type
// text/html;profile=mcp-app, _meta.ui.csp in the listing and the contents)
// reach REST and both MCP paths as the child sent them.
func TestMCPAppsPassThrough(t *testing.T) {
	d := startApps(t)
	wantToolMeta := asJSON(t, map[string]any{"ui": map[string]any{"resourceUri": demo.CardURI, "visibility": []any{"model", "app"}}, "ui/resourceUri": demo.CardURI})
	wantUIMeta := asJSON(t, map[string]any{"ui": map[string]any{"csp": demo.CardCSP, "prefersBorder": true}})
	check := func(via, what string, got, want any) {
		t.Helper()
		if g := asJSON(t, got); !reflect.DeepEqual(g, want) {
			t.Errorf("%s: %s = %v, want %v", via, what, g, want)
		}
	}
	type item struct {
		Name, URI, MimeType, Text string
		Meta                      any `json:"_meta"`
	}
	find := func(items []item, key string) item {
		for _, it := range items {
			if it.Name == key || it.URI == key {
				return it
			}
		}
		t.Fatalf("no %s among %+v", key, items)
		return item{}
	}

	// REST: the server's tools, every server's tools, its resources, a read.
	var st struct{ Tools []item }
	d.Unix.Do(t, "GET", "/v1/servers/demo/tools", "").Decode(t, &st)
	check("REST tools", "show-card _meta", find(st.Tools, "show-card").Meta, wantToolMeta)
	var all struct{ Tools []item }
	d.Unix.Do(t, "GET", "/v1/tools", "").Decode(t, &all)
	check("REST /v1/tools", "show-card _meta", find(all.Tools, "show-card").Meta, wantToolMeta)
	var rl struct{ Resources []item }
	d.Unix.Do(t, "GET", "/v1/servers/demo/resources", "").Decode(t, &rl)
	ui := find(rl.Resources, demo.CardURI)
	check("REST resources", "the ui resource's mimeType", ui.MimeType, demo.CardMIME)
	check("REST resources", "the ui resource's _meta", ui.Meta, wantUIMeta)
	var rr struct{ Contents []item }
	d.Unix.Do(t, "GET", "/v1/servers/demo/resources/read?uri="+demo.CardURI, "").Decode(t, &rr)
	if len(rr.Contents) != 1 || rr.Contents[0].Text != demo.CardHTML {
		t.Fatalf("REST read: %+v", rr.Contents)
	}
	check("REST read", "mimeType", rr.Contents[0].MimeType, demo.CardMIME)
	check("REST read", "_meta", rr.Contents[0].Meta, wantUIMeta)

	// MCP: one server's path, names unchanged, and the aggregate.
	for path, name := range map[string]string{"/mcp/demo": "show-card", "/mcp": "demo__show-card"} {
		_, cs := d.ConnectMCP(t, path, "2025-11-25", nil)
		tools, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var card *mcp.Tool
		for _, tl := range tools.Tools {
			if tl.Name == name {
				card = tl
			}
		}
		if card == nil {
			t.Fatalf("%s lists no %s", path, name)
		}
		check(path, "show-card _meta", card.Meta, wantToolMeta)
		res, err := cs.ListResources(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, r := range res.Resources {
			if r.URI == demo.CardURI {
				found = true
				check(path, "the ui resource's mimeType", r.MIMEType, demo.CardMIME)
				check(path, "the ui resource's _meta", r.Meta, wantUIMeta)
			}
		}
		if !found {
			t.Fatalf("%s lists no %s", path, demo.CardURI)
		}
		read, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: demo.CardURI})
		if err != nil {
			t.Fatal(err)
		}
		if len(read.Contents) != 1 || read.Contents[0].Text != demo.CardHTML || read.Contents[0].MIMEType != demo.CardMIME {
			t.Fatalf("%s read: %+v", path, read.Contents)
		}
		check(path, "read _meta", read.Contents[0].Meta, wantUIMeta)
	}
}

// TestMCPPromptsAndResourcesListChanged: a child whose prompts and
// resources change (the demo's grow tool adds one of each) has the MCP
// endpoint tell its clients, on /mcp/demo and /mcp alike, and the new ones
// are listed.
func TestMCPPromptsAndResourcesListChanged(t *testing.T) {
	d := startApps(t)
	for path, prefix := range map[string]string{"/mcp/demo": "", "/mcp": "demo__"} {
		changed := make(chan string, 10)
		opts := &mcp.ClientOptions{
			PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { changed <- "prompts" },
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed <- "resources" },
		}
		_, cs := d.ConnectMCP(t, path, "2025-11-25", opts)
		n := apitest.CallText(t, cs, &mcp.CallToolParams{Name: prefix + "grow"})
		seen := map[string]bool{}
		timeout := time.After(30 * time.Second)
		for !seen["prompts"] || !seen["resources"] {
			select {
			case what := <-changed:
				seen[what] = true
			case <-timeout:
				t.Fatalf("%s: list changes seen %v within 30s, want prompts and resources", path, seen)
			}
		}
		prompts, err := cs.ListPrompts(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, p := range prompts.Prompts {
			found = found || p.Name == prefix+"grown-"+n
		}
		if !found {
			t.Errorf("%s: after grow, prompts %+v lack %sgrown-%s", path, prompts.Prompts, prefix, n)
		}
		res, err := cs.ListResources(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		found = false
		for _, r := range res.Resources {
			found = found || r.URI == "demo://grown/"+n
		}
		if !found {
			t.Errorf("%s: after grow, resources lack demo://grown/%s", path, n)
		}
	}
}
