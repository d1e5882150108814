package dnsserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dnsplane/dnsplane/internal/testing/dnscase"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// TestServer_Answers is the over-the-wire table: one query each, the exact
// sections expected.
func TestServer_Answers(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	addr := srv.Addr()
	const soa = "example.test. SOA ns1.example.test. hostmaster.example.test. 2 3600 600 1209600 60"
	const childSOA = "child.example.test. SOA ns1.child.example.test. hostmaster.child.example.test. 2 3600 600 1209600 60"
	for _, tc := range []struct {
		name string
		dnscase.Case
	}{
		{"positive A", dnscase.Case{Qname: "www.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, AA: true,
			Answer: []string{"www.example.test. A 192.0.2.1"}}},
		{"case-insensitive qname", dnscase.Case{Qname: "WWW.Example.TEST", Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess, AA: true,
			Answer: []string{"www.example.test. AAAA 2001:db8::1"}}},
		{"apex NS with glue", dnscase.Case{Qname: "example.test", Qtype: dns.TypeNS, Rcode: dns.RcodeSuccess, AA: true,
			Answer: []string{"example.test. NS ns1.example.test."}, Extra: []string{"ns1.example.test. A 127.0.0.1"}}},
		{"apex SOA", dnscase.Case{Qname: "example.test", Qtype: dns.TypeSOA, Rcode: dns.RcodeSuccess, AA: true,
			Answer: []string{soa}}},
		{"NXDOMAIN carries SOA", dnscase.Case{Qname: "nope.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, AA: true,
			Ns: []string{soa}}},
		{"NODATA carries SOA", dnscase.Case{Qname: "www.example.test", Qtype: dns.TypeMX, Rcode: dns.RcodeSuccess, AA: true,
			Ns: []string{soa}}},
		{"empty non-terminal is NODATA", dnscase.Case{Qname: "ent.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, AA: true,
			Ns: []string{soa}}},
		{"below an existing name is NXDOMAIN", dnscase.Case{Qname: "x.www.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, AA: true,
			Ns: []string{soa}}},
		{"CNAME answers another type and is chased", dnscase.Case{Qname: "alias.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, AA: true,
			Answer: []string{"alias.example.test. CNAME www.example.test.", "www.example.test. A 192.0.2.1"}}},
		{"CNAME chain", dnscase.Case{Qname: "chain.example.test", Qtype: dns.TypeAAAA, Rcode: dns.RcodeSuccess, AA: true,
			Answer: []string{"alias.example.test. CNAME www.example.test.", "chain.example.test. CNAME alias.example.test.", "www.example.test. AAAA 2001:db8::1"}}},
		{"CNAME query returns the CNAME only", dnscase.Case{Qname: "alias.example.test", Qtype: dns.TypeCNAME, Rcode: dns.RcodeSuccess, AA: true,
			Answer: []string{"alias.example.test. CNAME www.example.test."}}},
		{"CNAME out of zone is not chased", dnscase.Case{Qname: "ext.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, AA: true,
			Answer: []string{"ext.example.test. CNAME target.other.test."}}},
		{"dangling CNAME ends in NXDOMAIN", dnscase.Case{Qname: "dangling.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, AA: true,
			Answer: []string{"dangling.example.test. CNAME nothere.example.test."}, Ns: []string{soa}}},
		{"wildcard synthesises the answer", dnscase.Case{Qname: "anything.wild.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, AA: true,
			Answer: []string{"anything.wild.example.test. A 192.0.2.50"}}},
		{"wildcard covers deeper names", dnscase.Case{Qname: "a.b.wild.example.test", Qtype: dns.TypeTXT, Rcode: dns.RcodeSuccess, AA: true,
			Answer: []string{`a.b.wild.example.test. TXT "wild"`}}},
		{"wildcard NODATA", dnscase.Case{Qname: "anything.wild.example.test", Qtype: dns.TypeMX, Rcode: dns.RcodeSuccess, AA: true,
			Ns: []string{soa}}},
		{"wildcard does not match the closest encloser's siblings", dnscase.Case{Qname: "x.nowild.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, AA: true,
			Ns: []string{soa}}},
		{"referral with glue", dnscase.Case{Qname: "host.sub.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess,
			Ns:    []string{"sub.example.test. NS ns.elsewhere.test.", "sub.example.test. NS ns1.sub.example.test."},
			Extra: []string{"ns1.sub.example.test. A 192.0.2.53"}}},
		{"referral at the cut", dnscase.Case{Qname: "sub.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess,
			Ns:    []string{"sub.example.test. NS ns.elsewhere.test.", "sub.example.test. NS ns1.sub.example.test."},
			Extra: []string{"ns1.sub.example.test. A 192.0.2.53"}}},
		{"DS at the cut answered by the parent", dnscase.Case{Qname: "sub.example.test", Qtype: dns.TypeDS, Rcode: dns.RcodeSuccess, AA: true,
			Answer: []string{"sub.example.test. DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"}}},
		{"DS at a served child's apex answered by the parent", dnscase.Case{Qname: "child.example.test", Qtype: dns.TypeDS, Rcode: dns.RcodeSuccess, AA: true,
			Ns: []string{soa}}},
		{"MX with additional address", dnscase.Case{Qname: "mx.example.test", Qtype: dns.TypeMX, Rcode: dns.RcodeSuccess, AA: true,
			Answer: []string{"mx.example.test. MX 10 mail.example.test."}, Extra: []string{"mail.example.test. A 192.0.2.25"}}},
		{"longest-match zone answers", dnscase.Case{Qname: "www.child.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, AA: true,
			Answer: []string{"www.child.example.test. A 198.51.100.1"}}},
		{"longest-match zone owns its negative answers", dnscase.Case{Qname: "nope.child.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, AA: true,
			Ns: []string{childSOA}}},
		{"REFUSED outside served zones", dnscase.Case{Qname: "www.other.test", Qtype: dns.TypeA, Rcode: dns.RcodeRefused}},
		{"REFUSED for the parent of a served zone", dnscase.Case{Qname: "test", Qtype: dns.TypeSOA, Rcode: dns.RcodeRefused}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, proto := range []string{"udp", "tcp"} {
				if err := tc.Check(ask(t, addr, proto, tc.Qname, tc.Qtype)); err != nil {
					t.Errorf("%s: %v", proto, err)
				}
			}
		})
	}
}

