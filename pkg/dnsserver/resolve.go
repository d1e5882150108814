package dnsserver

import (
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// maxChase bounds CNAME chasing within a zone.
const maxChase = 8

// zoneFor returns the served zone with the longest origin that is qname or
// an ancestor of it, or false. For a DS query at a zone apex, the parent zone
// answers when it is served too and delegates the child (an NS set at
// qname): DS lives on the parental side of the cut (RFC 4035 §3.1.4.1).
func zoneFor(snap *zonedb.Snapshot, qname string, qtype uint16) (zonedb.ZoneVersion, bool) {
	z, ok := snap.Enclosing(qname)
	if ok && qtype == dns.TypeDS && z.Origin() == qname {
		if p := dnswire.Parent(qname); p != "" {
			if pz, ok := snap.Enclosing(p); ok {
				if n := pz.Node(qname); n != nil && len(n.Sets(dns.TypeNS)) > 0 {
					return pz, true
				}
			}
		}
	}
	return z, ok
}

// negativeSOA is the SOA for the authority section of NXDOMAIN and NODATA
// answers, with TTL min(SOA TTL, MINIMUM) (RFC 2308 §3, §5).
func negativeSOA(z zonedb.ZoneVersion) dns.RR {
	soa := dns.Copy(z.SOA()).(*dns.SOA)
	soa.Hdr.Ttl = min(soa.Hdr.Ttl, soa.Minttl)
	return soa
}

// findCut returns the owner and NS sets of the highest delegation point
// (an NS set strictly below the apex) at or above qname, or "" when qname is
// not at or below a cut. A DS query at the cut itself is not delegated: the
// parent answers it (RFC 4035 §3.1.4.1).
func findCut(z zonedb.ZoneVersion, qname string, qtype uint16) (string, []*zonedb.RRSet) {
	idx := dns.Split(qname)
	below := len(idx) - dns.CountLabel(z.Origin()) // labels of qname below the apex
	for i := below - 1; i >= 0; i-- {
		name := qname[idx[i]:]
		n := z.Node(name)
		if n == nil {
			return "", nil // nothing exists at or below name
		}
		if ns := n.Sets(dns.TypeNS); len(ns) > 0 {
			if i == 0 && qtype == dns.TypeDS {
				return "", nil
			}
			return name, ns
		}
	}
	return "", nil
}

// closestEncloser returns the nearest existing ancestor of a name that does
// not exist itself (RFC 4592 §3.3.1); the apex always exists.
func closestEncloser(z zonedb.ZoneVersion, qname string) string {
	for p := dnswire.Parent(qname); p != "" && dns.IsSubDomain(z.Origin(), p); p = dnswire.Parent(p) {
		if z.Node(p) != nil {
			return p
		}
	}
	return z.Origin()
}

// resolve fills resp for one question against the snapshot: RFC 1034 §4.3.2
// without recursion. resp already carries the question and flags. It returns
// true when the answer is the same for every such query against snap (no
// rotation, no weighted choice), so that it may be cached.
func (s *Server) resolve(snap *zonedb.Snapshot, q dns.Question, resp *dns.Msg) bool {
	return s.resolveGeo(snap, q, resp, nil, nil)
}

// resolveGeo is resolve for a client (g, nil for none): geo sets answer with g's choice,
// which g.result records; with sa (nil: unsigned), the DNSSEC work of a signed zone's answer
// is recorded there (secAnswer).
func (s *Server) resolveGeo(snap *zonedb.Snapshot, q dns.Question, resp *dns.Msg, g *geoState, sa *secAnswer) bool {
	sel := s.newSelector()
	sel.sec = sa
	if g != nil {
		// By value, so that g stays on the caller's stack.
		sel.geo, sel.geoOn = *g, true
	}
	s.resolveWith(snap, q, resp, &sel)
	if g != nil {
		*g = sel.geo
	}
	return !sel.varied
}

// resolveWith is resolve with the selection state sel.
func (s *Server) resolveWith(snap *zonedb.Snapshot, q dns.Question, resp *dns.Msg, sel *selector) {
	qname := strings.ToLower(q.Name)
	z, ok := zoneFor(snap, qname, q.Qtype)
	if !ok {
		resp.Rcode = dns.RcodeRefused
		return
	}
	resp.Authoritative = true
	if sel.sec != nil && !sel.sec.zone(z) {
		sel.sec = nil
	}
	seen := map[string]bool{}
	name := qname
	for range maxChase {
		seen[name] = true
		// 1. Delegation: a cut at or above name sends the client there.
		if cut, ns := findCut(z, name, q.Qtype); cut != "" {
			if len(resp.Answer) == 0 {
				resp.Authoritative = false
			}
			resp.Ns = append(resp.Ns, sel.all(ns, "")...)
			resp.Extra = appendGlue(resp.Extra, z, targetsOf(resp.Ns), cut)
			return
		}
		// 2. The name itself, or 3. a wildcard for it.
		n, owner, wc, ce := z.Node(name), name, "", ""
		if n == nil {
			ce = closestEncloser(z, name)
			wc = "*." + ce
			if n = z.Node(wc); n == nil {
				// NXDOMAIN, also at the end of a CNAME chain: the rcode is
				// that of the last name (RFC 6604 §3).
				resp.Rcode = dns.RcodeNameError
				resp.Ns = append(resp.Ns, negativeSOA(z))
				sel.sec.need(proofNXDomain, name, "")
				return
			}
		}
		// A CNAME answers every type but CNAME and ANY, and is chased. "A type
		// CNAME or * query should return just the CNAME" (RFC 1034 §3.6.2; NSD
		// and Knot do so): for ANY, anyType below finds the CNAME, the only set
		// of its node (validateNode), and nothing is chased.
		if q.Qtype != dns.TypeCNAME && q.Qtype != dns.TypeANY && len(n.Sets(dns.TypeCNAME)) > 0 {
			cname := sel.pick(n.Sets(dns.TypeCNAME), owner)
			resp.Answer = append(resp.Answer, cname...)
			sel.sec.synthesised(name, wc, ce, true)
			target := dnswire.LookupName(cname[0].(*dns.CNAME).Target)
			if !dnswire.IsSubdomain(target, z.Origin()) || seen[target] {
				return // out of zone, or a loop: the client follows it
			}
			name = target
			continue
		}
		answer := sel.answerAt(z, n, owner, q.Qtype)
		sel.sec.synthesised(name, wc, ce, len(answer) > 0)
		if len(answer) == 0 {
			resp.Ns = append(resp.Ns, negativeSOA(z)) // NODATA (RFC 2308 §2.2)
			return
		}
		resp.Answer = append(resp.Answer, answer...)
		switch q.Qtype { // additional section processing (RFC 1034 §4.3.2 step 6)
		case dns.TypeNS, dns.TypeMX, dns.TypeSRV, dns.TypeANY:
			resp.Extra = appendAdditional(resp.Extra, z, resp.Answer)
		}
		return
	}
}

// answerAt returns the records of node n (owner: the name asked, which a wildcard answers for)
// that answer qtype: every type for ANY, and in a signed zone the key set's DNSKEY, CDS and
// CDNSKEY RRsets and, with NSEC3, the NSEC3PARAM record at the apex.
func (sel *selector) answerAt(z zonedb.ZoneVersion, n *zonedb.Node, owner string, qtype uint16) []dns.RR {
	switch {
	case qtype == dns.TypeANY:
		return sel.anyType(n, owner)
	case qtype == dns.TypeDNSKEY && owner == z.Origin() && sel.sec != nil:
		return sel.sec.dnskeys()
	case (qtype == dns.TypeCDS || qtype == dns.TypeCDNSKEY) && owner == z.Origin() && sel.sec != nil:
		return sel.sec.parentKeys(qtype)
	case qtype == dns.TypeNSEC3PARAM && owner == z.Origin() && sel.sec != nil && sel.sec.pol.NSEC3 != nil:
		return []dns.RR{sel.sec.pol.NSEC3.Record(owner)}
	}
	return sel.pick(n.Sets(qtype), owner)
}

// anyType returns every record of node n for an ANY query, type by type in
// ascending type order, each type one RRset with its own TTL (RFC 2181 §5.2
// applies within an RRset only) and owner as owner name.
func (sel *selector) anyType(n *zonedb.Node, owner string) []dns.RR {
	var out []dns.RR
	for _, t := range n.Types() {
		out = append(out, sel.all(n.Sets(t), owner)...)
	}
	return out
}

// targetsOf returns the host names that NS, MX and SRV records point to, canonical
// (dnswire.LookupName: a target written with escapes of ordinary characters is the name without
// them).
func targetsOf(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		switch v := rr.(type) {
		case *dns.NS:
			out = append(out, dnswire.LookupName(v.Ns))
		case *dns.MX:
			out = append(out, dnswire.LookupName(v.Mx))
		case *dns.SRV:
			out = append(out, dnswire.LookupName(v.Target))
		}
	}
	return out
}

