// Package testtailnet runs a whole tailnet's infrastructure on loopback for
// tests and benchmarks: tailscale's test control server, a DERP server
// (TLS, self-signed) and a STUN server. Nodes — tsnet.Node in the same
// process, or an `mcpx serve --tailnet` in another — join it with
// ControlURL set to URL and no auth key. Nothing reaches the internet.
//
//	tn, err := testtailnet.Start(testtailnet.Options{})
//	defer tn.Close()
//	tn.Control.SetGlobalAppCaps(testtailnet.Grant("mcpx.dev/cap/broker", `{"servers": ["*"]}`))
//
// A node in another process needs TS_NO_LOGS_NO_SUPPORT=true (else it
// looks up the log server and dials public DERP), TS_DISABLE_PORTMAPPER=1
// and TS_DEBUG_OMIT_LOCAL_ADDRS=true in its environment (see Env).
//
// It never imports tailscale.com/tstest/integration: that links the whole
// daemon and probes the internet.
package testtailnet

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log"
	"net"
	"net/http"
	"net/http/httptest"

	"tailscale.com/derp/derpserver"
	"tailscale.com/net/stunserver"
	"tailscale.com/tailcfg"
	"tailscale.com/tstest/integration/testcontrol"
	"tailscale.com/types/key"
	"tailscale.com/types/logger"
)

// Options configure Start.
type Options struct {
	// MagicDNSDomain is the tailnet's DNS suffix; "" = "tail-scale.ts.net".
	// The control server announces <host>.<domain> as each node's
	// certificate domain, which cannot be issued offline.
	MagicDNSDomain string
	// Logf receives the servers' logs; nil = discard.
	Logf logger.Logf
}

// Tailnet is a running test tailnet. Close stops it.
type Tailnet struct {
	// Control is the control server: set grants with SetGlobalAppCaps.
	Control *testcontrol.Server
	// URL is the control server's URL, a node's ControlURL.
	URL string

	derp   *httptest.Server
	derpd  *derpserver.Server
	cancel context.CancelFunc // stops STUN
}

// Env is the environment a node in another process needs to join a test
// tailnet hermetically.
var Env = []string{"TS_NO_LOGS_NO_SUPPORT=true", "TS_DISABLE_PORTMAPPER=1", "TS_DEBUG_OMIT_LOCAL_ADDRS=true"}

// Start serves DERP, STUN and the control server on 127.0.0.1.
func Start(opts Options) (*Tailnet, error) {
	logf := opts.Logf
	if logf == nil {
		logf = logger.Discard
	}
	ctx, cancel := context.WithCancel(context.Background())
	stun := stunserver.New(ctx)
	if err := stun.Listen("127.0.0.1:0"); err != nil {
		cancel()
		return nil, err
	}
	go stun.Serve() //nolint:errcheck // ends when ctx is cancelled (Close)

	d := derpserver.New(key.NewNode(), logf)
	derp := httptest.NewUnstartedServer(derpserver.Handler(d))
	derp.Config.ErrorLog = log.New(discard{}, "", 0)
	derp.Config.TLSNextProto = make(map[string]func(*http.Server, *tls.Conn, http.Handler))
	derp.StartTLS()

	domain := opts.MagicDNSDomain
	if domain == "" {
		domain = "tail-scale.ts.net"
	}
	control := &testcontrol.Server{
		DERPMap: &tailcfg.DERPMap{Regions: map[int]*tailcfg.DERPRegion{
			1: {RegionID: 1, RegionCode: "test", Nodes: []*tailcfg.DERPNode{{
				Name: "t1", RegionID: 1, HostName: "127.0.0.1", IPv4: "127.0.0.1", IPv6: "none",
				STUNPort: stun.LocalAddr().(*net.UDPAddr).Port, DERPPort: derp.Listener.Addr().(*net.TCPAddr).Port,
				InsecureForTests: true, STUNTestIP: "127.0.0.1",
			}}},
		}},
		DNSConfig:      &tailcfg.DNSConfig{Proxied: true},
		MagicDNSDomain: domain,
		Logf:           logf,
		// Non-nil: a node gets the tags it advertises when it joins
		// (tsnet's AdvertiseTags, `--tailnet-tags tag:mcpx`), as brokers
		// of a fleet do.
		TagOwners: map[string][]string{},
	}
	control.HTTPTestServer = httptest.NewUnstartedServer(control)
	control.HTTPTestServer.Start()
	return &Tailnet{Control: control, URL: control.HTTPTestServer.URL, derp: derp, derpd: d, cancel: cancel}, nil
}

// Close stops the servers.
func (tn *Tailnet) Close() error {
	tn.Control.HTTPTestServer.CloseClientConnections()
	tn.Control.HTTPTestServer.Close()
	tn.derp.CloseClientConnections()
	tn.derp.Close()
	err := tn.derpd.Close()
	tn.cancel()
	return err
}

// Grant is the app-capability grant capName with one element per rule, for
// Control.SetGlobalAppCaps (src:* dst:*).
func Grant(capName string, rules ...string) (tailcfg.PeerCapMap, error) {
	raw := make([]tailcfg.RawMessage, len(rules))
	for i, r := range rules {
		if !json.Valid([]byte(r)) {
			return nil, errors.New("grant rule is not JSON: " + r)
		}
		raw[i] = tailcfg.RawMessage(r)
	}
	return tailcfg.PeerCapMap{tailcfg.PeerCapability(capName): raw}, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