func TestServer_NXDOMAINCarriesSOAWithNegativeTTL(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	resp := ask(t, srv.Addr(), "udp", "missing.example.test", dns.TypeA)
	if resp.Rcode != dns.RcodeNameError || len(resp.Ns) != 1 {
		t.Fatalf("want NXDOMAIN with one authority record, got %v", resp)
	}
	soa, ok := resp.Ns[0].(*dns.SOA)
	if !ok {
		t.Fatalf("authority is %T, want SOA", resp.Ns[0])
	}
	// RFC 2308 §3: TTL = min(SOA TTL 3600, MINIMUM 60).
	if soa.Hdr.Ttl != zonedb.DefaultMinimumTTL {
		t.Errorf("SOA TTL %d, want %d", soa.Hdr.Ttl, zonedb.DefaultMinimumTTL)
	}
}

func TestServer_WildcardTTLAndOwnerAreSynthesised(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	resp := ask(t, srv.Addr(), "udp", "Some.Wild.example.test", dns.TypeA)
	if len(resp.Answer) != 1 || resp.Answer[0].Header().Ttl != 120 || resp.Answer[0].Header().Name != "some.wild.example.test." {
		t.Fatalf("wildcard answer %v", resp.Answer)
	}
	// The stored wildcard record is untouched by the synthesis.
	again := ask(t, srv.Addr(), "udp", "*.wild.example.test", dns.TypeA)
	if len(again.Answer) != 1 || again.Answer[0].Header().Name != "*.wild.example.test." {
		t.Fatalf("literal wildcard query %v", again.Answer)
	}
}

