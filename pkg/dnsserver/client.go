package dnsserver

import (
	"net"
	"net/netip"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/xfr"
)

// transferHandler is the zone-transfer unit (pkg/xfr's Handler) as the server sees it: the
// requests that are not queries of the zone data go there, with what the server knows of their
// client. It is all the answer path knows of zone transfers.
type transferHandler interface {
	// ServeTransfer answers an AXFR or IXFR: it writes the transfer to w itself and returns
	// nil, or returns resp, filled in, for the server to write.
	ServeTransfer(w dns.ResponseWriter, req, resp *dns.Msg, c xfr.Client) *dns.Msg
	// ServeNotify answers an incoming NOTIFY and returns resp, filled in.
	ServeNotify(w dns.ResponseWriter, req, resp *dns.Msg) *dns.Msg
}

// transferClient is what the transfer unit is told of the client of req, received on w (over
// UDP when udp): its address, and whether req was signed with ServerOptions.TSIG and verified.
func (s *Server) transferClient(w dns.ResponseWriter, req *dns.Msg, udp bool) xfr.Client {
	ip, _ := addrIP(w.RemoteAddr())
	return xfr.Client{Addr: ip, UDP: udp, Signed: s.transferSigned(w, req)}
}

// addrIP returns the IP of a TCP or UDP address, IPv4-mapped addresses unmapped.
func addrIP(addr net.Addr) (netip.Addr, bool) {
	var ip net.IP
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	case *udpPeer:
		ip = a.IP
	default:
		return netip.Addr{}, false
	}
	a, ok := netip.AddrFromSlice(ip)
	return a.Unmap(), ok
}

// isUDP reports whether addr, a ResponseWriter's RemoteAddr, is a UDP
// client's: a *net.UDPAddr or a *udpPeer (batch_linux.go).
func isUDP(addr net.Addr) bool {
	switch addr.(type) {
	case *net.UDPAddr, *udpPeer:
		return true
	}
	return false
}
