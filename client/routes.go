package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"mcpx.dev/mcpx/wire"
)

// One method per route of wire's table. The document methods also return
// the body as the daemon sent it, for callers that print it unchanged; most
// callers ignore it.

// Healthz reports whether the daemon is serving, and its version.
func (c *Client) Healthz(ctx context.Context) (*wire.Health, []byte, error) {
	return get[wire.Health](ctx, c, wire.OpHealthz, nil, "")
}

// Whoami shows how the daemon sees cl: identity, rights, declared context.
func (c *Client) Whoami(ctx context.Context, cl Caller) (*wire.Whoami, []byte, error) {
	return get[wire.Whoami](ctx, c, wire.OpWhoami, &cl, "")
}

// Servers lists the configured servers.
func (c *Client) Servers(ctx context.Context) (*wire.ServerList, []byte, error) {
	return get[wire.ServerList](ctx, c, wire.OpListServers, nil, "")
}

// Server describes one configured server.
func (c *Client) Server(ctx context.Context, server string) (*wire.Server, []byte, error) {
	return get[wire.Server](ctx, c, wire.OpGetServer, nil, "", server)
}

// ServerTools lists one server's tools as the child in cl's scope lists
// them (untagged; see wire.TagServer).
func (c *Client) ServerTools(ctx context.Context, cl Caller, server string) (*wire.ServerTools, []byte, error) {
	return get[wire.ServerTools](ctx, c, wire.OpListServerTools, &cl, "", server)
}

// Sandbox says what would confine the child that serves cl at its cwd
// for server (docs/sandbox.md).
func (c *Client) Sandbox(ctx context.Context, cl Caller, server string) (*wire.Sandbox, []byte, error) {
	return get[wire.Sandbox](ctx, c, wire.OpGetSandbox, &cl, "", server)
}

// Tools lists every server's tools, each tagged with its server; a server
// whose tools could not be listed is a problem in ToolList.Errors, not an
// error.
func (c *Client) Tools(ctx context.Context, cl Caller) (*wire.ToolList, []byte, error) {
	return get[wire.ToolList](ctx, c, wire.OpListTools, &cl, "")
}

// Resources lists one server's resources.
func (c *Client) Resources(ctx context.Context, cl Caller, server string) (*wire.ResourceList, []byte, error) {
	return get[wire.ResourceList](ctx, c, wire.OpListResources, &cl, "", server)
}

// ReadResource reads one resource and returns the child's
// ReadResourceResult, unchanged.
func (c *Client) ReadResource(ctx context.Context, cl Caller, server, uri string) (json.RawMessage, error) {
	return readRaw(c.send(ctx, wire.OpReadResource, &cl, nil, nil, "?uri="+url.QueryEscape(uri), server))
}

// Prompts lists one server's prompts.
func (c *Client) Prompts(ctx context.Context, cl Caller, server string) (*wire.PromptList, []byte, error) {
	return get[wire.PromptList](ctx, c, wire.OpListPrompts, &cl, "", server)
}

// GetPrompt gets a prompt with arguments and returns the child's
// GetPromptResult, unchanged.
func (c *Client) GetPrompt(ctx context.Context, cl Caller, server, prompt string, args map[string]string) (json.RawMessage, error) {
	body, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return readRaw(c.send(ctx, wire.OpGetPrompt, &cl, body, nil, "", server, prompt))
}

// Instances lists the pooled child instances.
func (c *Client) Instances(ctx context.Context) (*wire.InstanceList, []byte, error) {
	return get[wire.InstanceList](ctx, c, wire.OpListInstances, nil, "")
}

