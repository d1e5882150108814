package gslb

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
)

// TestAttack_DiscoveryDropsAMemberWhoseAddressLookupFails: the edge NS set of gslb.test names
// three clusters, eu, us (this one) and ap, without glue (edgePeers then asks each name's A
// record). The A query for ns-ap fails once (SERVFAIL here; a lost packet or a timeout the same).
// docs/design.md ("Members"): the membership is "the last successfully discovered edge NS
// set", and members() says a failed discovery keeps the last set read, never a smaller one.
// Without the guard: edgePeers leaves a server without an address out and returns no error, so the
// discovery "succeeds" with ap missing: n falls from 3 to 2, ap's targets leave the candidates
// (a peer that left the list is dropped with its memory) and leave this cluster's answer at
// once, while ap and eu, a majority, reach them and see them Up (S1); and us, now one of two,
// is isolated by a lost packet.
func TestAttack_DiscoveryDropsAMemberWhoseAddressLookupFails(t *testing.T) {
	addr := dnstest.Handle(t, func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		m.Authoritative = true
		switch qq := q.Question[0]; {
		case qq.Qtype == dns.TypeNS && qq.Name == "gslb.test.":
			for _, g := range []string{"ap", "eu", "us"} {
				m.Answer = append(m.Answer, &dns.NS{Hdr: dns.RR_Header{Name: "gslb.test.", Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: 30},
					Ns: "ns-" + g + ".gslb.test."})
			}
		case qq.Qtype == dns.TypeA && qq.Name == "ns-eu.gslb.test.":
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: qq.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30},
				A: net.ParseIP("127.0.0.11")})
		default: // ns-ap's A: a transient failure
			m.Rcode = dns.RcodeServerFailure
		}
		_ = w.WriteMsg(m)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	peers, err := edgePeers(ctx, dnsclient.Client{Timeout: time.Second}, addr, "gslb.test", "us", 53)
	var tags []string
	for _, p := range peers {
		tags = append(tags, p.GeoTag)
	}
	if err == nil && !slices.Contains(tags, "ap") {
		t.Fatalf("the edge NS set names ap, eu and us; ap's address lookup failed: discovery succeeded with peers %v (n = %d): a lookup failure shrank the membership",
			tags, len(tags)+1)
	}
}
