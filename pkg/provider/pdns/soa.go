package pdns

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/miekg/dns"
)

// PlaceholderMNAME is the MNAME of PowerDNS' default-soa-content
// ("a.misconfigured.dns.server.invalid hostmaster.@ 0 10800 3600 604800 3600"), which a zone
// gets when its create request carries no SOA.
const PlaceholderMNAME = "a.misconfigured.dns.server.invalid."

// The SOA of the zones this provider creates (RFC 1035 §3.3.13): MNAME is the zone's first name
// server, RNAME hostmaster.<zone>, the serial starts at SOASerial, and the timers, in seconds,
// are PowerDNS' own default-soa-content values (refresh 3 h, retry 1 h, expire 1 week,
// negative-caching TTL 1 h per RFC 2308 §4), so only MNAME, RNAME and the serial differ from
// what PowerDNS would write.
const (
	SOASerial  uint32 = 1
	SOARefresh uint32 = 10800
	SOARetry   uint32 = 3600
	SOAExpire  uint32 = 604800
	SOAMinimum uint32 = 3600
	// SOATTL is the SOA record's own TTL, in seconds.
	SOATTL = 3600
)

// soaRRSet returns the REPLACE rrset of the zone's SOA: MNAME the first of nameservers
// (canonical names, at least one), RNAME hostmaster.<zone>, the given serial.
func soaRRSet(zone string, nameservers []string, serial uint32) apiRRSet {
	soa := &dns.SOA{
		Hdr:     dns.RR_Header{Name: dnswire.Fqdn(zone), Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: SOATTL},
		Ns:      dnswire.Fqdn(nameservers[0]),
		Mbox:    dnswire.Fqdn("hostmaster." + zone),
		Serial:  serial,
		Refresh: SOARefresh,
		Retry:   SOARetry,
		Expire:  SOAExpire,
		Minttl:  SOAMinimum,
	}
	content := strings.TrimPrefix(soa.String(), soa.Hdr.String())
	return apiRRSet{Name: soa.Hdr.Name, Type: "SOA", TTL: SOATTL, ChangeType: "REPLACE",
		Records: []apiRecord{{Content: content}}}
}

// placeholderSOA returns the zone's SOA when its MNAME is PowerDNS' placeholder, else nil.
func placeholderSOA(z apiZone) *dns.SOA {
	for _, rs := range z.RRSets {
		if rs.Type != "SOA" || !strings.EqualFold(dnswire.Fqdn(rs.Name), dnswire.Fqdn(z.Name)) {
			continue
		}
		for _, r := range rs.Records {
			rr, err := dns.NewRR(dnswire.Fqdn(z.Name) + " 0 IN SOA " + r.Content)
			if soa, ok := rr.(*dns.SOA); err == nil && ok && strings.EqualFold(soa.Ns, PlaceholderMNAME) {
				return soa
			}
		}
	}
	return nil
}

// repairSOA replaces a placeholder SOA (a zone created by an earlier build, which sent none)
// with this provider's SOA, with a serial above the placeholder's. One PATCH.
func (p *Provider) repairSOA(ctx context.Context, z zoneInfo) error {
	if z.placeholder == nil || len(z.NameServers) == 0 {
		return nil
	}
	rs := soaRRSet(z.Name, z.NameServers, max(z.placeholder.Serial+1, SOASerial))
	if err := p.do(ctx, http.MethodPatch, zonePath(z.ID), apiPatch{RRSets: []apiRRSet{rs}}, nil); err != nil {
		return fmt.Errorf("replace the placeholder SOA: %w", err)
	}
	return nil
}
