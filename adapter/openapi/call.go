package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/oauth2"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/internal/defaults"
	"mcpx.dev/mcpx/internal/orderedjson"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// maxAnswerBytes bounds a service's answer, as a child's message is bounded.
const maxAnswerBytes = defaults.MaxMessageBytes

// namespace is one instance: the compiled document and the request state.
type namespace struct {
	api     *api
	client  *http.Client
	headers http.Header        // the configured headers, expanded
	oauth   oauth2.TokenSource // nil = no clientCredentials flow
	// oauthAll sends the token on every call, not only those whose
	// security names the flow.
	oauthAll bool
}

func (n *namespace) ListTools(context.Context) ([]adapter.Tool, error) {
	return slices.Clone(n.api.tools), nil
}

func (n *namespace) Close() error { return nil }

// CallTool makes op's request and turns the answer into a result.
func (n *namespace) CallTool(ctx context.Context, call adapter.Call) (*adapter.Result, error) {
	op := n.api.ops[call.Name]
	if op == nil {
		return nil, fmt.Errorf("unknown tool %q", call.Name)
	}
	args, err := decodeArgs(call.Arguments)
	if err != nil {
		return nil, err
	}
	req, err := n.request(ctx, op, args, call.Arguments)
	if err != nil {
		return adapter.TextResult(err.Error(), true), nil
	}
	resp, err := n.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return adapter.TextResult(fmt.Sprintf("%s %s: %v", op.method, op.path, errors.Unwrap(err)), true), nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return adapter.TextResult(fmt.Sprintf("reading the answer: %v", err), true), nil
	case len(data) > maxAnswerBytes:
		return adapter.TextResult(fmt.Sprintf("the answer is larger than %d MiB", maxAnswerBytes>>20), true), nil
	}
	return answer(op, resp, data), nil
}

func decodeArgs(raw json.RawMessage) (*orderedjson.Object, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return &orderedjson.Object{Vals: map[string]any{}}, nil
	}
	v, err := orderedjson.Decode(raw)
	if err != nil {
		return nil, errNotObject
	}
	o, ok := v.(*orderedjson.Object)
	if !ok {
		return nil, errNotObject
	}
	return o, nil
}

// request builds op's request from the call's arguments; an error is the
// caller's (a missing or unknown argument), shown to it.
func (n *namespace) request(ctx context.Context, op *operation, args *orderedjson.Object, raw json.RawMessage) (*http.Request, error) {
	for _, k := range args.Keys {
		if !op.args[k] {
			return nil, fmt.Errorf("unknown argument %q; %s takes %s", k, op.name, known(op))
		}
	}
	path := op.path
	var query, cookies []string
	header := http.Header{}
	for i := range op.params {
		p := &op.params[i]
		v, ok := args.Get(p.arg)
		if !ok {
			if p.required {
				return nil, fmt.Errorf("missing argument %q (the %s parameter %s)", p.arg, p.in, p.name)
			}
			continue
		}
		switch p.in {
		case "path":
			path = strings.ReplaceAll(path, "{"+p.name+"}", p.pathValue(v))
		case "query":
			query = p.query(query, v)
		case "header":
			header.Set(p.name, p.simple(v, true))
		case "cookie":
			cookies = append(cookies, p.cookie(v))
		}
	}
	u := strings.TrimSuffix(op.base.String(), "/") + path
	if len(query) > 0 {
		u += "?" + strings.Join(query, "&")
	}
	var body io.Reader
	if op.body != nil {
		b, err := encodeBody(op, args, raw)
		if err != nil {
			return nil, err
		}
		if b != nil {
			body = bytes.NewReader(b)
			header.Set("Content-Type", op.body.mediaType)
		}
	}
	req, err := http.NewRequestWithContext(ctx, op.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("building the request: %v", err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	for k, vs := range n.headers { // the configured headers win
		req.Header[k] = vs
	}
	if len(cookies) > 0 {
		req.Header.Set("Cookie", strings.Join(cookies, "; "))
	}
	req.Header.Set("Accept", "application/json, */*;q=0.8")
	if (op.oauth || n.oauthAll) && n.oauth != nil {
		tok, err := n.oauth.Token()
		if err != nil {
			return nil, fmt.Errorf("getting an OAuth2 token (client credentials): %v", tokenError(err))
		}
		tok.SetAuthHeader(req)
	}
	return req, nil
}

// encodeBody is the request body: the "body" argument's JSON as the
// caller wrote it, a form, or a string as it is; nil when absent.
func encodeBody(op *operation, args *orderedjson.Object, raw json.RawMessage) ([]byte, error) {
	v, ok := args.Get("body")
	if !ok {
		if op.body.required {
			return nil, errors.New(`missing argument "body" (the request body)`)
		}
		return nil, nil
	}
	switch {
	case isJSON(op.body.mediaType):
		var b bytes.Buffer
		if err := json.Compact(&b, jsonrpc.Member(raw, `"body"`)); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	case op.body.mediaType == "application/x-www-form-urlencoded":
		s, err := form(v)
		return []byte(s), err
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("body: want a string (sent as %s)", op.body.mediaType)
	}
	return []byte(s), nil
}

func known(op *operation) string {
	names := make([]string, 0, len(op.args))
	for k := range op.args {
		names = append(names, k)
	}
	if len(names) == 0 {
		return "no arguments"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// answer is the result of a service's answer: for 2xx, a JSON object as
// structuredContent (anything else JSON as {"result": …}; the JSON also as
// text, as MCP asks of structured results), other content as text; for
// any other status an error result "<method> <path>: HTTP <status>" with
// the body.
func answer(op *operation, resp *http.Response, data []byte) *adapter.Result {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("%s %s: HTTP %s", op.method, op.path, status(resp.StatusCode))
		if b := bytes.TrimSpace(data); len(b) > 0 {
			msg += "\n" + string(b)
		}
		return adapter.TextResult(msg, true)
	}
	trimmed := bytes.TrimSpace(data)
	if !isJSON(resp.Header.Get("Content-Type")) || !json.Valid(trimmed) {
		if len(trimmed) == 0 && op.schema {
			// No content (204): a structured null, as the schema allows.
			trimmed = []byte("null")
		} else {
			return adapter.TextResult(string(data), false)
		}
	}
	var b bytes.Buffer
	_ = json.Compact(&b, trimmed)
	structured := b.Bytes()
	isObj := structured[0] == '{'
	wrap := !isObj
	if op.schema {
		wrap = op.wrap
	}
	if wrap {
		structured = append(append([]byte(`{"result":`), structured...), '}')
	} else if !isObj {
		return adapter.TextResult(b.String(), false)
	}
	return &adapter.Result{Content: []adapter.Content{{Type: "text", Text: b.String()}}, StructuredContent: structured}
}
