package dnssec

import (
	"slices"

	"github.com/miekg/dns"
)

// Compact denial of existence (RFC 9824): an online signer answers every denial with one NSEC
// made for the question, at the name asked, whose next name is the name's immediate successor
// in canonical order (RFC 4034 §6.1), so that the NSEC covers no other name and the zone
// cannot be walked. A name that does not exist is answered as one that exists without the
// type asked: its NSEC lists RRSIG, NSEC and the NXNAME meta-type (RFC 9824 §3.2), which
// tells it apart from an empty non-terminal.

// CompactNXDomain returns the NSEC that denies qname (a name that does not exist in the zone),
// TTL ttl: at qname, next name its immediate successor, types RRSIG, NSEC and NXNAME.
func CompactNXDomain(qname string, ttl uint32) *dns.NSEC {
	return compactNSEC(qname, []uint16{dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNXNAME}, ttl)
}

// CompactNoData returns the NSEC that denies every type but types at owner, a name of the
// zone origin (an empty non-terminal: no type), TTL ttl: at owner, next name its immediate
// successor, types those of owner plus RRSIG and NSEC, and DNSKEY at the apex.
func CompactNoData(origin, owner string, types []uint16, ttl uint32) *dns.NSEC {
	out := append(slices.Clone(types), dns.TypeRRSIG, dns.TypeNSEC)
	if dns.CanonicalName(owner) == dns.CanonicalName(origin) {
		out = append(out, dns.TypeDNSKEY)
	}
	slices.Sort(out)
	return compactNSEC(owner, slices.Compact(out), ttl)
}

func compactNSEC(owner string, types []uint16, ttl uint32) *dns.NSEC {
	return &dns.NSEC{
		Hdr:        dns.RR_Header{Name: owner, Rrtype: dns.TypeNSEC, Class: dns.ClassINET, Ttl: ttl},
		NextDomain: Successor(owner),
		TypeBitMap: types,
	}
}

// Successor returns the name that follows name in canonical order (RFC 4034 §6.1; RFC 4471
// §3.1.2): name with a first label of one zero octet ("\000.<name>") when that fits 255
// octets; else name with the last octet of its first label raised by one (an uppercase
// letter, which sorts as its lowercase, is skipped over), or, where that octet is 0xff, the
// successor of name without its first label.
func Successor(name string) string {
	var wire [256]byte
	n, err := dns.PackDomainName(dns.Fqdn(name), wire[:], 0, nil, false)
	if err != nil || n <= 1 {
		return name // the root, or no name: nothing follows it within a zone
	}
	if n+2 <= 255 {
		return "\\000." + name
	}
	w := wire[:n]
	for len(w) > 1 {
		l := int(w[0])
		if last := w[l]; last < 0xff {
			w[l] = last + 1
			if w[l] >= 'A' && w[l] <= 'Z' {
				w[l] = 'Z' + 1
			}
			out, _, err := dns.UnpackDomainName(w, 0)
			if err != nil {
				return name
			}
			return out
		}
		w = w[l+1:]
	}
	return name
}
