package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/clientgen/catalog"
	"mcpx.dev/mcpx/wire"
)

// scopeTools lists the tools of every server the caller may use, as
// catalog tools beside their /v1/tools form (tagged with the server), and a
// problem for each server whose tools could not be listed.
func (s *server) scopeTools(r *http.Request, req broker.Request) (tools []catalog.Tool, raws []json.RawMessage, problems []*wire.Problem) {
	servers, err := s.b.ServersAt(req)
	if err != nil {
		return nil, nil, []*wire.Problem{s.problem(r, err)}
	}
	lists, errs := s.toolsOf(r.Context(), req, servers)
	for i, si := range servers {
		if errs[i] != nil {
			p := s.problem(r, errs[i])
			if p.Server == "" {
				p.Server = si.Name
			}
			problems = append(problems, p)
			continue
		}
		for _, raw := range lists[i].tools {
			var t struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
				Annotations struct {
					ReadOnly    *bool `json:"readOnlyHint"`
					Destructive *bool `json:"destructiveHint"`
					Idempotent  *bool `json:"idempotentHint"`
					OpenWorld   *bool `json:"openWorldHint"`
				} `json:"annotations"`
			}
			if json.Unmarshal(raw, &t) != nil || t.Name == "" {
				continue // not a Tool; /v1/tools passes it on, a search cannot name it
			}
			a := t.Annotations
			tools = append(tools, catalog.Tool{Server: si.Name, Name: t.Name, Description: t.Description,
				InputSchema: t.InputSchema,
				Tags:        toolTags(si, t.Name, hintTags(a.ReadOnly, a.Destructive, a.Idempotent, a.OpenWorld))})
			raws = append(raws, wire.TagServer(si.Name, raw))
		}
	}
	return tools, raws, problems
}

// toolTags are a tool's tags for search: its server's config tags (every
// tool has them), the config's tags for the tool by name, then those of its
// annotations, each once.
func toolTags(si broker.ServerInfo, tool string, hints []string) []string {
	var tags []string
	for _, group := range [][]string{si.Tags, si.ToolTags[tool], hints} {
		for _, t := range group {
			if !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
	}
	return tags
}

// hintTags are the tags a tool's annotations give it: each hint set to true
// (MCP tool annotations: readOnlyHint, destructiveHint, idempotentHint,
// openWorldHint) as read-only, destructive, idempotent and open-world.
func hintTags(readOnly, destructive, idempotent, openWorld *bool) []string {
	var tags []string
	for _, h := range []struct {
		set *bool
		tag string
	}{{readOnly, "read-only"}, {destructive, "destructive"}, {idempotent, "idempotent"}, {openWorld, "open-world"}} {
		if h.set != nil && *h.set {
			tags = append(tags, h.tag)
		}
	}
	return tags
}

// searchTools answers /v1/tools?q=terms&tag=t: the hits of catalog.Search
// over every server's tools, best first, with what each term scored.
func (s *server) searchTools(w http.ResponseWriter, r *http.Request, req broker.Request) error {
	tools, raws, problems := s.scopeTools(r, req)
	query := r.URL.Query()
	hits, match := catalog.Search(tools, strings.Fields(query.Get("q")), catalog.SearchOptions{Tags: query["tag"]})
	out := wire.ToolList{Tools: []json.RawMessage{}, Match: string(match), Hits: []wire.ToolHit{}, Errors: problems}
	for _, h := range hits {
		out.Tools = append(out.Tools, raws[h.Tool])
		out.Hits = append(out.Hits, hitDoc(h))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// hitDoc is one search hit as /v1/tools?q= lists it.
func hitDoc(h catalog.Hit) wire.ToolHit {
	hit := wire.ToolHit{Server: h.Server, Name: h.Name, Score: h.Score, Terms: []wire.TermScore{}}
	for _, ts := range h.Terms {
		term := wire.TermScore{Term: ts.Term, Points: ts.Points}
		for _, p := range ts.Parts {
			term.Parts = append(term.Parts, wire.ScorePart{Field: p.Field, Why: p.Why, Points: p.Points})
		}
		hit.Terms = append(hit.Terms, term)
	}
	return hit
}

// catalog answers /v1/catalog?budget=N&bias=terms: catalog.New of
// every server's tools.
func (s *server) catalog(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	query := r.URL.Query()
	budget := wire.DefaultCatalogBudget
	if b := query.Get("budget"); b != "" {
		budget, err = strconv.Atoi(b)
		if err != nil || budget < 0 {
			return &broker.Error{Kind: broker.KindBadRequest, Op: "catalog", Field: "budget",
				Msg: "budget is not a number of tokens", Hint: "give ?budget= a whole number, 0 or more"}
		}
	}
	tools, _, problems := s.scopeTools(r, req)
	c := catalog.New(tools, budget, strings.Fields(query.Get("bias")))
	writeJSON(w, http.StatusOK, catalogDoc(c, problems))
	return nil
}

// catalogDoc is c as GET /v1/catalog answers it.
func catalogDoc(c catalog.Catalog, problems []*wire.Problem) wire.Catalog {
	out := wire.Catalog{Budget: c.Budget, Used: c.Used, Servers: []wire.CatalogServer{},
		Signatures: []wire.CatalogSignature{}, Errors: problems}
	for _, cs := range c.Servers {
		out.Servers = append(out.Servers, wire.CatalogServer{Server: cs.Server, Tools: cs.Tools, Shown: cs.Shown})
	}
	for _, sig := range c.Signatures {
		out.Signatures = append(out.Signatures, wire.CatalogSignature{Server: sig.Server, Name: sig.Name, Signature: sig.Text, Cost: sig.Cost})
	}
	return out
}
