package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/tsnet"
	"mcpx.dev/mcpx/wire"
)

// tailnetFlags are serve's --tailnet flags.
type tailnetFlags struct {
	on          *bool
	hostname    *string
	dir         *string
	authKeyFile *string
	controlURL  *string
	tags        *string
	ephemeral   *bool
	capability  *string
	upTimeout   *time.Duration
}

func addTailnetFlags(fs *flag.FlagSet) tailnetFlags {
	f := tailnetFlags{
		on:          fs.Bool("tailnet", false, "also serve the API on an embedded tailnet node (HTTP on :80 over WireGuard); callers need the tailnet grant --tailnet-capability"),
		hostname:    fs.String("tailnet-hostname", "mcpx", "the node's name on the tailnet (its MagicDNS label)"),
		dir:         fs.String("tailnet-dir", "", "the node's state directory (default <state dir>/tailnet)"),
		authKeyFile: fs.String("tailnet-authkey-file", "", "file holding the auth key that joins the tailnet (default $TS_AUTHKEY; else the login URL is logged); ignored once the node has state"),
		controlURL:  fs.String("tailnet-control-url", "", "the coordination server, e.g. a Headscale URL (default Tailscale's)"),
		tags:        fs.String("tailnet-tags", "", "comma-separated tags the node advertises, e.g. tag:mcpx"),
		ephemeral:   fs.Bool("tailnet-ephemeral", false, "register the node as ephemeral: it leaves the tailnet soon after it goes offline"),
		capability:  fs.String("tailnet-capability", tsnet.DefaultCapability, "the app-capability grant that gives tailnet callers their rights"),
		upTimeout:   fs.Duration("tailnet-up-timeout", tsnet.DefaultUpTimeout, "how long to wait for the node to join the tailnet before giving up"),
	}
	return f
}

// upNode brings the node up and adds its listeners to lns: HTTP on :80,
// callers named by WhoIs with the rights of their grant, and HTTPS on :443
// when the tailnet issues a certificate (else one log line: a missing
// certificate never stops the daemon). It returns the node's description
// for /v1/whoami. A node that came up is closed if a listener fails; else
// the caller owns it.
func upNode(ctx context.Context, node *tsnet.Node, lns *daemon.Listeners, so api.ServeOptions, maxConns int) (_ *wire.NodeInfo, err error) {
	if _, err := node.Up(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			node.Close()
		}
	}()
	so.MaxConns = maxConns
	so = nodeServeOptions(node, so)
	nln, err := node.Listen()
	if err != nil {
		return nil, err
	}
	lns.Add(nln, nodeServeOptions(node, api.ServeOptions{Logger: so.Logger, DrainTimeout: so.DrainTimeout, MaxConns: maxConns}))
	sln, err := node.ListenTLS(ctx)
	if err != nil {
		return nil, err
	}
	lns.Add(sln, so) // the same over HTTPS, with the tailnet's certificate
	return nodeDoc(node.Info(), sln != nil), nil
}

// nodeServeOptions is so as every listener of the node is served with (HTTP
// on :80 and HTTPS on :443 alike): callers named by the node's Identify,
// and only a Host that names the node admitted (DNS rebinding).
func nodeServeOptions(node *tsnet.Node, so api.ServeOptions) api.ServeOptions {
	so.Identify, so.Host = node.Identify, node.OwnHost
	return so
}

// nodeDoc describes the node for /v1/whoami; tls says whether HTTPS on
// :443 is served too.
func nodeDoc(info tsnet.Info, tls bool) *wire.NodeInfo {
	doc := &wire.NodeInfo{Name: info.Name, DNSName: info.DNSName, IPs: []string{}, TLS: tls}
	for _, ip := range info.IPs {
		doc.IPs = append(doc.IPs, ip.String())
	}
	return doc
}

// node returns the tailnet node the flags describe, nil without --tailnet.
// The auth key is read here and never logged.
func (f tailnetFlags) node(getenv func(string) string, state string, log *slog.Logger) (*tsnet.Node, error) {
	if !*f.on {
		return nil, nil
	}
	if *f.upTimeout <= 0 {
		return nil, errors.New("--tailnet-up-timeout must be positive, e.g. 60s")
	}
	key := getenv("TS_AUTHKEY")
	if *f.authKeyFile != "" {
		b, err := os.ReadFile(*f.authKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--tailnet-authkey-file: %w", err)
		}
		key = strings.TrimSpace(string(b))
	}
	var tags []string
	for t := range strings.SplitSeq(*f.tags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	dir := *f.dir
	if dir == "" {
		dir = filepath.Join(state, "tailnet")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the tailnet state directory: %w", err)
	}
	return &tsnet.Node{
		Hostname: *f.hostname, Dir: dir, AuthKey: key, ControlURL: *f.controlURL, Tags: tags,
		Ephemeral: *f.ephemeral, UpTimeout: *f.upTimeout, Capability: *f.capability,
		Logger: log.With("listener", "tailnet"),
	}, nil
}

// apiTailnet is the node as the API reaches it (GET /v1/tailnet, GET
// /v1/fleet); nil without --tailnet.
func apiTailnet(node *tsnet.Node) *api.Tailnet {
	if node == nil {
		return nil
	}
	return &api.Tailnet{Status: node.Status, Peers: node.Peers, Dial: node.Dial, WhoIs: node.WhoIs}
}