// appendAdditional appends the additional data of an answer (RFC 1034 §4.3.2 step 6): the
// addresses of its NS targets anywhere in the zone, glue below a cut included (the addresses NS
// records call for, RFC 1035 §3.3.11, as NSD and Knot send them), then those of its MX and SRV
// targets that are authoritative data, not glue (RFC 1034 §4.2.1, as NSD), each host once.
func appendAdditional(extra []dns.RR, z zonedb.ZoneVersion, answer []dns.RR) []dns.RR {
	var ns, other []string
	for _, rr := range answer {
		if v, ok := rr.(*dns.NS); ok {
			ns = append(ns, dnswire.LookupName(v.Ns))
		}
	}
	for _, h := range targetsOf(answer) {
		if !slices.Contains(ns, h) {
			other = append(other, h)
		}
	}
	extra = appendAddresses(extra, z, ns, z.Origin(), inDomain) // at or below the apex: in the zone
	return appendAddresses(extra, z, other, "", authoritative)
}

// appendGlue appends the additional data of a referral at cut to extra: first the addresses of
// its in-domain name servers (at or below cut: glue that RFC 9471 §3 makes mandatory, which fit
// tells by owner), then those of its other name servers in the zone, whether below another cut
// (sibling glue, RFC 9471 §2.2) or authoritative data (RFC 1034 §4.3.2 step 3b: "put whatever
// addresses are available into the additional section"), which are optional.
func appendGlue(extra []dns.RR, z zonedb.ZoneVersion, hosts []string, cut string) []dns.RR {
	extra = appendAddresses(extra, z, hosts, cut, inDomain)
	return appendAddresses(extra, z, hosts, cut, elsewhere)
}

