package clientgen

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"mcpx.dev/mcpx/internal/orderedjson"
	"mcpx.dev/mcpx/internal/toolschema"
	"mcpx.dev/mcpx/internal/tsident"
)

// Producer hints: a tool that needs an id (pageId, issue_id) can say which
// tools of its server give one — those whose names mention the id's noun
// and that do not need it themselves (list_pages, new_page) — as an @see in
// the property's doc. It is a guess from names alone, and says so.

// maxProducers bounds the tools one hint names.
const maxProducers = 4

// idName matches a property naming an id of a noun: pageId, page_id,
// pageID, pageIds, page_ids.
var idName = regexp.MustCompile(`^(.*[A-Za-z0-9])(?:Ids?|IDs?|_ids?)$`)

// producerHints returns, per tool of server among tools, its required
// properties' hints by property name.
func producerHints(tools []Tool, server string) map[string]map[string]string {
	var group []Tool
	required := map[string][]string{} // tool → its required top-level properties
	for _, t := range tools {
		if t.Server != server {
			continue
		}
		group = append(group, t)
		required[t.Name] = requiredProps(t.InputSchema)
	}
	out := map[string]map[string]string{}
	for _, t := range group {
		for _, prop := range required[t.Name] {
			m := idName.FindStringSubmatch(prop)
			if m == nil {
				continue
			}
			noun := strings.Join(nameWords(m[1]), " ")
			var producers []string
			for _, p := range group {
				if p.Name == t.Name || slices.Contains(required[p.Name], prop) || !mentions(p.Name, noun) {
					continue
				}
				producers = append(producers, p.Name)
			}
			if len(producers) == 0 {
				continue
			}
			slices.Sort(producers)
			more := ""
			if len(producers) > maxProducers {
				more = fmt.Sprintf(" and %d more", len(producers)-maxProducers)
				producers = producers[:maxProducers]
			}
			if out[t.Name] == nil {
				out[t.Name] = map[string]string{}
			}
			out[t.Name][prop] = fmt.Sprintf("@see %s%s — a guess from names: tools of this server that mention %q and do not need %s",
				strings.Join(producers, ", "), more, noun, prop)
		}
	}
	return out
}

// requiredProps are the top-level properties an input schema requires
// (through a root $ref, allOf, anyOf and oneOf, as the client reads them).
func requiredProps(schema json.RawMessage) []string {
	root, err := orderedjson.Decode(toolschema.Normalize(schema))
	if err != nil || root == nil {
		return nil
	}
	var req []string
	for _, p := range toolschema.Arguments(root).Props {
		if p.Required {
			req = append(req, p.Name)
		}
	}
	return req
}

// mentions reports whether a tool's name has the noun's words in a row
// ("list_pages" mentions "page", "get_pull_request" "pull request"),
// plural or not.
func mentions(name, noun string) bool {
	ws := nameWords(name)
	want := strings.Fields(noun)
	for i := 0; i+len(want) <= len(ws); i++ {
		ok := true
		for j, w := range want {
			got := ws[i+j]
			if got != w && got != w+"s" && got != w+"es" {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// nameWords splits a name into lower-case words at punctuation and at
// camelCase humps: "get_pullRequest" is get, pull, request.
func nameWords(name string) []string {
	var out []string
	for _, w := range tsident.Words(name) {
		start := 0
		for i := 1; i < len(w); i++ {
			if w[i] >= 'A' && w[i] <= 'Z' && w[i-1] >= 'a' && w[i-1] <= 'z' {
				out = append(out, strings.ToLower(w[start:i]))
				start = i
			}
		}
		out = append(out, strings.ToLower(w[start:]))
	}
	return out
}
