package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/tsnet"
)

// publicFlags are serve's --public flags: the public face (docs/public.md).
type publicFlags struct {
	mode, listen, url, cert, key *string
}

func addPublicFlags(fs *flag.FlagSet) publicFlags {
	return publicFlags{
		mode:   fs.String("public", "", "serve the public face (MCP with OAuth only) on Tailscale Funnel: \"funnel\" (needs --tailnet and the tailnet's \"funnel\" attribute); off by default"),
		listen: fs.String("public-listen", "", "serve the public face (MCP with OAuth only) on this address, e.g. 127.0.0.1:8443 behind your reverse proxy; off by default"),
		url:    fs.String("public-url", "", "the https origin clients reach the public face by, e.g. https://mcpx.example.com (with --public-listen)"),
		cert:   fs.String("public-cert", "", "TLS certificate (PEM) of the --public-listen address; without it that address must be loopback (TLS ends at your proxy)"),
		key:    fs.String("public-key", "", "TLS private key (PEM) of --public-cert"),
	}
}

// check says what is wrong with the flags, if anything.
func (f publicFlags) check(tailnet bool) error {
	switch {
	case *f.mode != "" && *f.mode != "funnel":
		return fmt.Errorf("--public %q: the one public face there is on Funnel is \"funnel\"; for your own address use --public-listen", *f.mode)
	case *f.mode != "" && *f.listen != "":
		return errors.New("--public funnel and --public-listen: choose one public face")
	case *f.mode != "" && !tailnet:
		return errors.New("--public funnel serves on the embedded tailnet node: add --tailnet")
	case *f.mode != "" && (*f.url != "" || *f.cert != "" || *f.key != ""):
		return errors.New("--public funnel takes its URL and certificate from the tailnet: drop --public-url, --public-cert and --public-key")
	case *f.listen == "" && (*f.url != "" || *f.cert != "" || *f.key != ""):
		return errors.New("--public-url, --public-cert and --public-key describe --public-listen: give it too")
	case *f.listen == "":
		return nil
	case *f.url == "":
		return errors.New("--public-listen needs --public-url, the https origin clients reach it by (e.g. https://mcpx.example.com)")
	case (*f.cert == "") != (*f.key == ""):
		return errors.New("--public-cert and --public-key go together")
	}
	if _, err := public.CheckURL(*f.url); err != nil {
		return fmt.Errorf("--public-url: %w", err)
	}
	if *f.cert == "" && api.CheckLoopback(*f.listen) != nil {
		return fmt.Errorf("--public-listen %s without --public-cert: tokens would cross the network in the clear; listen on a loopback address behind a TLS proxy, or give --public-cert and --public-key", *f.listen)
	}
	return nil
}

// open opens the public face's listener and adds it to lns, served with
// so and the handler handler returns once the API is built; it returns
// the face, nil when there is none.
func (f publicFlags) open(node *tsnet.Node, state string, log *slog.Logger, lns *daemon.Listeners, so api.ServeOptions, pc config.Public, handler func() http.Handler) (*public.Face, error) {
	iss, err := issuerOptions(pc)
	if err != nil {
		return nil, err
	}
	var ln net.Listener
	url := *f.url
	switch {
	case *f.mode == "funnel":
		ln, url, err = node.ListenFunnel()
	case *f.listen != "":
		ln, err = f.listenOwn()
	default:
		if iss != nil {
			log.Warn("public.issuer is set, but no public face is served: start it with --public-listen or --public funnel")
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lns.AddPublic(ln, so, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler().ServeHTTP(w, r) }))
	st, err := access.Open(filepath.Join(state, "auth"))
	if err != nil {
		return nil, err
	}
	face, err := public.New(public.Options{URL: url, Tokens: st, Logger: log.With("listener", "public"), Issuer: iss, Clients: publicClients(pc.Clients)})
	if err != nil {
		return nil, fmt.Errorf("the public face: %w", err)
	}
	if node != nil && node.Info().DNSName != "" {
		// A browser on the tailnet approves here (docs/public.md).
		face.SetConsentPage("http://" + node.Info().DNSName + public.ConsentPath)
	}
	log.Info("public face", "url", face.Origin(), "listen", ln.Addr().String(), "issuer", face.Issuer())
	return face, nil
}

// publicClients are the config's pre-registered clients as the face
// takes them.
func publicClients(cs []config.PublicClient) []access.Client {
	out := make([]access.Client, 0, len(cs))
	for _, c := range cs {
		out = append(out, access.Client{ID: c.ID, Name: c.Name, RedirectURIs: c.RedirectURIs})
	}
	return out
}

// listenOwn listens on --public-listen, with TLS when a certificate is
// given.
func (f publicFlags) listenOwn() (net.Listener, error) {
	var conf *tls.Config
	if *f.cert != "" {
		pair, err := tls.LoadX509KeyPair(*f.cert, *f.key)
		if err != nil {
			return nil, fmt.Errorf("--public-cert, --public-key: %w", err)
		}
		conf = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	}
	ln, err := net.Listen("tcp", *f.listen)
	if err != nil {
		return nil, fmt.Errorf("--public-listen: %w", err)
	}
	if conf != nil {
		ln = tls.NewListener(ln, conf)
	}
	return ln, nil
}