func TestServer_TruncatesOverUDPAndAnswersInFullOverTCP(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	udp := ask(t, srv.Addr(), "udp", "big.example.test", dns.TypeTXT)
	if !udp.Truncated {
		t.Fatalf("UDP answer of about 1,100 bytes without EDNS0 not truncated: %d answers", len(udp.Answer))
	}
	if n := udp.Len(); n > dns.MinMsgSize {
		t.Errorf("truncated UDP answer is %d bytes, want <= 512 (RFC 1035 §4.2.1)", n)
	}
	tcp := ask(t, srv.Addr(), "tcp", "big.example.test", dns.TypeTXT)
	if tcp.Truncated || len(tcp.Answer) != 1 || len(tcp.Answer[0].(*dns.TXT).Txt) != 10 {
		t.Fatalf("TCP answer: truncated=%v answers=%v", tcp.Truncated, tcp.Answer)
	}
}

func TestServer_EDNS0EchoAndClientBufferSize(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{UDPSize: 1400})
	for _, tc := range []struct {
		name      string
		size      uint16
		truncated bool
	}{
		{"client 4096 gets the full answer", 4096, false},
		{"client 600 is still truncated", 600, true},
		{"client below 512 counts as 512", 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := new(dns.Msg)
			m.SetQuestion("big.example.test.", dns.TypeTXT)
			m.SetEdns0(tc.size, false)
			resp := exchange(t, srv.Addr(), "udp", m)
			opt := resp.IsEdns0()
			if opt == nil {
				t.Fatal("no OPT in the response to an EDNS0 query")
			}
			if opt.UDPSize() != 1400 || opt.Version() != 0 {
				t.Errorf("OPT size %d version %d, want our 1400 and 0", opt.UDPSize(), opt.Version())
			}
			if resp.Truncated != tc.truncated {
				t.Errorf("TC = %v, want %v", resp.Truncated, tc.truncated)
			}
			if n := resp.Len(); n > max(512, int(tc.size)) {
				t.Errorf("response %d bytes exceeds the client's %d", n, tc.size)
			}
		})
	}
	plain := ask(t, srv.Addr(), "udp", "www.example.test", dns.TypeA)
	if plain.IsEdns0() != nil {
		t.Error("OPT in the response to a query without EDNS0")
	}
}

func TestServer_BADVERSForUnknownEDNSVersion(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	m := new(dns.Msg)
	m.SetQuestion("www.example.test.", dns.TypeA)
	m.SetEdns0(1232, false)
	m.IsEdns0().SetVersion(1)
	resp := exchange(t, srv.Addr(), "udp", m)
	if resp.Rcode != dns.RcodeBadVers || len(resp.Answer) != 0 {
		t.Fatalf("rcode %s, answers %d; want BADVERS and none (RFC 6891 §6.1.3)", dns.RcodeToString[resp.Rcode], len(resp.Answer))
	}
}

// transferIn asks addr for an AXFR of zone over TCP and returns every record of the answer.
func transferIn(t testing.TB, addr, zone string) ([]dns.RR, error) {
	t.Helper()
	m := new(dns.Msg)
	m.SetAxfr(zone)
	return transfer(m, addr)
}

// transfer sends the transfer request m to addr over TCP with miekg's dns.Transfer and returns
// every record of the answer, up to the first error.
func transfer(m *dns.Msg, addr string) ([]dns.RR, error) {
	tr := &dns.Transfer{DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second}
	ch, err := tr.In(m, addr)
	if err != nil {
		return nil, err
	}
	var out []dns.RR
	for env := range ch {
		if env.Error != nil {
			return out, env.Error
		}
		out = append(out, env.RR...)
	}
	return out, nil
}

