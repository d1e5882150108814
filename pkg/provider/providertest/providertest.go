package providertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
)

// Harness gives the suite a backend per subtest.
type Harness struct {
	// New returns a provider over a fresh backend. Required. It registers its
	// own cleanup with t.Cleanup.
	New func(t *testing.T) Backend
	// ZoneSuffix is the parent of every zone the suite creates
	// ("<label>-<random>.<suffix>"); default "conformance.test".
	ZoneSuffix string
	// Timeout bounds each provider call; default 30 s.
	Timeout time.Duration
}

// Backend is one provider instance and what the suite may do around it.
type Backend struct {
	// Provider is the instance under test, unwrapped: Run wraps it with Guarded. Required.
	Provider provider.Provider
	// Restart, when set, returns a new provider instance over the same
	// backend, as after a manager restart; the suite then checks that state
	// survives it. The suite guards it as it guards Provider.
	Restart func(t *testing.T) provider.Provider
	// DNSAddr, when set, is host:port of a DNS server authoritative for the
	// backend's zones; the suite verifies answers with real queries (TCP).
	DNSAddr string
	// PropagationTimeout is how long answers may lag a write; 0 means they
	// must be served as soon as ApplyChanges returns.
	PropagationTimeout time.Duration
	// ExistingZoneID is, for providers without CreateZones, an empty zone the
	// record subtests write into (they delete what they wrote).
	ExistingZoneID string
}

// Run runs the whole suite as subtests of t.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("providertest: Harness.New is required")
	}
	if h.ZoneSuffix == "" {
		h.ZoneSuffix = "conformance.test"
	}
	if h.Timeout == 0 {
		h.Timeout = 30 * time.Second
	}
	for _, st := range []struct {
		name string
		fn   func(*testing.T, *suite)
	}{
		{"RecordTypesCreateUpdateDelete", testRecordTypes},
		{"MultiTargetSetsAndTTLChanges", testMultiTargetAndTTL},
		{"ThousandChangeBatch", testThousandChanges},
		{"EnsureZoneIdempotentAfterCrash", testEnsureZoneIdempotent},
		{"ZoneConflict", testZoneConflict},
		{"DeleteZoneWithRecords", testDeleteZoneWithRecords},
		{"ListRoundTripsExactly", testRoundTrip},
		{"ConditionalWrites", testConditionalWrites},
		{"WeightedRouting", testWeighted},
		{"GeoRouting", testGeo},
		{"InvalidChangeWritesNothing", testInvalidChange},
		{"UnknownZoneIsErrZoneNotFound", testUnknownZone},
		{"ReadZoneIsGetZoneAndListRecordSets", testReadZone},
	} {
		t.Run(st.name, func(t *testing.T) {
			b := h.New(t)
			if b.Provider == nil {
				t.Fatal("providertest: Backend.Provider is nil")
			}
			g := Guarded(b.Provider)
			st.fn(t, &suite{h: h, b: b, p: g, g: g, caps: g.Capabilities()})
		})
	}
}

type suite struct {
	h    Harness
	b    Backend
	p    provider.Provider
	g    *guard.Provider // p, the provider as the factory wraps it
	caps provider.Capabilities
}

// Guarded wraps p as pkg/provider/factory does, guard over counting (without limits, metrics or
// a zone-list cache), so that the suite checks the provider as the controllers use it: the guard
// is the only splitter, and each of p's ApplyChanges is one request within its Capabilities.
func Guarded(p provider.Provider) *guard.Provider {
	return guard.New(counting.Wrap(p, "conformance", nil), guard.Options{})
}

// restart returns the harness's Restart provider, guarded as Run guards Backend.Provider.
func (s *suite) restart(t *testing.T) provider.Provider { return Guarded(s.b.Restart(t)) }

func (s *suite) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// zoneName returns a fresh zone name under the suffix.
func (s *suite) zoneName(label string) string {
	return fmt.Sprintf("%s-%06d.%s", label, rand.IntN(1000000), s.h.ZoneSuffix)
}

// needZoneCreation skips zone-lifecycle subtests on providers that cannot
// create zones (RFC 2136).
func (s *suite) needZoneCreation(t *testing.T) {
	t.Helper()
	if !s.caps.CreateZones {
		t.Skip("provider cannot create zones (Capabilities.CreateZones is false)")
	}
}

