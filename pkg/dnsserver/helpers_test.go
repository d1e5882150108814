package dnsserver

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

// countingClock stands still at Unix second 1: a new zone's serial is 1 and each change adds
// one (nextSerial: the clock's seconds are never newer), so the tests that pin serials count
// changes from 1. TestNextSerial covers the clock's part of the rule.
func countingClock() clock.PassiveClock { return clocktesting.NewFakePassiveClock(time.Unix(1, 0)) }

// startServer serves store on opts.Addr (default 127.0.0.1:<ephemeral>) until the test ends.
func startServer(t testing.TB, store *Store, opts ServerOptions) *Server {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	srv, err := NewServer(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	testrun.Background(t, "server", srv.Start)
	return srv
}

// exchange sends m to addr over proto ("udp" or "tcp") with a 2 s timeout.
func exchange(t testing.TB, addr, proto string, m *dns.Msg) *dns.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c := &dns.Client{Net: proto, UDPSize: 65535}
	resp, _, err := c.ExchangeContext(ctx, m, addr)
	if err != nil {
		t.Fatalf("%s query %v: %v", proto, m.Question, err)
	}
	return resp
}

// ask queries name/qtype over proto without EDNS0.
func ask(t testing.TB, addr, proto, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	return exchange(t, addr, proto, m)
}

// rrs parses master-file lines.
func rrs(t testing.TB, lines ...string) []dns.RR {
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

// put stores one set made of lines (all of one owner and type).
func put(t testing.TB, tx *Tx, setID string, weight *int64, lines ...string) {
	t.Helper()
	list := rrs(t, lines...)
	h := list[0].Header()
	if err := tx.Put(RRSet{Name: h.Name, Type: h.Rrtype, TTL: h.Ttl, SetIdentifier: setID, Weight: weight, RRs: list}); err != nil {
		t.Fatalf("Put %v: %v", lines, err)
	}
}

func ptr[T any](v T) *T { return &v }

// bigTXT is ten 100-byte strings: an answer of about 1,100 bytes.
var bigTXT = func() string {
	var parts []string
	for range 10 {
		parts = append(parts, `"`+strings.Repeat("x", 100)+`"`)
	}
	return "big.example.test. 300 IN TXT " + strings.Join(parts, " ")
}()

// exampleStore returns a store (persisted under dir when not "") serving
// example.test and child.example.test with the records the server tests
// query.
func exampleStore(t testing.TB, dir string) *Store {
	t.Helper()
	s := NewStore(StoreOptions{Dir: dir, NameServerAddrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}, Clock: countingClock()})
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateZone("example.test", ZoneMeta{ID: "example.test", CallerReference: "ref-1", Tags: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateZone("child.example.test", ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	err := s.Update("example.test.", func(tx *Tx) error {
		put(t, tx, "", nil, "www.example.test. 300 IN A 192.0.2.1")
		put(t, tx, "", nil, "www.example.test. 300 IN AAAA 2001:db8::1")
		put(t, tx, "", nil, "multi.example.test. 60 IN A 192.0.2.11", "multi.example.test. 60 IN A 192.0.2.12", "multi.example.test. 60 IN A 192.0.2.13")
		put(t, tx, "", nil, "deep.ent.example.test. 300 IN A 192.0.2.2")
		put(t, tx, "", nil, "alias.example.test. 300 IN CNAME www.example.test.")
		put(t, tx, "", nil, "chain.example.test. 300 IN CNAME alias.example.test.")
		put(t, tx, "", nil, "ext.example.test. 300 IN CNAME target.other.test.")
		put(t, tx, "", nil, "dangling.example.test. 300 IN CNAME nothere.example.test.")
		put(t, tx, "", nil, "*.wild.example.test. 120 IN A 192.0.2.50")
		put(t, tx, "", nil, "*.wild.example.test. 120 IN TXT \"wild\"")
		put(t, tx, "", nil, "sub.example.test. 300 IN NS ns1.sub.example.test.", "sub.example.test. 300 IN NS ns.elsewhere.test.")
		put(t, tx, "", nil, "ns1.sub.example.test. 300 IN A 192.0.2.53")
		put(t, tx, "", nil, "sub.example.test. 300 IN DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF")
		put(t, tx, "", nil, "child.example.test. 300 IN NS ns1.child.example.test.")
		put(t, tx, "", nil, bigTXT)
		put(t, tx, "", nil, "mx.example.test. 300 IN MX 10 mail.example.test.")
		put(t, tx, "", nil, "mail.example.test. 300 IN A 192.0.2.25")
		put(t, tx, "eu", ptr(int64(70)), "w.example.test. 30 IN A 192.0.2.70")
		put(t, tx, "us", ptr(int64(30)), "w.example.test. 30 IN A 192.0.2.30")
		put(t, tx, "", nil, "mixed.example.test. 30 IN A 192.0.2.100")
		put(t, tx, "a", ptr(int64(1)), "mixed.example.test. 30 IN A 192.0.2.101")
		put(t, tx, "b", nil, "mixed.example.test. 30 IN A 192.0.2.102")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update("child.example.test.", func(tx *Tx) error {
		put(t, tx, "", nil, "www.child.example.test. 300 IN A 198.51.100.1")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// texts renders records as "owner TYPE rdata" (no TTL, no class), sorted.
func texts(list []dns.RR) []string {
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
