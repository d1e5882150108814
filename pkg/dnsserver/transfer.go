package dnsserver

import (
	"net"
	"net/netip"
	"strings"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// transferChunk is the target size of one AXFR message; records are grouped
// until a message passes it, keeping each far below the 65,535-byte TCP
// message limit (RFC 1035 §4.2.2).
const transferChunk = 16 * 1024

// Transfer results, the result label of dnsplane_dnsserver_transfers_total.
const (
	transferFull        = "full"        // the whole zone (AXFR, or IXFR beyond the journal)
	transferIncremental = "incremental" // IXFR from the journal
	transferUpToDate    = "uptodate"    // IXFR from a client at the current serial: the SOA only
	transferUseTCP      = "usetcp"      // IXFR over UDP from a client behind: the SOA only (RFC 1995 §2)
	transferRefused     = "refused"     // client not allowed, UDP AXFR, unserved zone, no SOA in an IXFR
	transferFailed      = "failed"      // the client went away mid-transfer
)

// transfer answers AXFR (RFC 5936) and IXFR (RFC 1995, ixfr.go) with
// miekg's dns.Transfer: SOA first and last (RFC 5936 §2.2). Only to clients
// transferAllowed admits and only for a zone apex; AXFR only over TCP;
// otherwise it returns REFUSED (NOTAUTH for a name inside a zone that is not
// its apex). Weighted sets are transferred too: a secondary serves them
// merged.
func (s *Server) transfer(w dns.ResponseWriter, req, resp *dns.Msg, udp bool) *dns.Msg {
	kind := strings.ToLower(dns.TypeToString[req.Question[0].Qtype])
	if !s.transferAllowed(w, req) || (udp && req.Question[0].Qtype == dns.TypeAXFR) {
		s.opts.Metrics.transferred(kind, transferRefused)
		resp.Rcode = dns.RcodeRefused
		return resp
	}
	qname := strings.ToLower(req.Question[0].Name)
	snap := s.store.Snapshot()
	z, ok := snap.Zone(qname)
	if !ok {
		s.opts.Metrics.transferred(kind, transferRefused)
		resp.Rcode = dns.RcodeRefused
		if _, ok := snap.Enclosing(qname); ok {
			resp.Rcode = dns.RcodeNotAuth
		}
		return resp
	}
	if req.Question[0].Qtype == dns.TypeIXFR {
		return s.ixfr(w, req, resp, z, udp)
	}
	s.writeTransfer(w, req, z, kind, transferFull, fullZone(z))
	return nil
}

// fullZone returns the zone's records as a full transfer sends them: SOA, every set's
// records in sortedSets order, SOA.
func fullZone(z zonedb.ZoneVersion) []dns.RR {
	out := []dns.RR{z.SOA()}
	for _, rs := range z.Sets() {
		out = append(out, rs.RRs...)
	}
	return append(out, z.SOA())
}

// writeTransfer sends rrs over the TCP connection in messages of about transferChunk bytes,
// and counts the transfer (kind "axfr" or "ixfr", result).
func (s *Server) writeTransfer(w dns.ResponseWriter, req *dns.Msg, z zonedb.ZoneVersion, kind, result string, rrs []dns.RR) {
	var envs []*dns.Envelope
	cur, size := &dns.Envelope{}, 0
	for _, rr := range rrs {
		if size > transferChunk {
			envs = append(envs, cur)
			cur, size = &dns.Envelope{}, 0
		}
		cur.RR = append(cur.RR, rr)
		size += dns.Len(rr)
	}
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
		s.opts.Metrics.transferred(kind, transferFailed)
		s.opts.Logger.V(1).Info("zone transfer failed", "zone", z.Origin(), "type", kind, "client", w.RemoteAddr().String(), "error", err.Error())
		return
	}
	s.opts.Metrics.transferred(kind, result)
	s.opts.Logger.V(1).Info("zone transfer served", "zone", z.Origin(), "type", kind, "result", result,
		"serial", z.SOA().Serial, "records", len(rrs), "client", w.RemoteAddr().String())
}

// transferAllowed reports whether the client of req may transfer zones (AXFR, IXFR): from a
// loopback address; or from inside ServerOptions.AllowTransfer, with the request signed with
// ServerOptions.TSIG when there is one.
func (s *Server) transferAllowed(w dns.ResponseWriter, req *dns.Msg) bool {
	if isLoopback(w.RemoteAddr()) {
		return true
	}
	return s.allowedNetwork(w.RemoteAddr()) && (s.opts.TSIG == nil || s.tsig(w, req) == tsigValid)
}

// allowedNetwork reports whether addr is inside ServerOptions.AllowTransfer.
func (s *Server) allowedNetwork(addr net.Addr) bool {
	ip, ok := addrIP(addr)
	if !ok {
		return false
	}
	for _, p := range s.opts.AllowTransfer {
		if p.Contains(ip) {
			return true
		}
	}
	return false
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

// isLoopback reports whether addr is in 127.0.0.0/8 or ::1.
func isLoopback(addr net.Addr) bool {
	ip, ok := addrIP(addr)
	return ok && ip.IsLoopback()
}