// StopInstance stops one instance after draining its calls.
func (c *Client) StopInstance(ctx context.Context, id string) error {
	resp, err := c.send(ctx, wire.OpStopInstance, nil, nil, nil, "", id)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// CallTool calls a tool and returns the child's CallToolResult, unchanged;
// a tool that ran and failed is a result with isError, not an error. args
// is the JSON object of arguments; nil sends no body, which the daemon takes
// as {}. With onProgress set, the call is streamed (wire.CallStreamEvents) and
// onProgress gets the params of each progress notification, in order, on
// the calling goroutine; it owns them.
func (c *Client) CallTool(ctx context.Context, cl Caller, server, tool string, args json.RawMessage, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	return c.Call(ctx, cl, server, tool, args, CallOptions{OnProgress: onProgress})
}

// StopDaemon asks the daemon to stop: it answers, then stops accepting,
// drains calls and stops every child. It returns once the daemon has
// answered, not once it has stopped.
func (c *Client) StopDaemon(ctx context.Context) error {
	resp, err := c.send(ctx, wire.OpStopDaemon, nil, nil, nil, "")
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// ReloadDaemon makes the daemon read its config again. A config with
// errors is refused with a *wire.Problem of kind wire.KindConfig naming them
// (for the daemon's own user), and the running config stays in force.
func (c *Client) ReloadDaemon(ctx context.Context) (*wire.Reloaded, error) {
	resp, err := c.send(ctx, wire.OpReloadDaemon, nil, nil, nil, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var res wire.Reloaded
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return nil, fmt.Errorf("decoding the broker's answer: %w", err)
	}
	return &res, nil
}

// TypeScriptClient returns the generated TypeScript client module of the
// servers cl may use, or of those named, from the tool lists of the
// children in cl's scope.
func (c *Client) TypeScriptClient(ctx context.Context, cl Caller, servers []string) ([]byte, error) {
	query := ""
	if len(servers) > 0 {
		query = "?servers=" + url.QueryEscape(strings.Join(servers, ","))
	}
	return readRaw(c.send(ctx, wire.OpTypeScript, &cl, nil, nil, query))
}

// TypeScriptClientIfNew is TypeScriptClient as a conditional GET: known
// are the ETags of modules the caller keeps. If the broker's module is one
// of them it answers 304 Not Modified and src is nil; etag is the module's
// ETag either way (the route's ETag is a hash of the source).
func (c *Client) TypeScriptClientIfNew(ctx context.Context, cl Caller, servers []string, known []string) (src []byte, etag string, err error) {
	query := ""
	if len(servers) > 0 {
		query = "?servers=" + url.QueryEscape(strings.Join(servers, ","))
	}
	var h http.Header
	if len(known) > 0 {
		h = http.Header{"If-None-Match": {strings.Join(known, ", ")}}
	}
	resp, err := c.send(ctx, wire.OpTypeScript, &cl, nil, h, query)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	etag = resp.Header.Get("ETag")
	if resp.StatusCode == http.StatusNotModified {
		return nil, etag, nil
	}
	src, err = io.ReadAll(resp.Body)
	return src, etag, err
}

// Types returns the TypeScript declarations of a server's tools (or those
// q names) from the child in cl's scope: the server's prelude, and its
// instructions unless q.NoInstructions.
func (c *Client) Types(ctx context.Context, cl Caller, q TypesQuery) ([]byte, error) {
	v := url.Values{"server": {q.Server}}
	if q.Tool != "" {
		v.Set("tool", q.Tool)
	}
	if len(q.Only) > 0 {
		v.Set("only", strings.Join(q.Only, ","))
	}
	if q.Depth > 0 {
		v.Set("depth", strconv.Itoa(q.Depth))
	}
	if q.NoInstructions {
		v.Set("instructions", "false")
	}
	return readRaw(c.send(ctx, wire.OpTypes, &cl, nil, nil, "?"+v.Encode()))
}

// TypesQuery is what Types asks for: the declarations of Server's tools,
// or of Tool, or of the tools Only names, objects nested deeper than Depth
// (0: no limit) collapsed, without the server's instructions if
// NoInstructions.
type TypesQuery struct {
	Server, Tool   string
	Only           []string
	Depth          int
	NoInstructions bool
}

// SearchTools searches every server's tools for terms, keeping those with
// every one of tags (GET /v1/tools?q=…&tag=…): the hits, best first.
func (c *Client) SearchTools(ctx context.Context, cl Caller, terms, tags []string) (*wire.ToolList, []byte, error) {
	q := url.Values{"q": {strings.Join(terms, " ")}}
	if len(tags) > 0 {
		q["tag"] = tags
	}
	return get[wire.ToolList](ctx, c, wire.OpListTools, &cl, "?"+q.Encode())
}

// Catalog returns the budgeted catalog of every server's tools, ranked
// within each server by bias terms if any.
func (c *Client) Catalog(ctx context.Context, cl Caller, budget int, bias []string) (*wire.Catalog, []byte, error) {
	q := url.Values{"budget": {strconv.Itoa(budget)}}
	if len(bias) > 0 {
		q.Set("bias", strings.Join(bias, " "))
	}
	return get[wire.Catalog](ctx, c, wire.OpCatalog, &cl, "?"+q.Encode())
}

// Fleet lists the brokers among the daemon's tailnet peers (GET /v1/fleet):
// selected by tag ("" = the daemon's default, tag:mcpx) or, with probe, by
// asking every peer; timeout bounds the questions to each (0 = the
// daemon's).
func (c *Client) Fleet(ctx context.Context, tag string, probe bool, timeout time.Duration) (*wire.Fleet, []byte, error) {
	q := url.Values{}
	if tag != "" {
		q.Set(wire.QueryTag, tag)
	}
	if probe {
		q.Set(wire.QueryProbe, "true")
	}
	if timeout > 0 {
		q.Set(wire.QueryTimeout, timeout.String())
	}
	query := ""
	if len(q) > 0 {
		query = "?" + q.Encode()
	}
	return get[wire.Fleet](ctx, c, wire.OpFleet, nil, query)
}

// Tailnet describes the daemon's tailnet node (GET /v1/tailnet).
func (c *Client) Tailnet(ctx context.Context) (*wire.TailnetStatus, []byte, error) {
	return get[wire.TailnetStatus](ctx, c, wire.OpTailnet, nil, "")
}

// UpgradeDaemon asks the daemon to upgrade in place to binary ("" = the
// binary it runs): it checks the binary, answers, then drains and
// re-executes itself. It returns once the daemon has answered; wait for
// Whoami's Daemon.Generation to pass the answer's.
func (c *Client) UpgradeDaemon(ctx context.Context, binary string) (*wire.Upgrading, error) {
	q := ""
	if binary != "" {
		q = "?" + url.Values{wire.QueryBinary: {binary}}.Encode()
	}
	resp, err := c.send(ctx, wire.OpUpgradeDaemon, nil, nil, nil, q)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var res wire.Upgrading
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return nil, fmt.Errorf("decoding the upgrade answer: %w", err)
	}
	return &res, nil
}

// CloseIdleConnections closes the client's idle keep-alive connections.
func (c *Client) CloseIdleConnections() { c.tr.CloseIdleConnections() }
