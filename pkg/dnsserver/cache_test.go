package dnsserver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// rawExchange sends the packed query pkt to addr over proto ("udp" or "tcp")
// and returns the response's bytes as they arrived (2 s deadline).
func rawExchange(t *testing.T, proto, addr string, pkt []byte) []byte {
	t.Helper()
	resp, err := exchangeRaw(addr, proto, pkt, 2*time.Second)
	switch {
	case err != nil:
		t.Fatalf("%s exchange: %v", proto, err)
	case resp == nil:
		t.Fatalf("%s exchange: no answer", proto)
	}
	return resp
}

// cacheQuery is one query of the differential test.
type cacheQuery struct {
	name    string
	qtype   uint16
	edns    uint16 // 0: no OPT
	do      bool
	rd, cd  bool
	comment string
}

// optLen is the length of the OPT pack adds (none, or one with a COOKIE
// option for the even payload sizes, EDNS version 1 for 600).
func (q cacheQuery) optLen() int {
	switch {
	case q.edns == 0:
		return 0
	case q.edns%2 == 0:
		return 11 + 12
	}
	return 11
}

func (q cacheQuery) pack(t *testing.T, id uint16) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(q.name, q.qtype)
	m.Id, m.RecursionDesired, m.CheckingDisabled = id, q.rd, q.cd
	if q.edns != 0 {
		m.SetEdns0(q.edns, q.do)
		opt := m.IsEdns0()
		if q.edns%2 == 0 {
			opt.Option = append(opt.Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0123456789abcdef"})
		}
		if q.edns == 601 {
			opt.SetVersion(1)
		}
	}
	p, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAnswerCache_AnswersByteForByteLikeTheUncachedServer asks a server with
// the answer cache and one without the same deterministic queries, each
// twice (the second from the cache), over UDP and TCP, in other cases of the
// name, with and without EDNS0 (several payload sizes, DO, a COOKIE option,
// version 1), RD and CD, escaped names and another class: every response must
// be byte-for-byte the uncached one.
func TestAnswerCache_AnswersByteForByteLikeTheUncachedServer(t *testing.T) {
	store := exampleStore(t, "")
	cached := startServer(t, store, ServerOptions{})
	plain := startServer(t, store, ServerOptions{AnswerCacheBytes: -1})
	names := []struct {
		name  string
		qtype uint16
	}{
		{"www.example.test.", dns.TypeA}, {"WwW.ExAmple.TEST.", dns.TypeA}, {"www.example.test.", dns.TypeAAAA},
		{"www.example.test.", dns.TypeANY}, {"www.example.test.", dns.TypeTXT}, {"ent.example.test.", dns.TypeA},
		{"nx.example.test.", dns.TypeA}, {"NX.example.test.", dns.TypeMX}, {"alias.example.test.", dns.TypeA},
		{"chain.example.test.", dns.TypeA}, {"ext.example.test.", dns.TypeA}, {"dangling.example.test.", dns.TypeA},
		{"a.B.wild.example.test.", dns.TypeA}, {"x.wild.example.test.", dns.TypeTXT}, {"big.example.test.", dns.TypeTXT},
		{"mx.example.test.", dns.TypeMX}, {"www.child.example.test.", dns.TypeA}, {"child.example.test.", dns.TypeSOA},
		{"example.test.", dns.TypeSOA}, {"other.test.", dns.TypeA}, {"www.example.test.", dns.TypeDS},
		{`w\.w.example.test.`, dns.TypeA}, {`\087ww.example.test.`, dns.TypeA}, {"*.wild.example.test.", dns.TypeA},
		{"www.example.test.", dns.TypeA}, // class CHAOS below
	}
	var queries []cacheQuery
	variants := []cacheQuery{{}, {edns: 512}, {edns: 1232, do: true}, {edns: 4096, rd: true}, {rd: true, cd: true}, {edns: 601, cd: true}, {edns: 1233}}
	for _, n := range names {
		for _, v := range variants {
			v.name, v.qtype = n.name, n.qtype
			queries = append(queries, v)
		}
	}
	for _, proto := range []string{"udp", "tcp"} {
		for i, q := range queries {
			for round := range 2 {
				id := uint16(i*2 + round + 1)
				pkt := q.pack(t, id)
				if i >= len(queries)-len(variants) {
					binary.BigEndian.PutUint16(pkt[len(pkt)-2-q.optLen():], dns.ClassCHAOS)
				}
				got := rawExchange(t, proto, cached.Addr(), pkt)
				want := rawExchange(t, proto, plain.Addr(), pkt)
				if !bytes.Equal(got, want) {
					t.Fatalf("%s %+v round %d: cached server answered\n%x\nthe uncached one\n%x", proto, q, round, got, want)
				}
			}
		}
	}
	if cached.cacheHits.Load() == 0 {
		t.Fatal("no answer came from the cache")
	}
	if plain.cacheHits.Load() != 0 {
		t.Fatal("AnswerCacheBytes -1 still cached")
	}
}

// TestAnswerCache_NeverServesAnAnswerFromBeforeAnUpdate caches answers, then
// changes, deletes and re-creates what they came from: each query after an
// Update returns sees the new data.
func TestAnswerCache_NeverServesAnAnswerFromBeforeAnUpdate(t *testing.T) {
	store := exampleStore(t, "")
	srv := startServer(t, store, ServerOptions{})
	for _, proto := range []string{"udp", "tcp"} {
		addr := func(name string) string {
			t.Helper()
			resp := ask(t, srv.Addr(), proto, name, dns.TypeA)
			if len(resp.Answer) == 0 {
				return dns.RcodeToString[resp.Rcode]
			}
			return resp.Answer[0].(*dns.A).A.String()
		}
		update := func(fn func(tx *zonedb.Tx)) {
			t.Helper()
			if err := store.Update("example.test", func(tx *zonedb.Tx) error { fn(tx); return nil }); err != nil {
				t.Fatal(err)
			}
		}
		update(func(tx *zonedb.Tx) { put(t, tx, "", nil, "c.example.test. 60 IN A 192.0.2.1") })
		for range 3 {
			if got := addr("c.example.test"); got != "192.0.2.1" {
				t.Fatalf("%s: got %s, want 192.0.2.1", proto, got)
			}
		}
		for i := 2; i < 6; i++ {
			ip := fmt.Sprintf("192.0.2.%d", i)
			update(func(tx *zonedb.Tx) { put(t, tx, "", nil, "c.example.test. 60 IN A "+ip) })
			if got := addr("c.example.test"); got != ip {
				t.Fatalf("%s: after the update to %s the server answered %s", proto, ip, got)
			}
		}
		update(func(tx *zonedb.Tx) { tx.Delete(zonedb.SetKey{Name: "c.example.test.", Type: dns.TypeA}) })
		if got := addr("c.example.test"); got != "NXDOMAIN" {
			t.Fatalf("%s: after the delete: %s", proto, got)
		}
		if got := addr("www.child.example.test"); got != "198.51.100.1" {
			t.Fatalf("%s: child zone: %s", proto, got)
		}
		if err := store.DeleteZone("child.example.test"); err != nil {
			t.Fatal(err)
		}
		// The parent's NS set for child.example.test now gives a referral.
		if resp := ask(t, srv.Addr(), proto, "www.child.example.test", dns.TypeA); resp.Authoritative || len(resp.Answer) != 0 {
			t.Fatalf("%s: deleted zone still answered: %v", proto, resp)
		}
		if _, err := store.CreateZone("child.example.test", zonedb.ZoneMeta{}); err != nil {
			t.Fatal(err)
		}
		if err := store.Update("child.example.test", func(tx *zonedb.Tx) error {
			put(t, tx, "", nil, "www.child.example.test. 300 IN A 198.51.100.1")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if srv.cacheHits.Load() == 0 {
		t.Fatal("no answer came from the cache")
	}
}

// TestAnswerCache_EchoesTheAskersIDAndNameCase checks the copy of a cached
// answer: the question name in the case it was asked (0x20), the ID, and the
// records as stored.
func TestAnswerCache_EchoesTheAskersIDAndNameCase(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	for _, proto := range []string{"udp", "tcp"} {
		for i, name := range []string{"www.example.test.", "WWW.EXAMPLE.TEST.", "wWw.eXaMpLe.TeSt.", "www.example.test."} {
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			m.Id = uint16(1000 + i)
			resp := exchange(t, srv.Addr(), proto, m)
			if resp.Id != m.Id || resp.Question[0].Name != name {
				t.Fatalf("%s: asked %q id %d, got %q id %d", proto, name, m.Id, resp.Question[0].Name, resp.Id)
			}
			if len(resp.Answer) != 1 || resp.Answer[0].Header().Name != "www.example.test." {
				t.Fatalf("%s: answer %v", proto, resp.Answer)
			}
		}
	}
	if srv.cacheHits.Load() == 0 {
		t.Fatal("no answer came from the cache")
	}
}

// TestAnswerCache_KeepsPayloadSizeTruncationAndDO caches the 1,100-byte
// answer through a large EDNS0 payload, then asks it with smaller ones and
// without EDNS0 (truncated, TC), over TCP (whole), and with and without DO
// (copied each time).
func TestAnswerCache_KeepsPayloadSizeTruncationAndDO(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	ask := func(proto string, payload uint16, do bool) *dns.Msg {
		t.Helper()
		m := new(dns.Msg)
		m.SetQuestion("big.example.test.", dns.TypeTXT)
		if payload != 0 {
			m.SetEdns0(payload, do)
		}
		return exchange(t, srv.Addr(), proto, m)
	}
	steps := []struct {
		proto     string
		payload   uint16
		do, trunc bool
	}{
		{"udp", 4096, true, false}, {"udp", 4096, true, false}, {"udp", 4096, false, false},
		{"udp", 0, false, true}, {"udp", 512, false, true}, {"udp", 1000, true, true},
		{"udp", 1232, true, false}, {"tcp", 0, false, false}, {"udp", 0, false, true}, {"udp", 4096, false, false},
	}
	for i, st := range steps {
		resp := ask(st.proto, st.payload, st.do)
		if resp.Truncated != st.trunc || (len(resp.Answer) == 1) == st.trunc {
			t.Fatalf("step %d %+v: TC %v, %d answers", i, st, resp.Truncated, len(resp.Answer))
		}
		opt := resp.IsEdns0()
		if (opt != nil) != (st.payload != 0) || (opt != nil && (opt.Do() != st.do || opt.UDPSize() != DefaultUDPSize)) {
			t.Fatalf("step %d %+v: OPT %v", i, st, opt)
		}
	}
	if srv.cacheHits.Load() == 0 {
		t.Fatal("no answer came from the cache")
	}
}

// TestAnswerCache_RotatedAndWeightedAnswersStillVary interleaves cached
// queries with a rotating 3-record set and a 70/30 weighted pair: the set's
// leader and the weighted choice still change.
func TestAnswerCache_RotatedAndWeightedAnswersStillVary(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{Rand: rand.New(rand.NewPCG(5, 6))})
	leaders, chosen := map[string]int{}, map[string]int{}
	for range 60 {
		ask(t, srv.Addr(), "udp", "www.example.test", dns.TypeA)
		leaders[ask(t, srv.Addr(), "udp", "multi.example.test", dns.TypeA).Answer[0].(*dns.A).A.String()]++
		chosen[ask(t, srv.Addr(), "udp", "w.example.test", dns.TypeA).Answer[0].(*dns.A).A.String()]++
	}
	if len(leaders) != 3 {
		t.Errorf("leaders of the rotating set: %v, want all three", leaders)
	}
	// 60 draws at 30%: P(no 192.0.2.30) = 0.7^60, about 5e-10.
	if len(chosen) != 2 {
		t.Errorf("weighted choices: %v, want both", chosen)
	}
	if srv.cacheHits.Load() == 0 {
		t.Fatal("no answer came from the cache")
	}
}

// ecsRaw packs a query for Www.Example.test. A whose OPT holds one ECS option with data,
// as sent, unchecked (miekg/dns masks what it packs).
func ecsRaw(t *testing.T, data []byte) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion("Www.Example.test.", dns.TypeA)
	m.SetEdns0(1232, true)
	m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_LOCAL{Code: dns.EDNS0SUBNET, Data: data}}
	p, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestParseQuery_OnlyPlainQueriesTakeTheFastPath is the table of what the UDP
// read loop answers itself from the cache; the rest goes through miekg/dns.
func TestParseQuery_OnlyPlainQueriesTakeTheFastPath(t *testing.T) {
	pack := func(edit func(m *dns.Msg)) []byte {
		m := new(dns.Msg)
		m.SetQuestion("Www.Example.test.", dns.TypeA)
		edit(m)
		p, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	edns := func(opts ...dns.EDNS0) func(m *dns.Msg) {
		return func(m *dns.Msg) { m.SetEdns0(1232, true); m.IsEdns0().Option = opts }
	}
	cookie := &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0123456789abcdef"}
	plain := pack(func(*dns.Msg) {})
	cases := []struct {
		name string
		pkt  []byte
		want bool
	}{
		{"plain", plain, true},
		{"EDNS0 with DO", pack(edns()), true},
		{"EDNS0 with a cookie and padding", pack(edns(cookie, &dns.EDNS0_PADDING{Padding: make([]byte, 8)})), true},
		{"EDNS0 with client subnet", pack(edns(&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.IPv4(192, 0, 2, 0)})), true},
		{"EDNS0 with an IPv6 client subnet and a cookie", pack(edns(cookie, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 2, SourceNetmask: 56, Address: net.ParseIP("2001:db8:0:ff00::")})), true},
		{"ECS with source prefix 0", pack(edns(&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 0, Address: net.IPv4(0, 0, 0, 0)})), true},
		{"ECS with address bits past its source prefix", ecsRaw(t, []byte{0, 1, 20, 0, 192, 0, 31}), false},
		{"ECS with an address octet too many", ecsRaw(t, []byte{0, 1, 24, 0, 192, 0, 2, 0}), false},
		{"ECS with an address octet too few", ecsRaw(t, []byte{0, 1, 24, 0, 192, 0}), false},
		{"ECS with a source prefix past its family", ecsRaw(t, []byte{0, 1, 33, 0, 192, 0, 2, 0, 0}), false},
		{"ECS with a scope in the query", ecsRaw(t, []byte{0, 1, 24, 8, 192, 0, 2}), false},
		{"ECS of family 0 (dig's +subnet=0)", ecsRaw(t, []byte{0, 0, 0, 0}), false},
		{"ECS of an unknown family", ecsRaw(t, []byte{0, 3, 0, 0}), false},
		{"two ECS options", pack(edns(&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.IPv4(192, 0, 2, 0)},
			&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.IPv4(192, 0, 2, 0)})), false},
		{"EDNS version 1", pack(func(m *dns.Msg) { m.SetEdns0(1232, false); m.IsEdns0().SetVersion(1) }), false},
		{"response", pack(func(m *dns.Msg) { m.Response = true }), false},
		{"NOTIFY", pack(func(m *dns.Msg) { m.Opcode = dns.OpcodeNotify }), false},
		{"two questions", pack(func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) }), false},
		{"an answer record", pack(func(m *dns.Msg) { m.Answer = rrs(t, "x.example.test. 60 IN A 192.0.2.1") }), false},
		{"escaped dot in a label", pack(func(m *dns.Msg) { m.Question[0].Name = `a\.b.example.test.` }), false},
		{"space in a label", pack(func(m *dns.Msg) { m.Question[0].Name = `a\032b.example.test.` }), false},
		{"trailing byte", append(bytes.Clone(plain), 0), false},
		{"cut short", plain[:len(plain)-1], false},
		{"compressed name", append(bytes.Clone(plain[:12]), 0xc0, 12, 0, 1, 0, 1), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, ok := parseQuery(c.pkt)
			if ok != c.want {
				t.Fatalf("parseQuery = %v, want %v", ok, c.want)
			}
			if ok && (string(c.pkt[12:q.nameEnd]) != "\x03Www\x07Example\x04test\x00" || q.qtype != dns.TypeA || q.qclass != dns.ClassINET) {
				t.Fatalf("parsed %+v", q)
			}
		})
	}
}

// TestServer_UDPSocketsShareOnePort binds four UDP sockets with SO_REUSEPORT
// and asks from many client ports, which the kernel spreads over them: every
// query is answered, from the cache after the first.
func TestServer_UDPSocketsShareOnePort(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{UDPSockets: 4})
	if n := 1 + len(srv.udpMore); n != 4 {
		t.Fatalf("%d UDP sockets, want 4", n)
	}
	for i := range 32 {
		resp := ask(t, srv.Addr(), "udp", "www.example.test", dns.TypeA)
		if len(resp.Answer) != 1 {
			t.Fatalf("query %d: %v", i, resp)
		}
	}
	if resp := ask(t, srv.Addr(), "tcp", "www.example.test", dns.TypeA); len(resp.Answer) != 1 {
		t.Fatalf("tcp: %v", resp)
	}
	if hits := srv.cacheHits.Load(); hits < 30 {
		t.Fatalf("%d cache hits of 33 queries", hits)
	}
}
