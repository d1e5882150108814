// Package zonedbtest builds zonedb stores for tests: master-file records, record sets put in a
// transaction, and the example zones the embedded server's tests query. It is imported by tests
// only.
package zonedbtest

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// CountingClock stands still at Unix second 1: a new zone's serial is 1 and each change adds
// one (the store's serial rule: the clock's seconds are never newer), so the tests that pin
// serials count changes from 1. zonedb's TestNextSerial covers the clock's part of the rule.
func CountingClock() clock.PassiveClock { return clocktesting.NewFakePassiveClock(time.Unix(1, 0)) }

// RRs parses master-file lines.
func RRs(t testing.TB, lines ...string) []dns.RR {
	t.Helper()
	var out []dns.RR
	for _, l := range lines {
		rr, err := dns.NewRR(l)
		if err != nil {
			t.Fatalf("NewRR(%q): %v", l, err)
		}
		out = append(out, rr)
	}
	return out
}

// Put stores one set made of lines (all of one owner and type).
func Put(t testing.TB, tx *zonedb.Tx, setID string, weight *int64, lines ...string) {
	t.Helper()
	list := RRs(t, lines...)
	h := list[0].Header()
	if err := tx.Put(zonedb.RRSet{Name: h.Name, Type: h.Rrtype, TTL: h.Ttl, SetIdentifier: setID, Weight: weight, RRs: list}); err != nil {
		t.Fatalf("Put %v: %v", lines, err)
	}
}

// BigTXT is ten 100-byte strings: an answer of about 1,100 bytes.
var BigTXT = func() string {
	var parts []string
	for range 10 {
		parts = append(parts, `"`+strings.Repeat("x", 100)+`"`)
	}
	return "big.example.test. 300 IN TXT " + strings.Join(parts, " ")
}()

// ExampleStore returns a store (persisted under dir when not "", clock CountingClock) serving
// example.test and child.example.test with the records the server tests query.
func ExampleStore(t testing.TB, dir string) *zonedb.Store {
	t.Helper()
	s := zonedb.NewStore(zonedb.StoreOptions{Dir: dir, NameServerAddrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}, Clock: CountingClock()})
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateZone("example.test", zonedb.ZoneMeta{ID: "example.test", CallerReference: "ref-1", Tags: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateZone("child.example.test", zonedb.ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	w := func(v int64) *int64 { return &v }
	err := s.Update("example.test.", func(tx *zonedb.Tx) error {
		Put(t, tx, "", nil, "www.example.test. 300 IN A 192.0.2.1")
		Put(t, tx, "", nil, "www.example.test. 300 IN AAAA 2001:db8::1")
		Put(t, tx, "", nil, "multi.example.test. 60 IN A 192.0.2.11", "multi.example.test. 60 IN A 192.0.2.12", "multi.example.test. 60 IN A 192.0.2.13")
		Put(t, tx, "", nil, "deep.ent.example.test. 300 IN A 192.0.2.2")
		Put(t, tx, "", nil, "alias.example.test. 300 IN CNAME www.example.test.")
		Put(t, tx, "", nil, "chain.example.test. 300 IN CNAME alias.example.test.")
		Put(t, tx, "", nil, "ext.example.test. 300 IN CNAME target.other.test.")
		Put(t, tx, "", nil, "dangling.example.test. 300 IN CNAME nothere.example.test.")
		Put(t, tx, "", nil, "*.wild.example.test. 120 IN A 192.0.2.50")
		Put(t, tx, "", nil, "*.wild.example.test. 120 IN TXT \"wild\"")
		Put(t, tx, "", nil, "sub.example.test. 300 IN NS ns1.sub.example.test.", "sub.example.test. 300 IN NS ns.elsewhere.test.")
		Put(t, tx, "", nil, "ns1.sub.example.test. 300 IN A 192.0.2.53")
		Put(t, tx, "", nil, "sub.example.test. 300 IN DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF")
		Put(t, tx, "", nil, "child.example.test. 300 IN NS ns1.child.example.test.")
		Put(t, tx, "", nil, BigTXT)
		Put(t, tx, "", nil, "mx.example.test. 300 IN MX 10 mail.example.test.")
		Put(t, tx, "", nil, "mail.example.test. 300 IN A 192.0.2.25")
		Put(t, tx, "eu", w(70), "w.example.test. 30 IN A 192.0.2.70")
		Put(t, tx, "us", w(30), "w.example.test. 30 IN A 192.0.2.30")
		Put(t, tx, "", nil, "mixed.example.test. 30 IN A 192.0.2.100")
		Put(t, tx, "a", w(1), "mixed.example.test. 30 IN A 192.0.2.101")
		Put(t, tx, "b", nil, "mixed.example.test. 30 IN A 192.0.2.102")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update("child.example.test.", func(tx *zonedb.Tx) error {
		Put(t, tx, "", nil, "www.child.example.test. 300 IN A 198.51.100.1")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Texts renders records as "owner TYPE rdata" (no TTL, no class), sorted; OPT records are left
// out.
func Texts(list []dns.RR) []string {
	var out []string
	for _, rr := range list {
		if rr.Header().Rrtype == dns.TypeOPT {
			continue
		}
		h := rr.Header()
		rdata := strings.TrimPrefix(rr.String(), h.String())
		out = append(out, strings.ToLower(h.Name)+" "+dns.TypeToString[h.Rrtype]+" "+rdata)
	}
	slices.Sort(out)
	return out
}