// ensureZone creates a zone and deletes it when the test ends.
func (s *suite) ensureZone(t *testing.T, p provider.Provider, name, ref string) provider.Zone {
	t.Helper()
	z, err := p.EnsureZone(s.ctx(t), provider.ZoneSpec{Name: name, CallerReference: ref, Tags: map[string]string{"dnsplane.io/test": "conformance"}})
	if err != nil {
		t.Fatalf("EnsureZone(%s): %v", name, err)
	}
	s.cleanupZone(t, z.ID)
	return z
}

func (s *suite) cleanupZone(t *testing.T, id string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
		defer cancel()
		if err := s.p.DeleteZone(ctx, id); err != nil && !errors.Is(err, provider.ErrZoneNotFound) {
			t.Errorf("cleanup: DeleteZone(%s): %v", id, err)
		}
	})
}

// recordZone returns the zone record subtests write into: a new zone, or
// the harness's existing one (cleaned of what the test wrote).
func (s *suite) recordZone(t *testing.T, label string) provider.Zone {
	t.Helper()
	if s.caps.CreateZones {
		return s.ensureZone(t, s.p, s.zoneName(label), "providertest-"+label+"-"+t.Name())
	}
	if s.b.ExistingZoneID == "" {
		t.Skip("provider cannot create zones and the harness gives no ExistingZoneID")
	}
	z, err := s.p.GetZone(s.ctx(t), s.b.ExistingZoneID)
	if err != nil {
		t.Fatalf("GetZone(%s): %v", s.b.ExistingZoneID, err)
	}
	before := s.list(t, z.ID)
	t.Cleanup(func() { s.restore(t, z.ID, before) })
	return z
}

// restore deletes every set that was not in before (existing-zone mode).
func (s *suite) restore(t *testing.T, zoneID string, before []provider.RecordSet) {
	ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
	defer cancel()
	current, err := s.p.ListRecordSets(ctx, zoneID)
	if err != nil {
		t.Errorf("cleanup: list: %v", err)
		return
	}
	var dels []provider.Change
	for _, rs := range current {
		if find(before, rs.Key()) == nil {
			rs := rs
			dels = append(dels, provider.Change{Action: provider.ActionDelete, Before: &rs})
		}
	}
	if err := s.p.ApplyChanges(ctx, zoneID, dels); err != nil {
		t.Errorf("cleanup: delete %d sets: %v", len(dels), err)
	}
}

func (s *suite) list(t *testing.T, zoneID string) []provider.RecordSet {
	t.Helper()
	sets, err := s.p.ListRecordSets(s.ctx(t), zoneID)
	if err != nil {
		t.Fatalf("ListRecordSets(%s): %v", zoneID, err)
	}
	return sets
}

func (s *suite) apply(t *testing.T, zoneID string, changes ...provider.Change) {
	t.Helper()
	if err := s.p.ApplyChanges(s.ctx(t), zoneID, changes); err != nil {
		t.Fatalf("ApplyChanges(%d changes): %v", len(changes), err)
	}
}

func find(sets []provider.RecordSet, k provider.RecordSetKey) *provider.RecordSet {
	for i := range sets {
		if sets[i].Key() == k {
			return &sets[i]
		}
	}
	return nil
}

// expectListed checks that the zone lists exactly want for each of want's
// keys.
func (s *suite) expectListed(t *testing.T, zoneID string, want ...provider.RecordSet) {
	t.Helper()
	sets := s.list(t, zoneID)
	for _, w := range want {
		got := find(sets, w.Key())
		if got == nil {
			t.Errorf("ListRecordSets lacks %s", w.Key())
			continue
		}
		if !got.Equal(w) {
			t.Errorf("ListRecordSets has\n  %s\nwant\n  %s", got, w)
		}
	}
}

// expectNotCapable checks that creating rs, which the provider's capabilities rule out (what
// says how), fails with provider.ErrNotCapable and leaves no such set.
func (s *suite) expectNotCapable(t *testing.T, zoneID string, rs provider.RecordSet, what string) {
	t.Helper()
	err := s.p.ApplyChanges(s.ctx(t), zoneID, []provider.Change{create(rs)})
	if !errors.Is(err, provider.ErrNotCapable) {
		t.Fatalf("%s: %v, want ErrNotCapable", what, err)
	}
	s.expectNotListed(t, zoneID, rs.Key())
}

