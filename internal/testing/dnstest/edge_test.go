package dnstest_test

import (
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
)

// TestEdge: the edge server answers its SOA always, the referral below Child with one NS and its
// glue per geo (sorted), REFUSED for the referral while Refuse is set and for other names.
func TestEdge(t *testing.T) {
	var refuse atomic.Bool
	addr := dnstest.ServeEdge(t, "127.0.0.1", dnstest.Edge{Zone: "edge.test", Child: "gslb.edge.test", Refuse: &refuse,
		Glue: map[string]netip.Addr{"us": netip.MustParseAddr("127.0.0.15"), "eu": netip.MustParseAddr("127.0.0.11")}})
	if r := dnstest.Ask(t, addr, "edge.test", dns.TypeSOA); !r.Authoritative || len(r.Answer) != 1 {
		t.Fatalf("SOA: %v", r)
	}
	r := dnstest.Ask(t, addr, "app.gslb.edge.test", dns.TypeA)
	if len(r.Ns) != 2 || r.Ns[0].(*dns.NS).Ns != "ns-eu.gslb.edge.test." || r.Extra[1].(*dns.A).A.String() != "127.0.0.15" {
		t.Fatalf("referral: %v", r)
	}
	if r := dnstest.Ask(t, addr, "other.test", dns.TypeA); r.Rcode != dns.RcodeRefused {
		t.Fatalf("other name: rcode %d", r.Rcode)
	}
	refuse.Store(true)
	if r := dnstest.Ask(t, addr, "gslb.edge.test", dns.TypeNS); r.Rcode != dns.RcodeRefused {
		t.Fatalf("refusing: rcode %d", r.Rcode)
	}
	if r := dnstest.Ask(t, addr, "edge.test", dns.TypeSOA); len(r.Answer) != 1 {
		t.Fatalf("SOA while refusing: %v", r)
	}
}
