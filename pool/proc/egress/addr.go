package egress

import (
	"net"
	"net/netip"
	"slices"
)

// refusedRanges are the addresses a name may not resolve to unless the
// allowlist lists the address itself or Options.Permit covers it: this
// machine, its links, and the networks behind it, which an allowed name
// turned hostile (DNS rebinding) would otherwise open to a confined child.
// The first match names the class in the refusal.
var refusedRanges = []struct {
	prefix netip.Prefix
	class  string
}{
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("::/96"), "unspecified or IPv4-compatible"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (carrier NAT, tailnets)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // and 255.255.255.255, broadcast
}

// addrPolicy decides which addresses a resolved name may reach.
type addrPolicy struct {
	permit, refuse []netip.Prefix
	own            func() ([]netip.Addr, error) // this host's interface addresses
}

// why returns "" when a name may reach addr on port, else why not. own is
// this host's addresses, read once per resolution.
func (ap *addrPolicy) why(addr netip.Addr, port uint16, allow *Allowlist, own []netip.Addr) string {
	addr = addr.Unmap()
	if allow.Listed(addr, port) {
		return ""
	}
	if addr.Zone() != "" {
		return "an address with a zone"
	}
	class := ""
	for _, r := range refusedRanges {
		if r.prefix.Contains(addr) {
			class = r.class
			break
		}
	}
	switch {
	case slices.Contains(own, addr) && class != "":
		return class + ", this host's own address"
	case slices.Contains(own, addr):
		return "this host's own address"
	case containsAddr(ap.permit, addr):
		return ""
	case containsAddr(ap.refuse, addr):
		return "an address the daemon refuses (Options.Refuse)"
	}
	return class
}

func containsAddr(prefixes []netip.Prefix, addr netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// interfaceAddrs are this host's own addresses, on every interface.
func interfaceAddrs() ([]netip.Addr, error) {
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(ifAddrs))
	for _, a := range ifAddrs {
		if n, ok := a.(*net.IPNet); ok {
			if addr, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, addr.Unmap())
			}
		}
	}
	return out, nil
}