func (s *suite) expectNotListed(t *testing.T, zoneID string, keys ...provider.RecordSetKey) {
	t.Helper()
	sets := s.list(t, zoneID)
	for _, k := range keys {
		if got := find(sets, k); got != nil {
			t.Errorf("ListRecordSets still has %s", got)
		}
	}
}

func create(rs provider.RecordSet) provider.Change {
	return provider.Change{Action: provider.ActionCreate, After: &rs}
}

func update(before, after provider.RecordSet) provider.Change {
	return provider.Change{Action: provider.ActionUpdate, Before: &before, After: &after}
}

func del(rs provider.RecordSet) provider.Change {
	return provider.Change{Action: provider.ActionDelete, Before: &rs}
}

// served queries the DNS server for name/type over TCP and returns the
// owner's records of that type, from the answer, or from the authority
// section for a referral, as canonical targets, and their TTLs.
func (s *suite) served(t *testing.T, name, rtype string) (targets []string, ttls []uint32, rcode int) {
	t.Helper()
	qtype := dns.StringToType[rtype]
	m := new(dns.Msg)
	m.SetQuestion(dnswire.Fqdn(name), qtype)
	m.SetEdns0(4096, false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := &dns.Client{Net: "tcp"}
	resp, _, err := c.ExchangeContext(ctx, m, s.b.DNSAddr)
	if err != nil {
		t.Fatalf("query %s %s at %s: %v", name, rtype, s.b.DNSAddr, err)
	}
	for _, rr := range append(slices.Clone(resp.Answer), resp.Ns...) {
		h := rr.Header()
		if h.Rrtype == qtype && dnswire.Dotless(h.Name) == dnswire.Dotless(name) {
			targets = append(targets, provider.TargetFromRR(rr))
			ttls = append(ttls, h.Ttl)
		}
	}
	slices.Sort(targets)
	return targets, ttls, resp.Rcode
}

// eventually retries check until it returns "" or the propagation timeout
// passes, then fails with the last message.
func (s *suite) eventually(t *testing.T, check func() string) {
	t.Helper()
	deadline := time.Now().Add(s.b.PropagationTimeout)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Error(msg)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// expectServed checks, when the harness has a DNS address, that rs's name
// and type are answered with exactly rs's targets and TTL.
func (s *suite) expectServed(t *testing.T, rs provider.RecordSet) {
	t.Helper()
	if s.b.DNSAddr == "" {
		return
	}
	want := slices.Clone(rs.Targets)
	slices.Sort(want)
	s.eventually(t, func() string {
		got, ttls, rcode := s.served(t, rs.Name, rs.Type)
		if !slices.Equal(got, want) {
			return fmt.Sprintf("DNS %s %s: rcode %s targets %q, want %q", rs.Name, rs.Type, dns.RcodeToString[rcode], got, want)
		}
		for _, ttl := range ttls {
			if int64(ttl) != rs.TTL {
				return fmt.Sprintf("DNS %s %s: TTL %d, want %d", rs.Name, rs.Type, ttl, rs.TTL)
			}
		}
		return ""
	})
}

// expectNotServed checks that name/type has no records any more.
func (s *suite) expectNotServed(t *testing.T, name, rtype string) {
	t.Helper()
	if s.b.DNSAddr == "" {
		return
	}
	s.eventually(t, func() string {
		if got, _, _ := s.served(t, name, rtype); len(got) > 0 {
			return fmt.Sprintf("DNS %s %s still answers %q", name, rtype, got)
		}
		return ""
	})
}

func testRecordTypes(t *testing.T, s *suite) {
	z := s.recordZone(t, "types")
	at := func(label string) string { return label + "." + z.Name }
	for _, tc := range []struct {
		rtype         string
		name          string
		create, after []string
	}{
		{"A", at("a"), []string{"192.0.2.1"}, []string{"192.0.2.2"}},
		{"AAAA", at("aaaa"), []string{"2001:db8::1"}, []string{"2001:db8::2"}},
		{"CNAME", at("cname"), []string{"target.example.net"}, []string{"other.example.net"}},
		{"TXT", at("txt"), []string{"hello world"}, []string{`v="2" and more`}},
		{"NS", at("delegated"), []string{"ns1.example.net", "ns2.example.net"}, []string{"ns3.example.net"}},
		{"MX", at("mx"), []string{"10 mail.example.net"}, []string{"20 mx.example.net"}},
		{"SRV", at("_sip._tcp"), []string{"0 5 5060 sip.example.net"}, []string{"10 5 5061 sip2.example.net"}},
		{"CAA", at("caa"), []string{`0 issue "letsencrypt.org"`}, []string{`0 issuewild "example.net"`}},
	} {
		t.Run(tc.rtype, func(t *testing.T) {
			v1 := provider.RecordSet{Name: tc.name, Type: tc.rtype, TTL: 300, Targets: tc.create}
			s.apply(t, z.ID, create(v1))
			s.expectListed(t, z.ID, v1)
			s.expectServed(t, v1)

			v2 := provider.RecordSet{Name: tc.name, Type: tc.rtype, TTL: 300, Targets: tc.after}
			s.apply(t, z.ID, update(v1, v2))
			s.expectListed(t, z.ID, v2)
			s.expectServed(t, v2)

			s.apply(t, z.ID, del(v2))
			s.expectNotListed(t, z.ID, v2.Key())
			s.expectNotServed(t, tc.name, tc.rtype)
		})
	}
}

func testMultiTargetAndTTL(t *testing.T, s *suite) {
	z := s.recordZone(t, "multi")
	v1 := provider.RecordSet{Name: "www." + z.Name, Type: "A", TTL: 300, Targets: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}}
	s.apply(t, z.ID, create(v1))
	s.expectListed(t, z.ID, v1)
	s.expectServed(t, v1)

	v2 := provider.RecordSet{Name: v1.Name, Type: "A", TTL: 60, Targets: []string{"192.0.2.3", "192.0.2.4"}}
	s.apply(t, z.ID, update(v1, v2))
	s.expectListed(t, z.ID, v2)
	s.expectServed(t, v2)

	v3 := v2.Clone()
	v3.TTL = 3600
	s.apply(t, z.ID, update(v2, v3))
	s.expectListed(t, z.ID, v3)
	s.expectServed(t, v3)
}

func testThousandChanges(t *testing.T, s *suite) {
	z := s.recordZone(t, "bulk")
	const n = 1000
	var sets []provider.RecordSet
	var changes []provider.Change
	for i := range n {
		rs := provider.RecordSet{Name: fmt.Sprintf("h%04d.bulk.%s", i, z.Name), Type: "A", TTL: 60,
			Targets: []string{fmt.Sprintf("10.%d.%d.1", i/256, i%256)}}
		sets = append(sets, rs)
		changes = append(changes, create(rs))
	}
	if b := s.g.Batches(changes); len(b) > 1 {
		t.Logf("the guard splits %d changes into %d requests by the provider's limits", n, len(b))
	}
	s.apply(t, z.ID, changes...)
	listed := s.list(t, z.ID)
	landed := 0
	for _, w := range sets {
		if got := find(listed, w.Key()); got != nil && got.Equal(w) {
			landed++
		}
	}
	if landed != n {
		t.Fatalf("%d of %d created sets listed", landed, n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		s.expectServed(t, sets[i])
	}

	// Updating and deleting 1,000 sets in one call is split the same way.
	var updates, dels []provider.Change
	for _, rs := range sets {
		nv := rs.Clone()
		nv.TTL = 120
		updates = append(updates, update(rs, nv))
		dels = append(dels, del(nv))
	}
	s.apply(t, z.ID, updates...)
	listed = s.list(t, z.ID)
	for _, c := range updates {
		if got := find(listed, c.After.Key()); got == nil || !got.Equal(*c.After) {
			t.Fatalf("update of %s did not land: %v", c.After.Key(), got)
		}
	}
	s.apply(t, z.ID, dels...)
	listed = s.list(t, z.ID)
	for _, rs := range sets {
		if find(listed, rs.Key()) != nil {
			t.Fatalf("%s still listed after the bulk delete", rs.Key())
		}
	}
}

func testEnsureZoneIdempotent(t *testing.T, s *suite) {
	s.needZoneCreation(t)
	name := s.zoneName("idem")
	spec := provider.ZoneSpec{Name: name, CallerReference: "providertest-uid-1234"}
	first, err := s.p.EnsureZone(s.ctx(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	s.cleanupZone(t, first.ID)
	if first.ID == "" || first.Name != name || len(first.NameServers) == 0 || first.CallerReference != spec.CallerReference {
		t.Errorf("EnsureZone returned %+v", first)
	}
	// The crash: the caller never recorded first.ID, and ensures again.
	again, err := s.p.EnsureZone(s.ctx(t), spec)
	if err != nil || again.ID != first.ID {
		t.Fatalf("second EnsureZone = %+v, %v; want the same zone %s", again, err, first.ID)
	}
	p := s.p
	if s.b.Restart != nil {
		p = s.restart(t)
		restarted, err := p.EnsureZone(s.ctx(t), spec)
		if err != nil || restarted.ID != first.ID {
			t.Fatalf("EnsureZone on a new instance = %+v, %v; want the same zone %s", restarted, err, first.ID)
		}
	}
	zones, err := p.ListZones(s.ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, z := range zones {
		if z.Name == name {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("%d zones named %s listed, want exactly 1", count, name)
	}
	got, err := p.GetZone(s.ctx(t), first.ID)
	if err != nil || got.Name != name || got.CallerReference != spec.CallerReference {
		t.Fatalf("GetZone = %+v, %v", got, err)
	}
	// And the interrupted work can continue on the zone found again.
	rs := provider.RecordSet{Name: "www." + name, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	if err := p.ApplyChanges(s.ctx(t), got.ID, []provider.Change{create(rs)}); err != nil {
		t.Fatalf("write after re-ensure: %v", err)
	}
}

func testZoneConflict(t *testing.T, s *suite) {
	s.needZoneCreation(t)
	name := s.zoneName("conflict")
	orig := s.ensureZone(t, s.p, name, "owner-a")
	_, err := s.p.EnsureZone(s.ctx(t), provider.ZoneSpec{Name: name, CallerReference: "owner-b"})
	if !errors.Is(err, provider.ErrZoneConflict) {
		t.Fatalf("EnsureZone with another caller reference: %v, want ErrZoneConflict", err)
	}
	zones, err := s.p.ListZones(s.ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var same []provider.Zone
	for _, z := range zones {
		if z.Name == name {
			same = append(same, z)
		}
	}
	if len(same) != 1 || same[0].ID != orig.ID || same[0].CallerReference != "owner-a" {
		t.Fatalf("zones named %s: %+v; want only the original", name, same)
	}
}

func testDeleteZoneWithRecords(t *testing.T, s *suite) {
	s.needZoneCreation(t)
	z := s.ensureZone(t, s.p, s.zoneName("delete"), "providertest-delete")
	sets := []provider.RecordSet{
		{Name: "www." + z.Name, Type: "A", TTL: 60, Targets: []string{"192.0.2.1", "192.0.2.2"}},
		{Name: "txt." + z.Name, Type: "TXT", TTL: 60, Targets: []string{"some text"}},
		{Name: "child." + z.Name, Type: "NS", TTL: 60, Targets: []string{"ns1.example.net"}},
		{Name: "alias." + z.Name, Type: "CNAME", TTL: 60, Targets: []string{"www." + z.Name}},
	}
	var changes []provider.Change
	for _, rs := range sets {
		changes = append(changes, create(rs))
	}
	s.apply(t, z.ID, changes...)
	s.expectServed(t, sets[0])
	if err := s.p.DeleteZone(s.ctx(t), z.ID); err != nil {
		t.Fatalf("DeleteZone of a zone with records: %v", err)
	}
	if _, err := s.p.GetZone(s.ctx(t), z.ID); !errors.Is(err, provider.ErrZoneNotFound) {
		t.Errorf("GetZone after delete: %v, want ErrZoneNotFound", err)
	}
	zones, err := s.p.ListZones(s.ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, lz := range zones {
		if lz.ID == z.ID || lz.Name == z.Name {
			t.Errorf("deleted zone still listed: %+v", lz)
		}
	}
	s.expectNotServed(t, sets[0].Name, "A")
}

func testRoundTrip(t *testing.T, s *suite) {
	z := s.recordZone(t, "roundtrip")
	long := strings.Repeat(`0123456789 "quoted" text; `, 25) // 650 bytes: three character-strings
	sets := []provider.RecordSet{
		{Name: "spaces." + z.Name, Type: "TXT", TTL: 300, Targets: []string{"a value with   several spaces"}},
		{Name: "quotes." + z.Name, Type: "TXT", TTL: 300, Targets: []string{`say "hello"`, `"fully quoted"`, `back\slash`}},
		{Name: "long." + z.Name, Type: "TXT", TTL: 300, Targets: []string{long}},
		{Name: "exact255." + z.Name, Type: "TXT", TTL: 300, Targets: []string{strings.Repeat("x", 255), strings.Repeat("y", 256)}},
		{Name: "_dmarc." + z.Name, Type: "TXT", TTL: 300, Targets: []string{"v=DMARC1; p=reject; rua=mailto:dmarc@example.net"}},
		{Name: "mx." + z.Name, Type: "MX", TTL: 300, Targets: []string{"10 mx1.example.net", "20 mx2.example.net"}},
		{Name: "_xmpp._tcp." + z.Name, Type: "SRV", TTL: 300, Targets: []string{"5 0 5222 xmpp.example.net", "10 10 5223 xmpp2.example.net"}},
		{Name: z.Name, Type: "CAA", TTL: 300, Targets: []string{`0 issue "letsencrypt.org"`, `0 iodef "mailto:security@example.net"`}},
		{Name: "*.wild." + z.Name, Type: "A", TTL: 300, Targets: []string{"192.0.2.8"}},
		{Name: "v6." + z.Name, Type: "AAAA", TTL: 300, Targets: []string{"2001:db8::1", "2001:db8::a:b"}},
	}
	var changes []provider.Change
	for _, rs := range sets {
		changes = append(changes, create(rs))
	}
	s.apply(t, z.ID, changes...)
	s.expectListed(t, z.ID, sets...)
	for _, rs := range sets {
		if !strings.HasPrefix(rs.Name, "*") {
			s.expectServed(t, rs)
		}
	}
	if s.b.Restart != nil {
		p := s.restart(t)
		listed, err := p.ListRecordSets(s.ctx(t), z.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range sets {
			if got := find(listed, w.Key()); got == nil || !got.Equal(w) {
				t.Errorf("after restart: %v, want %s", got, w)
			}
		}
	}
}

func testConditionalWrites(t *testing.T, s *suite) {
	if !s.caps.ConditionalWrites {
		t.Skip("provider has no conditional writes")
	}
	z := s.recordZone(t, "cond")
	cur := provider.RecordSet{Name: "www." + z.Name, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	s.apply(t, z.ID, create(cur))
	stale := cur.Clone()
	stale.Targets = []string{"192.0.2.9"}
	staleTTL := cur.Clone()
	staleTTL.TTL = 61
	next := cur.Clone()
	next.Targets = []string{"192.0.2.2"}
	other := provider.RecordSet{Name: "other." + z.Name, Type: "A", TTL: 60, Targets: []string{"192.0.2.3"}}

	for _, tc := range []struct {
		name    string
		changes []provider.Change
	}{
		{"update with stale targets", []provider.Change{update(stale, next)}},
		{"update with stale TTL", []provider.Change{update(staleTTL, next)}},
		{"delete with stale Before", []provider.Change{del(stale)}},
		{"create of an existing set", []provider.Change{create(next)}},
		{"update of a missing set", []provider.Change{update(other, other)}},
		{"stale change fails its whole batch", []provider.Change{create(other), update(stale, next)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.p.ApplyChanges(s.ctx(t), z.ID, tc.changes)
			if !errors.Is(err, provider.ErrConflict) {
				t.Fatalf("ApplyChanges: %v, want ErrConflict", err)
			}
			s.expectListed(t, z.ID, cur)
			if batches := s.g.Batches(tc.changes); len(batches) > 1 {
				// Without BatchWrites the guard sends each change as its own request, and
				// earlier requests stay applied (provider.Provider.ApplyChanges): the create
				// before the stale update landed; the stale update failed alone.
				s.expectListed(t, z.ID, other)
				s.apply(t, z.ID, del(other))
			}
			s.expectNotListed(t, z.ID, other.Key())
			s.expectServed(t, cur)
		})
	}
	// The same change with the right Before applies.
	s.apply(t, z.ID, update(cur, next))
	s.expectListed(t, z.ID, next)
}

func testWeighted(t *testing.T, s *suite) {
	z := s.recordZone(t, "weighted")
	w := func(v int64) *int64 { return &v }
	eu := provider.RecordSet{Name: "app." + z.Name, Type: "A", TTL: 30, Targets: []string{"192.0.2.70"}, SetIdentifier: "eu", Weight: w(70)}
	us := provider.RecordSet{Name: "app." + z.Name, Type: "A", TTL: 30, Targets: []string{"192.0.2.30", "192.0.2.31"}, SetIdentifier: "us", Weight: w(30)}
	if !s.caps.WeightedRouting {
		s.expectNotCapable(t, z.ID, eu, "weighted set on a provider without weighted routing")
		return
	}
	s.apply(t, z.ID, create(eu), create(us))
	s.expectListed(t, z.ID, eu, us)
	if s.b.DNSAddr != "" {
		seen := map[string]bool{}
		for range 50 {
			got, _, _ := s.served(t, eu.Name, "A")
			switch {
			case slices.Equal(got, eu.Targets):
				seen["eu"] = true
			case slices.Equal(got, us.Targets):
				seen["us"] = true
			default:
				t.Fatalf("weighted answer %q is neither set", got)
			}
		}
		if !seen["eu"] {
			t.Errorf("the 70%% set was never answered in 50 queries")
		}
	}
	eu2 := eu.Clone()
	eu2.Weight = w(10)
	s.apply(t, z.ID, update(eu, eu2))
	s.expectListed(t, z.ID, eu2, us)
	s.apply(t, z.ID, del(eu2), del(us))
	s.expectNotListed(t, z.ID, eu.Key(), us.Key())
}

// geoSet is one geo tag's set as the Gslb controller publishes it (pkg/geo's labels; docs/design.md,
// "Geo answers").
func geoSet(t *testing.T, name, tag string, dflt bool, targets []string, regions ...string) provider.RecordSet {
	t.Helper()
	kv, err := geo.EncodeLabels(geo.Set{Tag: tag, Regions: regions, Default: dflt})
	if err != nil {
		t.Fatal(err)
	}
	ps := map[string]string{}
	for _, p := range kv {
		ps[p[0]] = p[1]
	}
	return provider.RecordSet{Name: name, Type: "A", TTL: 30, Targets: targets, SetIdentifier: tag, ProviderSpecific: ps}
}

// testGeo: a provider with GeoRouting lists the geo sets of a name (a country, a continent and
// the default, in three tags) exactly as written, and updates and deletes one tag without
// touching the others; one without it refuses a geo set as ErrNotCapable.
func testGeo(t *testing.T, s *suite) {
	z := s.recordZone(t, "geo")
	name := "app." + z.Name
	de := geoSet(t, name, "de", false, []string{"192.0.2.1"}, "DE")
	us := geoSet(t, name, "us", false, []string{"198.51.100.1", "198.51.100.2"}, "continent:NA")
	eu := geoSet(t, name, "eu", true, []string{"192.0.2.10"}, "continent:EU")
	if !s.caps.GeoRouting {
		s.expectNotCapable(t, z.ID, de, "geo set on a provider without geo routing")
		return
	}
	s.apply(t, z.ID, create(de), create(us), create(eu))
	s.expectListed(t, z.ID, de, us, eu)
	de2 := de.Clone()
	de2.Targets = []string{"192.0.2.2", "192.0.2.3"}
	s.apply(t, z.ID, update(de, de2))
	s.expectListed(t, z.ID, de2, us, eu)
	s.apply(t, z.ID, del(us))
	s.expectListed(t, z.ID, de2, eu)
	s.expectNotListed(t, z.ID, us.Key())
	s.apply(t, z.ID, del(de2), del(eu))
	s.expectNotListed(t, z.ID, de.Key(), eu.Key())
}

func testInvalidChange(t *testing.T, s *suite) {
	z := s.recordZone(t, "invalid")
	ok := provider.RecordSet{Name: "ok." + z.Name, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	for _, tc := range []struct {
		name string
		bad  provider.Change
	}{
		{"name outside the zone", create(provider.RecordSet{Name: "www.elsewhere.invalid", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}})},
		{"malformed target", create(provider.RecordSet{Name: "bad." + z.Name, Type: "A", TTL: 60, Targets: []string{"not-an-address"}})},
		{"negative TTL", create(provider.RecordSet{Name: "bad." + z.Name, Type: "A", TTL: -5, Targets: []string{"192.0.2.1"}})},
		{"create without After", provider.Change{Action: provider.ActionCreate}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.p.ApplyChanges(s.ctx(t), z.ID, []provider.Change{create(ok), tc.bad})
			if !errors.Is(err, provider.ErrInvalidChange) {
				t.Fatalf("ApplyChanges: %v, want ErrInvalidChange", err)
			}
			s.expectNotListed(t, z.ID, ok.Key())
		})
	}
}

func testUnknownZone(t *testing.T, s *suite) {
	s.needZoneCreation(t)
	// An ID in the provider's own format that no longer exists.
	z, err := s.p.EnsureZone(s.ctx(t), provider.ZoneSpec{Name: s.zoneName("gone"), CallerReference: "providertest-gone"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.p.DeleteZone(s.ctx(t), z.ID); err != nil {
		t.Fatal(err)
	}
	ctx := s.ctx(t)
	rs := provider.RecordSet{Name: "www." + z.Name, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	for name, err := range map[string]error{
		"GetZone":        func() error { _, err := s.p.GetZone(ctx, z.ID); return err }(),
		"ListRecordSets": func() error { _, err := s.p.ListRecordSets(ctx, z.ID); return err }(),
		"ReadZone":       func() error { _, _, err := provider.ReadZone(ctx, s.p, z.ID); return err }(),
		"ApplyChanges":   s.p.ApplyChanges(ctx, z.ID, []provider.Change{create(rs)}),
		"DeleteZone":     s.p.DeleteZone(ctx, z.ID),
	} {
		if !errors.Is(err, provider.ErrZoneNotFound) {
			t.Errorf("%s on a deleted zone: %v, want ErrZoneNotFound", name, err)
		}
	}
}

// testReadZone: a provider.ZoneReader's ReadZone gives the zone GetZone gives (ID, name, name
// servers) and exactly the sets ListRecordSets lists, through the guard as the controllers call
// it. Skipped for providers that are no ZoneReader (the guard's ReadZone is then their GetZone).
func testReadZone(t *testing.T, s *suite) {
	if _, ok := s.b.Provider.(provider.ZoneReader); !ok {
		t.Skipf("%T is no provider.ZoneReader", s.b.Provider)
	}
	z := s.recordZone(t, "read")
	s.apply(t, z.ID,
		create(provider.RecordSet{Name: "www." + z.Name, Type: "A", TTL: 60, Targets: []string{"192.0.2.1", "192.0.2.2"}}),
		create(provider.RecordSet{Name: "txt." + z.Name, Type: "TXT", TTL: 300, Targets: []string{`"a b"`}}))
	got, sets, err := provider.ReadZone(s.ctx(t), s.p, z.ID)
	if err != nil {
		t.Fatalf("ReadZone(%s): %v", z.ID, err)
	}
	want, err := s.p.GetZone(s.ctx(t), z.ID)
	if err != nil {
		t.Fatalf("GetZone(%s): %v", z.ID, err)
	}
	if got.ID != want.ID || got.Name != want.Name || !slices.Equal(got.NameServers, want.NameServers) {
		t.Errorf("ReadZone's zone = %s %s %v, GetZone's = %s %s %v", got.ID, got.Name, got.NameServers, want.ID, want.Name, want.NameServers)
	}
	if sets == nil {
		t.Fatal("ReadZone of a ZoneReader gave nil sets (not read)")
	}
	listed := s.list(t, z.ID)
	byKey := func(a, b provider.RecordSet) int { return strings.Compare(a.Key().String(), b.Key().String()) }
	slices.SortFunc(sets, byKey)
	slices.SortFunc(listed, byKey)
	if !slices.EqualFunc(sets, listed, func(a, b provider.RecordSet) bool { return a.Equal(b) }) {
		t.Errorf("ReadZone's sets differ from ListRecordSets':\n  %v\n  %v", sets, listed)
	}
}
