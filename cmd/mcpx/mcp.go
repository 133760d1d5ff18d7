package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/mcp/bridge"
)

// mcpCmd is `mcpx mcp [--server S]`: the broker's MCP endpoint (/mcp, or
// /mcp/S) on stdin and stdout, for MCP clients that can only spawn a
// command. Nothing but MCP goes to stdout; diagnostics go to stderr.
func mcpCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "mcp")
	bo := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	server := fs.String("server", "", "serve this one server, its tool and prompt names unchanged (default: every server the caller may use, names prefixed with the server)")
	co := callerFlags(fs, "the client's directory when it declares no roots")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "no arguments (the MCP client speaks on stdin)")
	}
	opts, err := bridgeOptions(ctx, c, bo, *noAutostart, co)
	if err != nil {
		return report(c, err)
	}
	if *server != "" {
		opts.Path += "/" + url.PathEscape(*server)
	}
	err = bridge.Serve(ctx, c.stdin, c.stdout, opts)
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(c.stderr, "mcpx mcp: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// bridgeOptions reaches the broker as every command does (started on
// demand) and describes this process as its caller. Against a broker on
// another machine the cwd and the client's roots are mapped to its side of
// the files; an unmapped cwd is not sent (the client's roots may still be
// mapped, and the endpoint tells the client when it has no directory),
// rather than failing a process the client started on its own.
func bridgeOptions(ctx context.Context, c *cli, bo *brokerOpts, noAutostart bool, co *callerOpts) (bridge.Options, error) {
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	bc, err := newBrokerClient(ctx, c, bo)
	if err != nil {
		return bridge.Options{}, err
	}
	if err := autostart(ctx, c, bc, noAutostart); err != nil {
		return bridge.Options{}, err
	}
	caller, err := co.caller(c)
	if err != nil {
		return bridge.Options{}, err
	}
	opts := bridge.Options{Client: bc, Path: "/mcp", Logger: log}
	if bc.Unix() && !noAutostart {
		// A daemon stopped or upgraded under a long-lived client is
		// started again, as the next command would start it.
		opts.Restart = func(ctx context.Context) error { return autostart(ctx, c, bc, false) }
	}
	if bc.Remote() {
		cwd, err := remoteCwd(c, co.cwd, caller.Cwd)
		var unmapped *client.UnmappedError
		switch {
		case errors.As(err, &unmapped):
			log.Warn("mcp: not sending the working directory: " + unmapped.Error())
			cwd = ""
		case err != nil:
			return bridge.Options{}, err
		}
		caller.Cwd = cwd
		cfg, _, err := clientConfig(c)
		if err != nil {
			return bridge.Options{}, err
		}
		if len(cfg.PathMappings) > 0 {
			m, err := client.NewPathMap(cfg.PathMappings)
			if err != nil {
				return bridge.Options{}, err
			}
			opts.MapPath = m.Map
		}
	}
	opts.Header = bc.CallerHeader(caller)
	return opts, nil
}
