package dynupdate

import (
	"slices"
	"strings"

	"github.com/miekg/dns"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// Authorize returns dns.RcodeSuccess when policy lets its key make every change of u and
// names in every prerequisite of u only what it may change, else dns.RcodeRefused (RFC 2136
// §3.3: the server's own update policy). A prerequisite's owner name must be one of the
// policy's names and, for an RRset prerequisite, its type one of the policy's types (a name
// prerequisite, type ANY, the name alone): CheckPrereqs judges prerequisites against the
// records dynamic updates hold, which are the zone's records only where the key may write.
func Authorize(p Policy, u Update) int {
	for _, c := range u.Changes {
		if !p.Allows(u.Zone, c.Name, c.Type) {
			return dns.RcodeRefused
		}
	}
	for _, rr := range u.Prereqs {
		if h := rr.Header(); !p.Allows(u.Zone, h.Name, h.Rrtype) {
			return dns.RcodeRefused
		}
	}
	return dns.RcodeSuccess
}

// Endpoints returns the endpoints of name's record sets, one per type, sorted by type name:
// dnsName without the trailing dot, targets the values, recordTTL the TTL (0 becomes 1: a
// DNSEndpoint's 0 means the default TTL).
func Endpoints(name string, sets map[uint16]RRset) []dnsv1.Endpoint {
	var out []dnsv1.Endpoint
	for t, s := range sets {
		out = append(out, dnsv1.Endpoint{DNSName: dnswire.Dotless(name), RecordType: dns.TypeToString[t],
			Targets: slices.Clone(s.Values), RecordTTL: dnsv1.TTL(max(s.TTL, 1))})
	}
	slices.SortFunc(out, func(a, b dnsv1.Endpoint) int { return strings.Compare(a.RecordType, b.RecordType) })
	return out
}

// FromEndpoints returns the record sets of endpoints (a dynamic-update DNSEndpoint's, as
// Endpoints wrote them) by owner name; endpoints of a type miekg/dns does not know are left
// out.
func FromEndpoints(eps []dnsv1.Endpoint) Records {
	out := Records{}
	for _, ep := range eps {
		t, ok := dns.StringToType[ep.RecordType]
		if !ok {
			continue
		}
		name := dnswire.Fqdn(ep.DNSName)
		if out[name] == nil {
			out[name] = map[uint16]RRset{}
		}
		vs := slices.Clone(ep.Targets)
		slices.Sort(vs)
		out[name][t] = RRset{TTL: uint32(max(ep.RecordTTL, 0)), Values: slices.Compact(vs)}
	}
	return out
}

// Names returns the owner names u changes, sorted, without duplicates.
func (u Update) Names() []string {
	var out []string
	for _, c := range u.Changes {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
