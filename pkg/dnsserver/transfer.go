package dnsserver

import (
	"net"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

// transferChunk is the target size of one AXFR message; records are grouped
// until a message passes it, keeping each far below the 65,535-byte TCP
// message limit (RFC 1035 §4.2.2).
const transferChunk = 16 * 1024

// transfer answers AXFR (and IXFR, as a full transfer, RFC 1995 §4) with
// miekg's dns.Transfer: SOA first and last (RFC 5936 §2.2). Only over TCP,
// only to loopback clients (or ServerOptions.TransferFrom) and only for a zone apex; otherwise it returns
// REFUSED (NOTAUTH for a name inside a zone that is not its apex). Weighted
// sets are transferred too: a secondary serves them merged.
func (s *Server) transfer(w dns.ResponseWriter, req, resp *dns.Msg, udp bool) *dns.Msg {
	if udp || !transferAllowed(w.RemoteAddr(), s.opts.TransferFrom) {
		resp.Rcode = dns.RcodeRefused
		return resp
	}
	qname := strings.ToLower(req.Question[0].Name)
	snap := s.store.load()
	z := snap.zones[qname]
	if z == nil {
		resp.Rcode = dns.RcodeRefused
		if snap.zoneFor(qname, dns.TypeSOA) != nil {
			resp.Rcode = dns.RcodeNotAuth
		}
		return resp
	}
	var envs []*dns.Envelope
	cur := &dns.Envelope{RR: []dns.RR{z.soa}}
	size := dns.Len(z.soa)
	for _, rs := range z.sortedSets() {
		for _, rr := range rs.RRs {
			if size > transferChunk {
				envs = append(envs, cur)
				cur, size = &dns.Envelope{}, 0
			}
			cur.RR = append(cur.RR, rr)
			size += dns.Len(rr)
		}
	}
	cur.RR = append(cur.RR, z.soa)
	envs = append(envs, cur)

	// A buffered channel holding every envelope: Out never blocks the
	// producer, even when the client goes away mid-transfer.
	ch := make(chan *dns.Envelope, len(envs))
	for _, e := range envs {
		ch <- e
	}
	close(ch)
	tr := new(dns.Transfer)
	if err := tr.Out(w, req, ch); err != nil {
		s.opts.Logger.V(1).Info("zone transfer failed", "zone", z.origin, "client", w.RemoteAddr().String(), "error", err.Error())
	}
	return nil
}

// transferAllowed reports whether addr may AXFR: a loopback client, or one in a prefix of from
// (an IPv4-mapped IPv6 address is matched as IPv4).
func transferAllowed(addr net.Addr, from []netip.Prefix) bool {
	if isLoopback(addr) {
		return true
	}
	a, ok := addr.(*net.TCPAddr)
	if !ok {
		return false
	}
	ip, ok := netip.AddrFromSlice(a.IP)
	if !ok {
		return false
	}
	ip = ip.Unmap()
	for _, p := range from {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// isLoopback reports whether addr is in 127.0.0.0/8 or ::1.
func isLoopback(addr net.Addr) bool {
	var ip net.IP
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	default:
		return false
	}
	return ip.IsLoopback()
}
