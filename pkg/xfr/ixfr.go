package xfr

import (
	"strings"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// ixfr answers an IXFR (RFC 1995) for zone z from a client Allowed admits. The
// client's serial is the SOA of the zone in the request's authority section (§3); without
// one the answer is FORMERR. Then:
//   - a client at the current serial or ahead of it (RFC 1982) gets the current SOA alone (§2);
//   - over UDP, a client behind gets the current SOA alone too, which tells it to ask again
//     over TCP (§2: "If the UDP reply does not fit, ..." — the server never tries to fit one);
//   - over TCP, a client whose serial the journal reaches gets the condensed difference (§4,
//     §5): current SOA, the client's SOA, the deleted records, current SOA, the added records,
//     current SOA;
//   - otherwise, and for a signed zone (Options.Signed: the journal holds unsigned changes),
//     the whole zone as in AXFR (§4: "the server ... may respond with the entire zone").
func (h *Handler) ixfr(w dns.ResponseWriter, req, resp *dns.Msg, z zonedb.ZoneVersion, udp bool) *dns.Msg {
	const kind = "ixfr"
	client, ok := clientSerial(req, z.Origin())
	if !ok {
		h.opts.Metrics.transferred(kind, ResultRefused)
		resp.Rcode = dns.RcodeFormatError
		return resp
	}
	if !zonedb.SerialNewer(z.SOA().Serial, client) || udp {
		result := ResultUpToDate
		if zonedb.SerialNewer(z.SOA().Serial, client) {
			result = ResultUseTCP
		}
		h.opts.Metrics.transferred(kind, result)
		resp.Authoritative = true
		resp.Answer = []dns.RR{z.SOA()}
		return resp
	}
	from, deleted, added, ok := z.JournalSince(client)
	signed, isSigned, err := h.signedZone(z)
	if err != nil {
		h.opts.Metrics.transferred(kind, ResultFailed)
		h.opts.Logger.Error(err, "signing a zone transfer failed", "zone", z.Origin())
		resp.Rcode = dns.RcodeServerFailure
		return resp
	}
	if isSigned || !ok {
		if !isSigned {
			signed = unsignedZone(z)
		}
		h.writeTransfer(w, req, z, kind, ResultFull, signed)
		return nil
	}
	rrs := make([]dns.RR, 0, len(deleted)+len(added)+4)
	rrs = append(rrs, z.SOA(), from)
	rrs = append(rrs, deleted...)
	rrs = append(rrs, z.SOA())
	rrs = append(rrs, added...)
	rrs = append(rrs, z.SOA())
	h.writeTransfer(w, req, z, kind, ResultIncremental, rrs)
	return nil
}

// clientSerial returns the serial of the SOA of origin in the request's authority section
// (RFC 1995 §3), or false.
func clientSerial(req *dns.Msg, origin string) (uint32, bool) {
	for _, rr := range req.Ns {
		if soa, ok := rr.(*dns.SOA); ok && strings.EqualFold(soa.Hdr.Name, origin) {
			return soa.Serial, true
		}
	}
	return 0, false
}

// signedZone returns the full transfer of z when it is signed (Options.Signed).
func (h *Handler) signedZone(z zonedb.ZoneVersion) ([]dns.RR, bool, error) {
	if h.opts.Signed == nil {
		return nil, false, nil
	}
	return h.opts.Signed(z)
}
