package local_test

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, 0, len(s))
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// glueOf returns the targets of ns1.<zone> A and AAAA as the server answers them, sorted.
func glueOf(t *testing.T, addr, zone string) []string {
	t.Helper()
	var out []string
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
		for _, rr := range query(t, addr, "ns1."+zone, qt).Answer {
			out = append(out, provider.TargetFromRR(rr))
		}
	}
	slices.Sort(out)
	return out
}

func serialOf(t *testing.T, s *zonedb.Store, zone string) uint32 {
	t.Helper()
	zi, err := s.Zone(zone)
	if err != nil {
		t.Fatal(err)
	}
	return zi.Serial
}

// TestLocal_SetNameServerAddrsRewritesEveryZonesGlue: the dns Service's new addresses become the
// glue of ns1.<zone> in every zone the provider created and in the zones created afterwards; a
// glue set a registry record claims, a hand-written zone and a zone whose apex NS set no longer
// names ns1 are left alone; a second call with the same addresses writes nothing; a family
// without an address loses its set; no usable address is refused and changes nothing.
func TestLocal_SetNameServerAddrsRewritesEveryZonesGlue(t *testing.T) {
	e := newEnv(t) // new zones' glue: 127.0.0.1
	p := local.New(e.store, local.Options{})
	for _, z := range []string{"a.test", "b.test", "claimed.test", "renamed.test"} {
		if _, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: z, CallerReference: "r"}); err != nil {
			t.Fatal(err)
		}
	}
	// A hand-written zone (no caller reference) with its own ns1 glue.
	if _, err := e.store.CreateZone("hand.test", zonedb.ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	apply := func(zone string, ch ...provider.Change) {
		t.Helper()
		if err := p.ApplyChanges(ctx(t), zone, ch); err != nil {
			t.Fatal(err)
		}
	}
	// a.test's glue TTL was changed by hand: the rewrite keeps it.
	glueA := provider.RecordSet{Name: "ns1.a.test", Type: "A", TTL: zonedb.DefaultNSTTL, Targets: []string{"127.0.0.1"}}
	ttl600 := glueA
	ttl600.TTL = 600
	apply("a.test", provider.Change{Action: provider.ActionUpdate, Before: &glueA, After: &ttl600})
	// claimed.test: a DNSEndpoint published ns1 AAAA with its registry record.
	apply("claimed.test",
		provider.Change{Action: provider.ActionCreate, After: &provider.RecordSet{Name: "ns1.claimed.test", Type: "AAAA", TTL: 60, Targets: []string{"2001:db8::9"}}},
		provider.Change{Action: provider.ActionCreate, After: &provider.RecordSet{Name: "dp-aaaa-abcdefghij-ns1.claimed.test", Type: "TXT", TTL: 300, Targets: []string{`"entry"`}}})
	// renamed.test: its apex NS set names another server now.
	nsBefore := provider.RecordSet{Name: "renamed.test", Type: "NS", TTL: zonedb.DefaultNSTTL, Targets: []string{"ns1.renamed.test"}}
	nsAfter := provider.RecordSet{Name: "renamed.test", Type: "NS", TTL: zonedb.DefaultNSTTL, Targets: []string{"ns.example.net"}}
	apply("renamed.test", provider.Change{Action: provider.ActionUpdate, Before: &nsBefore, After: &nsAfter})
	serialA := serialOf(t, e.store, "a.test")

	changed, err := p.SetNameServerAddrs(ctx(t), addrs("10.96.0.53", "fd00::53"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a.test.", "b.test.", "claimed.test."}; !slices.Equal(changed, want) {
		t.Errorf("rewritten zones %v, want %v", changed, want)
	}
	for zone, want := range map[string][]string{
		"a.test":       {"10.96.0.53", "fd00::53"},
		"b.test":       {"10.96.0.53", "fd00::53"},
		"claimed.test": {"10.96.0.53", "2001:db8::9"}, // the claimed AAAA kept
		"hand.test":    {"127.0.0.1"},
		"renamed.test": {"127.0.0.1"},
	} {
		if got := glueOf(t, e.addr, zone); !slices.Equal(got, want) {
			t.Errorf("%s: ns1 glue %v, want %v", zone, got, want)
		}
	}
	if got := query(t, e.addr, "ns1.a.test", dns.TypeA).Answer; len(got) != 1 || got[0].Header().Ttl != 600 {
		t.Errorf("ns1.a.test A %v, want TTL 600 kept", got)
	}
	if got := serialOf(t, e.store, "a.test"); got != serialA+1 {
		t.Errorf("a.test serial %d after the rewrite, want %d (one transaction)", got, serialA+1)
	}

	// The same addresses again: nothing is written.
	if changed, err := p.SetNameServerAddrs(ctx(t), addrs("fd00::53", "10.96.0.53")); err != nil || len(changed) != 0 {
		t.Errorf("second call: rewrote %v, %v; want nothing", changed, err)
	}
	if got := serialOf(t, e.store, "a.test"); got != serialA+1 {
		t.Errorf("a.test serial %d after a call that changes nothing, want %d", got, serialA+1)
	}
	// A zone created now gets the new glue.
	if _, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "new.test", CallerReference: "r"}); err != nil {
		t.Fatal(err)
	}
	if got, want := glueOf(t, e.addr, "new.test"), []string{"10.96.0.53", "fd00::53"}; !slices.Equal(got, want) {
		t.Errorf("new.test: ns1 glue %v, want %v", got, want)
	}
	// IPv4 only: the AAAA glue goes.
	if _, err := p.SetNameServerAddrs(ctx(t), addrs("10.96.0.54")); err != nil {
		t.Fatal(err)
	}
	if got, want := glueOf(t, e.addr, "b.test"), []string{"10.96.0.54"}; !slices.Equal(got, want) {
		t.Errorf("b.test: ns1 glue %v, want %v", got, want)
	}
	// No usable address: refused, nothing changed.
	for _, bad := range [][]netip.Addr{nil, addrs("0.0.0.0", "::")} {
		if _, err := p.SetNameServerAddrs(ctx(t), bad); !errors.Is(err, provider.ErrInvalidChange) {
			t.Errorf("SetNameServerAddrs(%v) = %v, want ErrInvalidChange", bad, err)
		}
	}
	if got, want := glueOf(t, e.addr, "b.test"), []string{"10.96.0.54"}; !slices.Equal(got, want) {
		t.Errorf("b.test after refused calls: ns1 glue %v, want %v", got, want)
	}
	if got := e.store.NameServerAddrs(); !slices.Equal(got, addrs("10.96.0.54")) {
		t.Errorf("new zones' glue %v after refused calls, want [10.96.0.54]", got)
	}
}
