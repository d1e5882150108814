package xfr

import (
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
	ResultFull        = "full"        // the whole zone (AXFR, or IXFR beyond the journal)
	ResultIncremental = "incremental" // IXFR from the journal
	ResultUpToDate    = "uptodate"    // IXFR from a client at the current serial: the SOA only
	ResultUseTCP      = "usetcp"      // IXFR over UDP from a client behind: the SOA only (RFC 1995 §2)
	ResultRefused     = "refused"     // client not allowed, UDP AXFR, unserved zone, no SOA in an IXFR
	ResultFailed      = "failed"      // the client went away mid-transfer
)

// ServeTransfer answers req, an AXFR (RFC 5936) or IXFR (RFC 1995, ixfr.go) from client c,
// with miekg's dns.Transfer: SOA first and last (RFC 5936 §2.2), written to w, and returns nil;
// or returns resp, the server's reply to req, filled in for the server to write. Only to
// clients Allowed admits and only for a zone apex; AXFR only over TCP; otherwise resp is
// REFUSED (NOTAUTH for a name inside a zone that is not its apex). Weighted sets are
// transferred too: a secondary serves them merged.
func (h *Handler) ServeTransfer(w dns.ResponseWriter, req, resp *dns.Msg, c Client) *dns.Msg {
	kind := strings.ToLower(dns.TypeToString[req.Question[0].Qtype])
	if !h.Allowed(c) || (c.UDP && req.Question[0].Qtype == dns.TypeAXFR) {
		h.opts.Metrics.transferred(kind, ResultRefused)
		resp.Rcode = dns.RcodeRefused
		return resp
	}
	qname := strings.ToLower(req.Question[0].Name)
	snap := h.store.Snapshot()
	z, ok := snap.Zone(qname)
	if !ok {
		h.opts.Metrics.transferred(kind, ResultRefused)
		resp.Rcode = dns.RcodeRefused
		if _, ok := snap.Enclosing(qname); ok {
			resp.Rcode = dns.RcodeNotAuth
		}
		return resp
	}
	if req.Question[0].Qtype == dns.TypeIXFR {
		return h.ixfr(w, req, resp, z, c.UDP)
	}
	rrs, err := h.fullZone(z)
	if err != nil {
		h.opts.Metrics.transferred(kind, ResultFailed)
		h.opts.Logger.Error(err, "signing a zone transfer failed", "zone", z.Origin())
		resp.Rcode = dns.RcodeServerFailure
		return resp
	}
	h.writeTransfer(w, req, z, kind, ResultFull, rrs)
	return nil
}

// fullZone returns the records of a full transfer of z: signed (Options.Signed) when z is
// signed, else unsignedZone.
func (h *Handler) fullZone(z zonedb.ZoneVersion) ([]dns.RR, error) {
	if rrs, ok, err := h.signedZone(z); ok || err != nil {
		return rrs, err
	}
	return unsignedZone(z), nil
}

// unsignedZone returns the zone's records as a full transfer sends them: SOA, every set's
// records in sortedSets order, SOA.
func unsignedZone(z zonedb.ZoneVersion) []dns.RR {
	out := []dns.RR{z.SOA()}
	for _, rs := range z.Sets() {
		out = append(out, rs.RRs...)
	}
	return append(out, z.SOA())
}

// writeTransfer sends rrs over the TCP connection in messages of about transferChunk bytes,
// and counts the transfer (kind "axfr" or "ixfr", result).
func (h *Handler) writeTransfer(w dns.ResponseWriter, req *dns.Msg, z zonedb.ZoneVersion, kind, result string, rrs []dns.RR) {
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
		h.opts.Metrics.transferred(kind, ResultFailed)
		h.opts.Logger.V(1).Info("zone transfer failed", "zone", z.Origin(), "type", kind, "client", w.RemoteAddr().String(), "error", err.Error())
		return
	}
	h.opts.Metrics.transferred(kind, result)
	h.opts.Logger.V(1).Info("zone transfer served", "zone", z.Origin(), "type", kind, "result", result,
		"serial", z.SOA().Serial, "records", len(rrs), "client", w.RemoteAddr().String())
}
