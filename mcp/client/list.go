package client

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// maxPages bounds one listing: a child that keeps handing out new cursors
// ends the listing with an error instead of looping forever.
const maxPages = 10000

// Tools returns every tool the child offers (all pages of tools/list) as one
// JSON array of Tool objects, as the child sent them. The array is cached
// until the child sends notifications/tools/list_changed. The caller must not
// modify it.
func (s *Session) Tools(ctx context.Context) (json.RawMessage, error) {
	return s.list(ctx, &s.tools, jsonrpc.MethodToolsList, `"tools"`)
}

// Resources returns every resource (all pages of resources/list) as one JSON
// array, cached until notifications/resources/list_changed. The caller must
// not modify it.
func (s *Session) Resources(ctx context.Context) (json.RawMessage, error) {
	return s.list(ctx, &s.resources, jsonrpc.MethodResourcesList, `"resources"`)
}

// ResourceTemplates returns every resource template (all pages of
// resources/templates/list) as one JSON array, cached until
// notifications/resources/list_changed. The caller must not modify it.
func (s *Session) ResourceTemplates(ctx context.Context) (json.RawMessage, error) {
	return s.list(ctx, &s.templates, jsonrpc.MethodResourceTemplatesList, `"resourceTemplates"`)
}

// Prompts returns every prompt (all pages of prompts/list) as one JSON array,
// cached until notifications/prompts/list_changed. The caller must not modify
// it.
func (s *Session) Prompts(ctx context.Context) (json.RawMessage, error) {
	return s.list(ctx, &s.prompts, jsonrpc.MethodPromptsList, `"prompts"`)
}

// Ping sends ping and waits for the child's answer: a health check
// (spec: basic/utilities/ping). The 2026-07-28 revision has no ping: a
// stateless child is sent server/discover instead, which it must serve.
func (s *Session) Ping(ctx context.Context) error {
	method := jsonrpc.MethodPing
	if s.meta != nil {
		method = jsonrpc.MethodDiscover
	}
	_, err := s.Call(ctx, method, nil, nil)
	return err
}

// ReadResource calls resources/read for uri and returns the
// ReadResourceResult as the child sent it.
func (s *Session) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	params, _ := json.Marshal(struct {
		URI string `json:"uri"`
	}{uri})
	return s.Call(ctx, jsonrpc.MethodResourcesRead, params, nil)
}

// GetPrompt calls prompts/get for the prompt name with args (nil = none)
// and returns the GetPromptResult as the child sent it.
func (s *Session) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	params, _ := json.Marshal(struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments,omitempty"`
	}{name, args})
	return s.Call(ctx, jsonrpc.MethodPromptsGet, params, nil)
}

// list fetches all pages of method and joins the key arrays.
//
// Spec (server/utilities/pagination): "The server's response includes: The
// current page of results, An optional nextCursor field if more results
// exist". "Clients MUST treat cursors as opaque tokens" and "Clients MUST NOT
// assume a fixed page size".
func (s *Session) list(ctx context.Context, cache *listCache, method, key string) (json.RawMessage, error) {
	val, gen := cache.get()
	if val != nil {
		return val, nil
	}
	out := []byte{'['}
	n := 0
	var refused map[string]string // tools left out, by name: why
	check := cache == &s.tools && s.mirrorsHeaders()
	var cursor []byte // raw JSON string
	seen := make(map[string]bool)
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("listing %s: more than %d pages", method, maxPages)
		}
		params := []byte("{}")
		if cursor != nil {
			params = append(append([]byte(`{"cursor":`), cursor...), '}')
		}
		res, err := s.Call(ctx, method, params, nil)
		if err != nil {
			return nil, err
		}
		var items, next []byte
		if err := jsonrpc.Members(res, func(k, v []byte) {
			switch string(k) {
			case key:
				items = v
			case `"nextCursor"`:
				next = v
			}
		}); err != nil {
			return nil, fmt.Errorf("listing %s: result is %w", method, err)
		}
		if items != nil {
			if err := jsonrpc.Elements(items, func(v []byte) {
				if check {
					if name, why := badTool(v); why != "" {
						if refused == nil {
							refused = map[string]string{}
						}
						refused[name] = why
						s.log.Warn("tool refused: its x-mcp-header annotation is invalid (SEP-2243)", "tool", name, "reason", why)
						return
					}
				}
				if n > 0 {
					out = append(out, ',')
				}
				out = append(out, v...)
				n++
			}); err != nil {
				return nil, fmt.Errorf("listing %s: %s is %w", method, key, err)
			}
		}
		c, ok := jsonrpc.Unquote(next)
		if !ok || c == "" {
			break
		}
		if seen[c] {
			return nil, fmt.Errorf("listing %s: child repeated cursor %s", method, next)
		}
		seen[c] = true
		cursor = next
	}
	out = append(out, ']')
	if cache.put(out, refused, gen) && s.opts.OnList != nil {
		s.opts.OnList(method, out)
	}
	return out, nil
}