// hostScope is which name servers' or targets' addresses appendAddresses takes.
type hostScope int

const (
	// inDomain: hosts at or below the cut.
	inDomain hostScope = iota
	// elsewhere: hosts in the zone but not at or below the cut.
	elsewhere
	// authoritative: hosts in the zone that are not at or below a delegation (addresses below a
	// cut are glue, not data of the zone, RFC 1034 §4.2.1).
	authoritative
)

// takes reports whether host h (canonical: targetsOf) is in scope, for a referral at cut
// (inDomain, elsewhere).
func (sc hostScope) takes(z zonedb.ZoneVersion, h, cut string) bool {
	switch sc {
	case inDomain:
		return dnswire.IsSubdomain(h, cut)
	case elsewhere:
		return !dnswire.IsSubdomain(h, cut) && dnswire.IsSubdomain(h, z.Origin())
	}
	return dnswire.IsSubdomain(h, z.Origin()) && !belowCut(z, h)
}

// belowCut reports whether h is at or below a delegation of z (an NS set strictly below the
// apex), walking from h up to the apex without allocating.
func belowCut(z zonedb.ZoneVersion, h string) bool {
	for p := h; p != z.Origin() && p != ""; p = dnswire.Parent(p) {
		if n := z.Node(p); n != nil && len(n.Sets(dns.TypeNS)) > 0 {
			return true
		}
	}
	return false
}

// appendAddresses appends to extra the A and AAAA records of the hosts in scope, each host
// once, leaving out weighted and geo sets (their choice is per query).
func appendAddresses(extra []dns.RR, z zonedb.ZoneVersion, hosts []string, cut string, scope hostScope) []dns.RR {
	for i, h := range hosts {
		if slices.Contains(hosts[:i], h) || !scope.takes(z, h, cut) {
			continue
		}
		n := z.Node(h)
		if n == nil {
			continue
		}
		for _, t := range []uint16{dns.TypeA, dns.TypeAAAA} {
			for _, rs := range n.Sets(t) {
				if _, isGeo := rs.Labels[geo.LabelTag]; rs.Weight == nil && !isGeo {
					extra = append(extra, rs.RRs...)
				}
			}
		}
	}
	return extra
}
