package gslb

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	testclock "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

// TestAttack_UpperCaseGeoTagSplitsTheAnswerUnderEdgeDiscovery: the primary cluster runs with
// --geo-tag EU, the Gslb says failover with primaryGeoTag EU, and the peers are discovered from
// the edge NS set, where EU contributes ns-eu.gslb.test (writeEdge lowers the tag), so
// discovery reads the tag back lower case ("eu") while the strategy's primary is "EU": us
// would serve every cluster's target and EU its own alone (C1). Geo tags are lower case
// (gslb.CheckGeoTagCase, docs/api.md): --geo-tag, --ext-gslb-clusters and
// --ext-gslb-witnesses refuse upper case (internal/app's flag test), and so do the API's
// primaryGeoTag, defaultGeoTag and weights keys (apis/v1alpha1's admission test). With the
// tag as it must be written, eu, discovery and the strategy agree and both members give one
// answer.
func TestAttack_UpperCaseGeoTagSplitsTheAnswerUnderEdgeDiscovery(t *testing.T) {
	if err := gslb.CheckGeoTagCase("EU"); err == nil {
		t.Fatal("geo tag EU accepted: discovery reads it back as eu")
	}
	if _, err := gslb.ParsePeers("EU=127.0.0.11:53"); err == nil {
		t.Fatal("--ext-gslb-clusters EU=127.0.0.11:53 accepted: discovery reads it back as eu")
	}
	const tag = "eu" // the only spelling a member's --geo-tag and the API accept
	resp := new(dns.Msg)
	resp.SetQuestion("gslb.test.", dns.TypeNS)
	for _, g := range []string{tag, "us"} {
		name := "ns-" + strings.ToLower(g) + ".gslb.test." // as writeEdge names it
		resp.Ns = append(resp.Ns, &dns.NS{Hdr: dns.RR_Header{Name: "gslb.test.", Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: 30}, Ns: name})
		resp.Extra = append(resp.Extra, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.ParseIP("127.0.0.11")})
	}
	var euTag string
	for _, s := range gslb.ParseReferral(resp, "gslb.test", "us") {
		euTag = s.GeoTag
	}
	t0 := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	j := health.Judge{Clock: testclock.NewFakePassiveClock(t0)}
	eu4, us4 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.1")
	rec := func(g string) *health.Record {
		return &health.Record{GeoTag: g, IssuedAt: t0, ValidFor: 90 * time.Second, Up: []netip.Addr{eu4, us4}}
	}
	own := map[netip.Addr]health.Verdict{eu4: health.Up, us4: health.Up}
	onUs, err := j.Decide(health.Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: tag, Own: own,
		Candidates: map[string][]netip.Addr{euTag: {eu4}, "us": {us4}}, Members: []health.Member{{GeoTag: euTag, Record: rec(tag)}}})
	if err != nil {
		t.Fatal(err)
	}
	// EU's view: its peers are discovered the same way (us, lower case already).
	onEU, err := j.Decide(health.Input{Self: tag, Strategy: gslb.Failover, PrimaryGeoTag: tag, Own: own,
		Candidates: map[string][]netip.Addr{tag: {eu4}, "us": {us4}}, Members: []health.Member{{GeoTag: "us", Record: rec("us")}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(onUs.ServedA, onEU.ServedA) {
		t.Fatalf("discovered geo tag %q for --geo-tag eu; everyone healthy and heard: us serves A %v, EU serves A %v", euTag, onUs.ServedA, onEU.ServedA)
	}
}