func TestServer_AXFRFromLoopbackOverTCP(t *testing.T) {
	store := exampleStore(t, "")
	// Enough records to need several messages.
	err := store.Update("example.test", func(tx *zonedb.Tx) error {
		for i := range 600 {
			put(t, tx, "", nil, fmt.Sprintf("h%d.bulk.example.test. 60 IN TXT \"%s\"", i, strings.Repeat("y", 60)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, store, ServerOptions{})
	got, err := transferIn(t, srv.Addr(), "example.test.")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 2 || got[0].Header().Rrtype != dns.TypeSOA || got[len(got)-1].Header().Rrtype != dns.TypeSOA {
		t.Fatalf("AXFR must start and end with the SOA; got %d records", len(got))
	}
	sets, _ := store.RRSets("example.test")
	want := 1 // closing SOA
	for _, rs := range sets {
		want += len(rs.RRs)
	}
	if len(got) != want {
		t.Errorf("AXFR returned %d records, want %d", len(got), want)
	}
}

func TestServer_AXFRRefusedOverUDP(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	resp := ask(t, srv.Addr(), "udp", "example.test", dns.TypeAXFR)
	if resp.Rcode != dns.RcodeRefused || len(resp.Answer) != 0 {
		t.Fatalf("AXFR over UDP: rcode %s, %d answers; want REFUSED", dns.RcodeToString[resp.Rcode], len(resp.Answer))
	}
}

func TestServer_AXFRRefusedForUnservedZone(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	m := new(dns.Msg)
	m.SetAxfr("other.test.")
	resp := exchange(t, srv.Addr(), "tcp", m)
	if resp.Rcode != dns.RcodeRefused {
		t.Fatalf("rcode %s, want REFUSED", dns.RcodeToString[resp.Rcode])
	}
}

func TestServer_RotatesMultiTargetAnswers(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	firsts := map[string]int{}
	var want []string
	for i := range 6 {
		resp := ask(t, srv.Addr(), "udp", "multi.example.test", dns.TypeA)
		if len(resp.Answer) != 3 {
			t.Fatalf("got %d records, want 3", len(resp.Answer))
		}
		got := texts(resp.Answer)
		if i == 0 {
			want = got
		} else if !slices.Equal(got, want) {
			t.Fatalf("rotation changed the set: %v vs %v", got, want)
		}
		firsts[resp.Answer[0].(*dns.A).A.String()]++
	}
	// Six consecutive queries with a per-query rotation: each record leads twice.
	if len(firsts) != 3 {
		t.Fatalf("first records over 6 queries: %v; want all three to lead", firsts)
	}
	for ip, n := range firsts {
		if n != 2 {
			t.Errorf("%s led %d times, want 2", ip, n)
		}
	}
}

func TestServer_WeightedChoiceFollowsWeights(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{Rand: rand.New(rand.NewPCG(1, 2))})
	const n = 1000
	count := map[string]int{}
	for range n {
		resp := ask(t, srv.Addr(), "udp", "w.example.test", dns.TypeA)
		if len(resp.Answer) != 1 {
			t.Fatalf("weighted answer has %d records, want exactly one set of 1", len(resp.Answer))
		}
		count[resp.Answer[0].(*dns.A).A.String()]++
	}
	// Weights 70/30: the binomial standard deviation over 1,000 draws is
	// about 14.5, so ±60 is more than 4 sigma.
	if eu := count["192.0.2.70"]; eu < 640 || eu > 760 || count["192.0.2.70"]+count["192.0.2.30"] != n {
		t.Fatalf("distribution %v, want about 700/300", count)
	}
}

func TestServer_UnweightedSetsServedBesideOneWeightedSet(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{Rand: rand.New(rand.NewPCG(3, 4))})
	resp := ask(t, srv.Addr(), "udp", "mixed.example.test", dns.TypeA)
	want := []string{"mixed.example.test. A 192.0.2.100", "mixed.example.test. A 192.0.2.101", "mixed.example.test. A 192.0.2.102"}
	if got := texts(resp.Answer); !slices.Equal(got, want) {
		t.Fatalf("answer %q, want %q", got, want)
	}
}

func TestServer_StartReturnsWhenContextDone(t *testing.T) {
	srv, err := NewServer(exampleStore(t, ""), ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	deadline := time.Now().Add(testrun.HangTimeout)
	for srv.Addr() == "" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	addr := srv.Addr()
	if resp := ask(t, addr, "tcp", "www.example.test", dns.TypeA); len(resp.Answer) != 1 {
		t.Fatalf("no answer before shutdown: %v", resp)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Start returned %v", err)
		}
	case <-time.After(testrun.HangTimeout):
		t.Fatal("Start did not return after ctx was cancelled")
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("TCP port still accepting after shutdown")
	}
	if err := srv.Start(context.Background()); err == nil {
		t.Error("second Start succeeded")
	}
}

// TestServer_DrainAnswersWithReadinessFailing: with Drain, the server goes on answering after
// Start's ctx ends while Ready fails, then shuts down; without it Ready never fails.
func TestServer_DrainAnswersWithReadinessFailing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain time.Duration
	}{{"no drain", 0}, {"drain", 3 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := NewServer(exampleStore(t, ""), ServerOptions{Addr: "127.0.0.1:0", Drain: tc.drain})
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Listen(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.Start(ctx) }()
			if err := srv.Ready(nil); err != nil {
				t.Fatalf("Ready before the ctx ended: %v", err)
			}
			cancel()
			if tc.drain == 0 {
				if err := <-done; err != nil || srv.Ready(nil) != nil {
					t.Fatalf("Start returned %v; Ready %v", err, srv.Ready(nil))
				}
				return
			}
			deadline := time.Now().Add(testrun.HangTimeout) // Ready fails as the drain begins
			for srv.Ready(nil) == nil && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if srv.Ready(nil) == nil {
				t.Fatal("Ready still passes after the ctx ended")
			}
			// Draining: it still answers (the drain has seconds left, the query takes ms).
			if resp := ask(t, srv.Addr(), "udp", "www.example.test", dns.TypeA); len(resp.Answer) != 1 {
				t.Fatalf("no answer while draining: %v", resp)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Start returned %v", err)
				}
			case <-time.After(tc.drain + testrun.HangTimeout):
				t.Fatal("Start did not return after the drain")
			}
		})
	}
}

