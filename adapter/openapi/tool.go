package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"mcpx.dev/mcpx/adapter"
)

// An operation's input schema is an object with one property per
// parameter, named as the parameter is, and "body" for the request body:
// flat, so a model fills {"petId": 1, "status": ["sold"]} as the service's
// own documentation reads. A name two parameters share (a path "id" and a
// query "id"), and a parameter named "body", are kept apart as
// "<in>.<name>" ("path.id", "query.id", "query.body").

// ignoredHeaders are header parameters OpenAPI says to ignore: the
// content negotiation and the security scheme set them.
var ignoredHeaders = []string{"accept", "content-type", "authorization"}

func (c *compiler) tool(name string, po pathOp) (adapter.Tool, *operation, error) {
	op := &operation{name: name, method: po.method, path: po.path, args: map[string]bool{}}
	base, err := c.baseURL(po)
	if err != nil {
		return adapter.Tool{}, nil, err
	}
	op.base = base
	s := newSchemas(c.tree, c.is30)
	props := map[string]any{}
	var required []string
	for _, np := range c.params(po) {
		schema, err := c.paramSchema(s, np.Value)
		if err != nil {
			return adapter.Tool{}, nil, err
		}
		p := paramOf(np.Value)
		p.arg = np.arg
		op.params = append(op.params, p)
		props[p.arg] = schema
		if p.required {
			required = append(required, p.arg)
		}
	}
	if rb := po.op.RequestBody; rb != nil && rb.Value != nil {
		schema, b, err := c.bodySchema(s, rb.Value)
		if err != nil {
			return adapter.Tool{}, nil, err
		}
		if b != nil {
			op.body = b
			props["body"] = schema
			if b.required {
				required = append(required, "body")
			}
		}
	}
	for k := range props {
		op.args[k] = true
	}
	input := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		input["required"] = required
	}
	output, err := c.output(s, po.op, op)
	if err != nil {
		return adapter.Tool{}, nil, err
	}
	if s.err != nil {
		return adapter.Tool{}, nil, s.err
	}
	s.withDefs(input)
	tool := adapter.Tool{Name: name, Title: po.op.Summary, Description: description(po)}
	if tool.InputSchema, err = json.Marshal(input); err != nil {
		return adapter.Tool{}, nil, err
	}
	if output != nil {
		s.withDefs(output)
		if tool.OutputSchema, err = json.Marshal(output); err != nil {
			return adapter.Tool{}, nil, err
		}
	}
	tool.Annotations = annotations(po)
	c.security(po.op, op)
	return tool, op, nil
}

// namedParam is a parameter and its argument name.
type namedParam struct {
	arg   string
	Value *openapi3.Parameter
}

// params are the path item's parameters overridden by the operation's, in
// that order, with their argument names.
func (c *compiler) params(po pathOp) []namedParam {
	var ps []*openapi3.Parameter
	add := func(refs openapi3.Parameters) {
		for _, r := range refs {
			p := r.Value
			if p == nil || p.In == openapi3.ParameterInHeader && c.ignoredHeader(p.Name) {
				continue
			}
			if i := slices.IndexFunc(ps, func(q *openapi3.Parameter) bool { return q.In == p.In && q.Name == p.Name }); i >= 0 {
				ps[i] = p
				continue
			}
			ps = append(ps, p)
		}
	}
	add(po.item.Parameters)
	add(po.op.Parameters)
	count := map[string]int{}
	for _, p := range ps {
		count[p.Name]++
	}
	out := make([]namedParam, len(ps))
	for i, p := range ps {
		arg := p.Name
		if count[p.Name] > 1 || p.Name == "body" {
			arg = p.In + "." + p.Name
		}
		out[i] = namedParam{arg, p}
	}
	return out
}

