package dnssec

import (
	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// parentStates are the states of the key-signing keys whose DS the parent is to hold: every
// state (a Generated KSK's DS comes first in a double-DS rollover, a Retired one's leaves last).
var parentStates = []State{Generated, Published, Active, Retired}

// CDS returns the zone's CDS RRset (RFC 7344 §3.1) with ttl: the DS (SHA-256) of every KSK or
// CSK the parent is to hold, the set a rollover's phase asks for (the machine's Step.DS); while
// the zone's DNSSEC is turned off (Unsigning), the delete form "0 0 0 00" (RFC 8078 §4), which
// asks the parent to remove the DS.
func (s KeySet) CDS(ttl uint32) []dns.RR {
	hdr := dns.RR_Header{Name: dnswire.Fqdn(s.Zone), Rrtype: dns.TypeCDS, Class: dns.ClassINET, Ttl: ttl}
	if s.Unsigning != nil {
		return []dns.RR{&dns.CDS{DS: dns.DS{Hdr: hdr, Digest: "00"}}}
	}
	var out []dns.RR
	for _, rr := range s.DS(ttl, parentStates...) {
		c := rr.(*dns.DS).ToCDS()
		c.Hdr = hdr
		out = append(out, c)
	}
	return out
}

// CDNSKEYs returns the zone's CDNSKEY RRset (RFC 7344 §3.2) with ttl: the DNSKEY of every KSK
// or CSK whose DS the parent is to hold (as CDS); while the zone's DNSSEC is turned off, the
// delete form "0 3 0 AA==" (RFC 8078 §4).
func (s KeySet) CDNSKEYs(ttl uint32) []dns.RR {
	hdr := dns.RR_Header{Name: dnswire.Fqdn(s.Zone), Rrtype: dns.TypeCDNSKEY, Class: dns.ClassINET, Ttl: ttl}
	if s.Unsigning != nil {
		return []dns.RR{&dns.CDNSKEY{DNSKEY: dns.DNSKEY{Hdr: hdr, Protocol: 3, PublicKey: "AA=="}}}
	}
	var out []dns.RR
	for _, k := range s.Keys {
		if k.Role == RoleZSK {
			continue
		}
		c := k.DNSKEY.ToCDNSKEY()
		c.Hdr = hdr
		out = append(out, c)
	}
	return out
}