func TestServer_UDPAndTCPShareThePort(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	_, port, err := net.SplitHostPort(srv.Addr())
	if err != nil || port == "0" {
		t.Fatalf("Addr() = %q", srv.Addr())
	}
	for _, proto := range []string{"udp", "tcp"} {
		if resp := ask(t, srv.Addr(), proto, "www.example.test", dns.TypeA); len(resp.Answer) != 1 {
			t.Errorf("%s: %v", proto, resp)
		}
	}
}

func TestServer_CountsQueriesInGivenRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, exampleStore(t, ""), ServerOptions{Metrics: m})
	ask(t, srv.Addr(), "udp", "www.example.test", dns.TypeA)
	ask(t, srv.Addr(), "udp", "www.other.test", dns.TypeA)
	ask(t, srv.Addr(), "tcp", "nope.example.test", dns.TypeA)
	for _, tc := range []struct {
		proto, rcode string
	}{{"udp", "NOERROR"}, {"udp", "REFUSED"}, {"tcp", "NXDOMAIN"}} {
		if got := testutil.ToFloat64(m.Queries.WithLabelValues(tc.proto, tc.rcode)); got != 1 {
			t.Errorf("queries{%s,%s} = %v, want 1", tc.proto, tc.rcode, got)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "dnsplane_dnsserver_queries_total"); err != nil || n != 3 {
		t.Errorf("registry has %d series (%v), want 3", n, err)
	}
	if _, err := NewMetrics(reg); !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Errorf("second NewMetrics on the same registry: %v, want an AlreadyRegisteredError", err)
	}
}

func TestServer_SeesWritesImmediately(t *testing.T) {
	store := exampleStore(t, "")
	srv := startServer(t, store, ServerOptions{})
	if resp := ask(t, srv.Addr(), "udp", "new.example.test", dns.TypeA); resp.Rcode != dns.RcodeNameError {
		t.Fatalf("before write: %s", dns.RcodeToString[resp.Rcode])
	}
	before, _ := store.Zone("example.test")
	if err := store.Update("example.test", func(tx *zonedb.Tx) error {
		put(t, tx, "", nil, "new.example.test. 60 IN A 192.0.2.99")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	resp := ask(t, srv.Addr(), "udp", "new.example.test", dns.TypeA)
	if len(resp.Answer) != 1 {
		t.Fatalf("after write: %v", resp)
	}
	soa := ask(t, srv.Addr(), "udp", "example.test", dns.TypeSOA)
	if got := soa.Answer[0].(*dns.SOA).Serial; got != before.Serial+1 {
		t.Errorf("served serial %d, want %d", got, before.Serial+1)
	}
}