// ignoredHeader reports whether a header parameter is left out: one
// OpenAPI says to ignore, or one the config sets (the configured value is
// sent, and a caller cannot replace it).
func (c *compiler) ignoredHeader(name string) bool {
	if slices.Contains(ignoredHeaders, strings.ToLower(name)) {
		return true
	}
	for k := range c.o.cfg.Headers {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

func paramOf(p *openapi3.Parameter) param {
	out := param{name: p.Name, in: p.In, style: p.Style, allowReserved: p.AllowReserved, required: p.Required || p.In == openapi3.ParameterInPath}
	if out.style == "" {
		out.style = map[string]string{"query": "form", "cookie": "form", "path": "simple", "header": "simple"}[p.In]
	}
	out.explode = out.style == "form"
	if p.Explode != nil {
		out.explode = *p.Explode
	}
	out.asJSON = p.Schema == nil && len(p.Content) > 0
	return out
}

// paramSchema is a parameter's schema with its description.
func (c *compiler) paramSchema(s *schemas, p *openapi3.Parameter) (any, error) {
	ref := p.Schema
	if ref == nil {
		for _, mt := range p.Content {
			ref = mt.Schema
			break
		}
	}
	schema := map[string]any{}
	if ref != nil {
		v, err := toJSON(ref)
		if err != nil {
			return nil, err
		}
		if m, ok := s.convert(v).(map[string]any); ok {
			schema = m
		}
	}
	if p.Description != "" {
		schema["description"] = p.Description
	}
	if p.Deprecated {
		schema["deprecated"] = true
	}
	return schema, nil
}

// bodySchema is the request body's schema and how it is sent: JSON when a
// JSON media type is offered, else form-urlencoded, else a string sent as
// it is under the first media type. nil when the body has no content.
func (c *compiler) bodySchema(s *schemas, rb *openapi3.RequestBody) (any, *body, error) {
	types := slices.Sorted(func(yield func(string) bool) {
		for k := range rb.Content {
			if !yield(k) {
				return
			}
		}
	})
	if len(types) == 0 {
		return nil, nil, nil
	}
	pick := types[0]
	rank := func(mt string) int {
		switch {
		case isJSON(mt):
			return 0
		case mt == "application/x-www-form-urlencoded":
			return 1
		}
		return 2
	}
	for _, mt := range types {
		if rank(mt) < rank(pick) {
			pick = mt
		}
	}
	var schema any = map[string]any{"type": "string"}
	if rank(pick) < 2 {
		schema = map[string]any{}
		if ref := rb.Content[pick].Schema; ref != nil {
			v, err := toJSON(ref)
			if err != nil {
				return nil, nil, err
			}
			schema = s.convert(v)
		}
	}
	if m, ok := schema.(map[string]any); ok && rb.Description != "" {
		m["description"] = rb.Description
	}
	return schema, &body{mediaType: pick, required: rb.Required}, nil
}

// output is the output schema from the first 2xx JSON response: the
// response's schema if it admits only objects, else {"result": schema}.
func (c *compiler) output(s *schemas, o *openapi3.Operation, op *operation) (map[string]any, error) {
	if o.Responses == nil {
		return nil, nil
	}
	codes := slices.DeleteFunc(slices.Collect(func(yield func(string) bool) {
		for k := range o.Responses.Map() {
			if !yield(k) {
				return
			}
		}
	}), func(k string) bool { return !strings.HasPrefix(k, "2") })
	slices.Sort(codes) // "200" < "201" < "2XX"
	for _, code := range codes {
		r := o.Responses.Value(code)
		if r == nil || r.Value == nil {
			continue
		}
		for _, mt := range slices.Sorted(func(yield func(string) bool) {
			for k := range r.Value.Content {
				if !yield(k) {
					return
				}
			}
		}) {
			media := r.Value.Content[mt]
			if !isJSON(mt) || media.Schema == nil {
				continue
			}
			v, err := toJSON(media.Schema)
			if err != nil {
				return nil, err
			}
			schema := s.convert(v)
			op.schema = true
			if s.isObject(schema) {
				m := schema.(map[string]any)
				m["type"] = "object" // a root $ref gets the type MCP requires beside it
				return m, nil
			}
			op.wrap = true
			return map[string]any{"type": "object", "properties": map[string]any{"result": schema}, "required": []string{"result"}}, nil
		}
	}
	return nil, nil
}

// baseURL is where op's path is appended: the configured base URL, else
// the operation's, path's or document's first server, with its variables'
// defaults, resolved against the spec's URL.
func (c *compiler) baseURL(po pathOp) (*url.URL, error) {
	if b := c.o.cfg.BaseURL; b != "" {
		return url.Parse(b)
	}
	servers := c.doc.Servers
	if po.item.Servers != nil {
		servers = po.item.Servers
	}
	if po.op.Servers != nil {
		servers = *po.op.Servers
	}
	raw := "/"
	if len(servers) > 0 && servers[0] != nil {
		raw = servers[0].URL
		for name, v := range servers[0].Variables {
			if v != nil {
				raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
			}
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %w", raw, err)
	}
	if !u.IsAbs() {
		if c.loc.Scheme == "" {
			return nil, fmt.Errorf("the document's server URL %q is relative and the spec is a file: set openapi.baseUrl to the service's URL", raw)
		}
		u = c.loc.ResolveReference(u)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("the document's server URL %q is not http(s): set openapi.baseUrl", raw)
	}
	return u, nil
}

// security records whether op is called with the clientCredentials token
// and which scopes it asks for.
func (c *compiler) security(o *openapi3.Operation, op *operation) {
	reqs := c.doc.Security
	if o.Security != nil {
		reqs = *o.Security
	}
	for _, req := range reqs {
		for name, scopes := range req {
			if scheme := c.clientCredentials(name); scheme != nil {
				op.oauth = true
				op.scopes = append(op.scopes, scopes...)
			}
		}
	}
}

// clientCredentials is the named scheme's clientCredentials flow, nil if
// it has none.
func (c *compiler) clientCredentials(name string) *openapi3.OAuthFlow {
	if c.doc.Components == nil {
		return nil
	}
	ref := c.doc.Components.SecuritySchemes[name]
	if ref == nil || ref.Value == nil || ref.Value.Type != "oauth2" || ref.Value.Flows == nil {
		return nil
	}
	return ref.Value.Flows.ClientCredentials
}

func description(po pathOp) string {
	d := strings.TrimSpace(po.op.Description)
	sum := strings.TrimSpace(po.op.Summary)
	switch {
	case d == "":
		d = sum
	case sum != "" && !strings.HasPrefix(d, sum):
		d = sum + "\n\n" + d
	}
	if d == "" {
		d = po.method + " " + po.path
	}
	if po.op.Deprecated {
		d += "\n\n(deprecated)"
	}
	return d
}

// annotations are MCP's hints from the method's semantics (RFC 9110
// section 9.2): GET and HEAD are safe, PUT and DELETE idempotent; every
// operation reaches a service outside mcpx.
func annotations(po pathOp) json.RawMessage {
	a := map[string]any{"openWorldHint": true}
	if po.op.Summary != "" {
		a["title"] = po.op.Summary
	}
	switch po.method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		a["readOnlyHint"] = true
	case http.MethodPut:
		a["idempotentHint"] = true
	case http.MethodDelete:
		a["idempotentHint"], a["destructiveHint"] = true, true
	}
	b, _ := json.Marshal(a)
	return b
}

func toJSON(ref *openapi3.SchemaRef) (any, error) {
	b, err := json.Marshal(ref)
	if err != nil {
		return nil, err
	}
	var v any
	return v, json.Unmarshal(b, &v)
}

// isJSON reports whether a media type is JSON: application/json or a
// +json suffix.
func isJSON(mt string) bool {
	t, _, err := mime.ParseMediaType(mt)
	if err != nil {
		return false
	}
	return t == "application/json" || strings.HasSuffix(t, "+json")
}

var errNotObject = errors.New("arguments are not a JSON object")

// status names an HTTP status as "404 Not Found".
func status(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}
