package broker

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// withCallerRoots wraps h so that the roots a caller answers a child's
// roots/list with are only those the caller's rights reach (callerRoots):
// a root is kept when it is a file URI whose canonical directory the
// caller may use; the owner's are kept as they are. What the client
// declares never widens what its rights allow.
func withCallerRoots(h InputHandler, c Caller) InputHandler {
	return func(ctx context.Context, req InputRequest) (json.RawMessage, error) {
		res, err := h(ctx, req)
		if err != nil || req.Method != jsonrpc.MethodRootsList || c.Owner {
			return res, err
		}
		return allowedRoots(res, c), nil
	}
}

// allowedRoots is the roots/list result res with only the roots c may use.
func allowedRoots(res json.RawMessage, c Caller) json.RawMessage {
	var r struct {
		Roots []json.RawMessage `json:"roots"`
	}
	json.Unmarshal(res, &r) //nolint:errcheck // unreadable: no roots
	kept := []json.RawMessage{}
	for _, raw := range r.Roots {
		var root struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(raw, &root) != nil {
			continue
		}
		u, err := url.Parse(root.URI)
		if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !filepath.IsAbs(u.Path) {
			continue
		}
		canon, err := filepath.EvalSymlinks(filepath.Clean(u.Path))
		if err != nil || !c.Rights.MayUseDir(canon) {
			continue
		}
		kept = append(kept, raw)
	}
	out, _ := json.Marshal(map[string]any{"roots": kept})
	return out
}
