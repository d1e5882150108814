package gslb

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// SourceAddrs are the local addresses that Gslb peer queries and health probes leave from
// (--gslb-source-address): at most one IPv4 and one IPv6 address. A destination of a family
// without one, or given as a name, leaves from the address the system chooses. The zero value
// lets the system choose always.
//
// It lets a multi-homed node send Gslb traffic from the address its peers' firewalls allow,
// and lets a test cut two clusters that share one host apart by source address (iptables).
type SourceAddrs struct {
	V4, V6 netip.Addr
}

// ParseSourceAddrs parses --gslb-source-address: comma-separated addresses, at most one per
// family, without zones. "" is the zero value. Errors name the bad or repeated address.
func ParseSourceAddrs(s string) (SourceAddrs, error) {
	var out SourceAddrs
	if s == "" {
		return out, nil
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		a, err := netip.ParseAddr(f)
		if err != nil || a.Zone() != "" || a.IsUnspecified() {
			return SourceAddrs{}, fmt.Errorf("source address %q: want an IPv4 or IPv6 address without a zone", f)
		}
		a = a.Unmap()
		slot := &out.V4
		if a.Is6() {
			slot = &out.V6
		}
		if slot.IsValid() {
			return SourceAddrs{}, fmt.Errorf("source address %q: a second address of its family (%s); give at most one IPv4 and one IPv6", f, *slot)
		}
		*slot = a
	}
	return out, nil
}

// For returns the source address for dst: V4 for an IPv4 (or IPv4-mapped) destination, V6
// for an IPv6 one; invalid (the system chooses) when that family has none or dst is invalid.
func (s SourceAddrs) For(dst netip.Addr) netip.Addr {
	switch {
	case !dst.IsValid():
		return netip.Addr{}
	case dst.Unmap().Is4():
		return s.V4
	}
	return s.V6
}

// Dialer returns a net.Dialer whose LocalAddr is For(dst) on network ("udp" or "tcp"), or the
// zero Dialer when there is none. hostport is the destination "host:port"; a host that is not
// an address gets the zero Dialer.
func (s SourceAddrs) Dialer(network, hostport string) *net.Dialer {
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil {
		return &net.Dialer{}
	}
	src := s.For(ap.Addr())
	if !src.IsValid() {
		return &net.Dialer{}
	}
	if network == "udp" {
		return &net.Dialer{LocalAddr: net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0))}
	}
	return &net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 0))}
}

// String returns the addresses as --gslb-source-address takes them.
func (s SourceAddrs) String() string {
	switch {
	case s.V4.IsValid() && s.V6.IsValid():
		return s.V4.String() + "," + s.V6.String()
	case s.V4.IsValid():
		return s.V4.String()
	case s.V6.IsValid():
		return s.V6.String()
	}
	return ""
}
