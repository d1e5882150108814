package dnsserver

import (
	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// compactProofs returns the compact denial (RFC 9824) of each proof the answer needs, one NSEC
// made for it at the name it denies, with the negative answer's TTL: a name that does not exist
// gets RRSIG NSEC NXNAME (§3.2); a name without the type asked, an empty non-terminal and a
// delegation without DS get the name's types (§3.1, §3.4); a name a wildcard answers without
// the type asked gets the wildcard's types at the name (it is answered as if it existed,
// §3.3); a wildcard answer needs none (signAnswer signs it as the name's own).
func (sa *secAnswer) compactProofs() []dns.RR {
	origin, ttl := sa.z.Origin(), negativeSOA(sa.z).Header().Ttl
	var out []dns.RR
	for _, n := range sa.needs {
		switch n.kind {
		case proofNXDomain:
			out = append(out, dnssec.CompactNXDomain(n.name, ttl))
		case proofWildcard:
		case proofWildNoData:
			out = append(out, dnssec.CompactNoData(origin, n.name, denialTypes(sa.z, "*."+n.ce), ttl))
		default: // NODATA, and no DS at a referral's cut
			out = append(out, dnssec.CompactNoData(origin, n.name, denialTypes(sa.z, n.name), ttl))
		}
	}
	return out
}

// compactRcode gives a compact denial of a name that does not exist the rcode NOERROR (RFC 9824
// §3.2: the name is denied as a name without the type asked), unless the request has the CO
// bit, whose NXDOMAIN stays (RFC 9824 §4); the response to a CO request has the CO bit.
func (sa *secAnswer) compactRcode(resp *dns.Msg) {
	if sa.co {
		if opt := resp.IsEdns0(); opt != nil {
			opt.SetCo()
		}
		return
	}
	if resp.Rcode == dns.RcodeNameError {
		resp.Rcode = dns.RcodeSuccess
	}
}
