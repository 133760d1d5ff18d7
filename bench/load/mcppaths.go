package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// setupMCP sets up an MCP path: F starts the floor server, G and Gr mcp-hub;
// M, M1 and Mr use the daemon's MCP endpoint (issue 20), X the -url
// endpoint. Each opens as many sessions as the highest -c, one per caller.
func (ps *pathSet) setupMCP(ctx context.Context, o *options, name string, d *daemon, tmp, self string) (*path, error) {
	tgt := &mcpTarget{tool: "echo", args: echoArgs, want: "hi", version: o.mcpVersion}
	var server, child func() int
	switch name {
	case "F":
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), envFloor+"="+addr)
		srv, err := startRawHTTP(ctx, cmd, "tcp", addr)
		if err != nil {
			return nil, err
		}
		ps.closers = append(ps.closers, srv.stop)
		tgt.url = "http://" + addr + "/mcp"
		server = func() int { return cmd.Process.Pid }
	case "G", "Gr":
		node, err := exec.LookPath(o.node)
		if err != nil {
			return nil, err
		}
		cli := o.hub
		if cli == "" {
			if cli, err = hubCLI(ctx); err != nil {
				return nil, err
			}
		}
		upstream := map[string]any{"command": o.mcpx, "args": []string{"demo-server"}}
		if name == "Gr" {
			upstream = map[string]any{"command": self, "env": map[string]string{envRawChild: "1"}}
		}
		h, err := startHub(ctx, node, cli, upstream, filepath.Join(tmp, "hub-"+name))
		if err != nil {
			return nil, err
		}
		ps.closers = append(ps.closers, h.stop)
		tgt.url, tgt.sse, tgt.tool = h.url, true, "a__echo"
		server = h.pid
	case "M", "M1", "Mr":
		upstream := map[string]string{"M": "demo", "M1": "demo", "Mr": "raw"}[name]
		tgt.url, tgt.tool = "http://"+d.addr+"/mcp", upstream+"__echo"
		if name == "M1" {
			tgt.url, tgt.tool = "http://"+d.addr+"/mcp/demo", "echo"
		}
		tgt.header = map[string]string{"Authorization": "Bearer " + d.token}
		server = d.pid
		child = func() int { return d.childPid(upstream) }
	case "X":
		if o.url == "" {
			return nil, errors.New("path X needs -url")
		}
		tgt.url, tgt.sse, tgt.header, tgt.tool, tgt.args, tgt.want = o.url, o.sse, o.header, o.tool, o.args, o.want
		server = func() int { return o.pid }
	}
	ms, err := openSessions(ctx, tgt, slices.Max(o.conc))
	if err != nil {
		return nil, err
	}
	ps.closers = append(ps.closers, ms.close)
	p := &path{name: name, call: ms.call, mcp: tgt, server: server}
	p.procs = func() (int, int) {
		c := 0
		if child != nil {
			c = child()
		}
		return server(), c
	}
	return p, nil
}
