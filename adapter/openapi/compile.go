package openapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/internal/suggest"
)

// api is a compiled document: its tools in order and their operations.
type api struct {
	tools []adapter.Tool
	ops   map[string]*operation
	doc   *openapi3.T
}

// operation is what a call of one tool needs.
type operation struct {
	name   string
	method string
	path   string   // the path template, "/pets/{petId}"
	base   *url.URL // where the path is appended
	params []param
	body   *body
	args   map[string]bool // every argument name, for unknown ones
	wrap   bool            // an answer goes in {"result": …}
	schema bool            // the tool has an outputSchema
	scopes []string        // OAuth2 scopes its security asks for, nil = none
	oauth  bool            // its security names the clientCredentials scheme
}

// param is one parameter and the argument that carries it.
type param struct {
	arg           string // the argument's name in the input schema
	name, in      string
	style         string
	explode       bool
	allowReserved bool
	asJSON        bool // a parameter with content: serialised as JSON
	required      bool
}

// body is an operation's request body.
type body struct {
	mediaType string
	required  bool
}

// methods in the order operations of one path become tools.
var methods = []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodOptions, http.MethodHead, http.MethodPatch, http.MethodTrace}

// compile parses data and makes its tools.
func (o *opener) compile(ctx context.Context, data []byte) (*api, error) {
	doc, loc, err := o.parse(ctx, data)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("reading the document: %w", err)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, fmt.Errorf("reading the document: %w", err)
	}
	c := compiler{o: o, doc: doc, tree: tree, loc: loc, is30: !doc.IsOpenAPI31OrLater()}
	return c.compile()
}

type compiler struct {
	o    *opener
	doc  *openapi3.T
	tree any
	loc  *url.URL
	is30 bool
}

// pathOp is one operation of the document, in document order.
type pathOp struct {
	path, method string
	item         *openapi3.PathItem
	op           *openapi3.Operation
}

func (c *compiler) operations() []pathOp {
	var out []pathOp
	if c.doc.Paths == nil {
		return nil
	}
	for _, p := range c.doc.Paths.InMatchingOrder() {
		item := c.doc.Paths.Value(p)
		for _, m := range methods {
			if op := item.GetOperation(m); op != nil {
				out = append(out, pathOp{p, m, item, op})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b pathOp) int { return strings.Compare(a.path, b.path) })
	return out
}

func (c *compiler) compile() (*api, error) {
	all := c.operations()
	chosen, err := c.selected(all)
	if err != nil {
		return nil, err
	}
	names := toolNames(chosen)
	a := &api{ops: map[string]*operation{}, doc: c.doc}
	for i, po := range chosen {
		tool, op, err := c.tool(names[i], po)
		if err != nil {
			return nil, fmt.Errorf("operation %s %s: %w", po.method, po.path, err)
		}
		a.tools = append(a.tools, tool)
		a.ops[tool.Name] = op
	}
	return a, nil
}

// selected is the operations cfg.Operations names, in document order; a
// name that matches none is an error with the closest.
func (c *compiler) selected(all []pathOp) ([]pathOp, error) {
	if c.o.cfg.Operations == nil {
		return all, nil
	}
	var ids, tags []string
	for _, po := range all {
		ids = append(ids, po.op.OperationID)
		tags = append(tags, po.op.Tags...)
	}
	for i, want := range c.o.cfg.Operations {
		tag, isTag := strings.CutPrefix(want, "tag:")
		if isTag && !slices.Contains(tags, tag) || !isTag && !slices.Contains(ids, want) {
			what, known := "operationId", ids
			if isTag {
				what, known, want = "tag", tags, tag
			}
			hint := ""
			if s := suggest.Closest(want, known); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			return nil, fmt.Errorf("openapi.operations[%d]: the document has no %s %q%s", i, what, want, hint)
		}
	}
	return slices.DeleteFunc(all, func(po pathOp) bool {
		for _, want := range c.o.cfg.Operations {
			if tag, ok := strings.CutPrefix(want, "tag:"); ok && slices.Contains(po.op.Tags, tag) || want == po.op.OperationID {
				return false
			}
		}
		return true
	}), nil
}

// maxName is the longest tool name (api/mcp's MaxNameLen).
const maxName = 64

var (
	// fitsName is compiled on first use (its {1,64} makes a program of
	// some thousand instructions), so the sandbox's helper does not pay.
	fitsName  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })
	nameChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
	hasAlnum  = regexp.MustCompile(`[A-Za-z0-9]`)
)

// ToolName is the name of an operation before collisions are resolved: its
// operationId when that matches ^[A-Za-z0-9_-]{1,64}$; else the
// operationId, or if it has no letter or digit the lower-case method and
// the path ("get /pets/{petId}"), with each run of other characters made
// one "_" and "_" trimmed at both ends ("get_pets_petId"); a name still
// over 64 characters is cut to 55 and given "_" and 8 hex digits of the
// SHA-256 of the operationId (or "METHOD path").
func ToolName(operationID, method, path string) string {
	if fitsName().MatchString(operationID) {
		return operationID
	}
	orig, base := operationID, operationID
	if !hasAlnum.MatchString(operationID) {
		orig = method + " " + path
		base = strings.ToLower(method) + " " + path
	}
	name := strings.Trim(nameChars.ReplaceAllString(base, "_"), "_")
	if len(name) > maxName {
		sum := sha256.Sum256([]byte(orig))
		name = name[:maxName-9] + "_" + hex.EncodeToString(sum[:])[:8]
	}
	return name
}

// toolNames names ops uniquely: operationIds that fit keep their name;
// every other name that is taken gets "_2", "_3" … in document order.
func toolNames(ops []pathOp) []string {
	names := make([]string, len(ops))
	taken := map[string]bool{}
	for i, po := range ops {
		if fitsName().MatchString(po.op.OperationID) && !taken[po.op.OperationID] {
			names[i] = po.op.OperationID
			taken[names[i]] = true
		}
	}
	for i, po := range ops {
		if names[i] != "" {
			continue
		}
		base := ToolName(po.op.OperationID, po.method, po.path)
		name := base
		for n := 2; taken[name]; n++ {
			suffix := "_" + strconv.Itoa(n)
			name = base[:min(len(base), maxName-len(suffix))] + suffix
		}
		names[i] = name
		taken[name] = true
	}
	return names
}
