package zonedb

import (
	"net/netip"
	"slices"

	"github.com/miekg/dns"
)

// NameServer returns the name server every zone the store creates names at its apex:
// ns1.<origin> (DefaultNameServerLabel), origin canonical (lower case, trailing dot).
func NameServer(origin string) string { return DefaultNameServerLabel + "." + origin }

// GlueSets returns the glue of name server ns for addrs: an A set of the IPv4 addresses
// (IPv4-mapped IPv6 ones included, unmapped) and an AAAA set of the IPv6 ones, in that order,
// each only when it has a record, with TTL DefaultNSTTL. Invalid and unspecified addresses
// (0.0.0.0, ::: a listen address, not a reachable one) and repeats are skipped.
func GlueSets(ns string, addrs []netip.Addr) []RRSet {
	v4 := RRSet{Name: ns, Type: dns.TypeA, TTL: DefaultNSTTL}
	v6 := RRSet{Name: ns, Type: dns.TypeAAAA, TTL: DefaultNSTTL}
	for _, a := range addrs {
		if !a.IsValid() || a.IsUnspecified() {
			continue
		}
		hdr := dns.RR_Header{Name: ns, Class: dns.ClassINET, Ttl: DefaultNSTTL}
		set, rr := &v6, dns.RR(nil)
		if a.Is4() || a.Is4In6() {
			hdr.Rrtype = dns.TypeA
			set, rr = &v4, &dns.A{Hdr: hdr, A: a.Unmap().AsSlice()}
		} else {
			hdr.Rrtype = dns.TypeAAAA
			rr = &dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()}
		}
		if !containsRR(set.RRs, rr) {
			set.RRs = append(set.RRs, rr)
		}
	}
	var out []RRSet
	for _, rs := range []RRSet{v4, v6} {
		if len(rs.RRs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// NameServerAddrs returns a copy of the glue addresses of the zones the store creates from now
// on (StoreOptions.NameServerAddrs, as last set by SetNameServerAddrs).
func (s *Store) NameServerAddrs() []netip.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.opts.NameServerAddrs)
}

// SetNameServerAddrs replaces StoreOptions.NameServerAddrs: the glue of ns1.<zone> in zones
// CreateZone creates after it returns. Existing zones are not changed (a transaction through
// Update rewrites their glue: the local provider's SetNameServerAddrs).
func (s *Store) SetNameServerAddrs(addrs []netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.NameServerAddrs = slices.Clone(addrs)
}
