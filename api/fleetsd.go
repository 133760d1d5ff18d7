package api

import (
	"cmp"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// getFleetSD is GET /v1/fleet/sd: Prometheus HTTP service discovery
// (http_sd_configs) of the fleet, so that one Prometheus server given
// this URL finds and scrapes every broker. The daemon itself comes first,
// then every broker GET /v1/fleet finds (whatever its state: one that
// does not answer is a target that is down, which is what an operator
// wants to see), each at its tailnet name and port with __metrics_path__
// /metrics. Off a tailnet the daemon lists itself alone, at its loopback
// TCP address (none when TCP is off: an empty list, as the format wants).
//
// It is authorized like /metrics (admin or metrics): it names every
// broker the daemon's node can see, and nothing more than GET /v1/fleet.
func (s *server) getFleetSD(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	if !c.Rights.Metrics() && !c.Owner {
		return &broker.Error{Kind: broker.KindForbidden, Op: "fleet sd",
			Msg:  "only a caller with the metrics or admin right may read the fleet's service discovery",
			Hint: "grant {\"metrics\": true} to the Prometheus server's tailnet node, or mint it a token with `mcpx token mint --sub prometheus --metrics`"}
	}
	out := wire.FleetTargets{}
	self := wire.FleetBroker{Self: true, State: wire.FleetOK, Version: s.version, Name: hostName()}
	if s.tailnet == nil {
		if addr := s.loopbackAddr(); addr != "" {
			out = append(out, sdTarget(addr, self))
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	f, err := s.discoverFleet(r)
	if err != nil {
		return err
	}
	if s.node != nil {
		self.Name, self.DNSName, self.IPs = s.node.Name, s.node.DNSName, s.node.IPs
	}
	for _, b := range append([]wire.FleetBroker{self}, f.Brokers...) {
		if host := cmp.Or(b.DNSName, b.Name, first(b.IPs)); host != "" {
			out = append(out, sdTarget(net.JoinHostPort(host, strconv.Itoa(cmp.Or(s.tailnet.Port, 80))), b))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// sdTarget is broker b's target group at addr.
func sdTarget(addr string, b wire.FleetBroker) wire.FleetTarget {
	return wire.FleetTarget{Targets: []string{addr}, Labels: map[string]string{
		wire.SDLabelBroker:      b.Name,
		wire.SDLabelMetricsPath: "/metrics",
		wire.SDLabelName:        b.Name,
		wire.SDLabelDNSName:     b.DNSName,
		wire.SDLabelVersion:     b.Version,
		wire.SDLabelState:       b.State,
		wire.SDLabelSelf:        strconv.FormatBool(b.Self),
	}}
}

// loopbackAddr is the daemon's loopback TCP address; "" when TCP is off
// or the API does not know it (no Options.Daemon).
func (s *server) loopbackAddr() string {
	if s.daemon == nil {
		return ""
	}
	return s.daemon.Info.Address
}

// hostName is the machine's short host name, the name of a daemon off a
// tailnet; "" if the system does not say.
func hostName() string {
	h, _ := os.Hostname()
	name, _, _ := strings.Cut(h, ".")
	return name
}

func first(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[0]
}