// mirrorsHeaders reports whether the session mirrors tool arguments into
// HTTP headers (a stateless session over Streamable HTTP): its tools with
// invalid x-mcp-header annotations are left out of Tools and refused by
// CallTool.
func (s *Session) mirrorsHeaders() bool { return s.meta != nil && s.x.SetToolLookup != nil }

// badTool returns a listed tool's name and, if its x-mcp-header
// annotations are invalid, why (jsonrpc.CheckParamHeaders).
func badTool(tool []byte) (name, why string) {
	err := jsonrpc.CheckParamHeaders(tool)
	if err == nil {
		return "", ""
	}
	var named struct {
		Name string `json:"name"`
	}
	json.Unmarshal(tool, &named) //nolint:errcheck // a tool without a name is refused as ""
	return named.Name, err.Error()
}

// refusedTool returns the error of a call to a tool the session refused,
// nil if it did not: -32602, as for an unknown tool (the tool is not in
// Tools), saying why. It lists the tools first if they are not cached,
// which the call's argument headers need anyway.
func (s *Session) refusedTool(ctx context.Context, name string) error {
	if !s.mirrorsHeaders() {
		return nil
	}
	if _, err := s.Tools(ctx); err != nil {
		return nil // the call says what is wrong, if anything
	}
	why := s.tools.refusedWhy(name)
	if why == "" {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("unknown tool %q: mcpx refused the server's definition of it (SEP-2243): %s", name, why)}
}

// HasTool reports whether the child lists a tool by that name. It answers
// from an index of the cached tools/list, so checking a name before each
// call costs a map lookup, not a parse.
func (s *Session) HasTool(ctx context.Context, name string) (bool, error) {
	_, found, err := s.Tool(ctx, name)
	return found, err
}

// Tool returns the Tool object the child lists by that name, as it sent
// it, from the same index as HasTool. The caller must not modify it.
func (s *Session) Tool(ctx context.Context, name string) (tool json.RawMessage, found bool, err error) {
	for {
		if tool, found, cached := s.tools.lookup(name); cached {
			return tool, found, nil
		}
		// Not cached (or a list_changed raced us): list, then look again.
		if _, err := s.Tools(ctx); err != nil {
			return nil, false, err
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
	}
}

// listCache holds one joined listing until the child says it changed.
type listCache struct {
	mu    sync.Mutex
	gen   uint64                     // guarded by mu; bumped by each list_changed
	val   json.RawMessage            // guarded by mu; nil = not cached
	names map[string]json.RawMessage // guarded by mu; val's items by their "name" members, built on first lookup
	// refused are the items left out of val, by name: why (tools only,
	// see mirrorsHeaders). Guarded by mu.
	refused map[string]string
}

// refusedWhy says why the item name was left out of the cached listing,
// "" if it was not.
func (c *listCache) refusedWhy(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused[name]
}

// lookup returns val's item with that name and whether there is one, and
// whether val is cached at all. The first by a name wins.
func (c *listCache) lookup(name string) (item json.RawMessage, found, cached bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.val == nil {
		return nil, false, false
	}
	if c.names == nil {
		var items []json.RawMessage
		json.Unmarshal(c.val, &items) // val was checked to be an array of objects when listed
		c.names = make(map[string]json.RawMessage, len(items))
		for _, it := range items {
			var named struct {
				Name string `json:"name"`
			}
			json.Unmarshal(it, &named) //nolint:errcheck // an object; a non-string name indexes as ""
			if _, dup := c.names[named.Name]; !dup {
				c.names[named.Name] = it
			}
		}
	}
	item, found = c.names[name]
	return item, found, true
}

func (c *listCache) get() (json.RawMessage, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.val, c.gen
}

// put caches val unless a list_changed arrived since the listing began;
// it reports whether it did.
func (c *listCache) put(val json.RawMessage, refused map[string]string, gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen {
		c.val = val
		c.names = nil
		c.refused = refused
		return true
	}
	return false
}

func (c *listCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.val = nil
	c.names = nil
}

// listChanged tells Options.OnListChanged about each invalidated list.
func (s *Session) listChanged(methods ...string) {
	if s.opts.OnListChanged == nil {
		return
	}
	for _, m := range methods {
		s.opts.OnListChanged(m)
	}
}
