package dnsserver

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// discardWriter is a dns.ResponseWriter that packs the response, as miekg/dns's
// own writer does, and drops the bytes: with it a benchmark counts the server's
// cost per query (unpack, answer, pack) without a socket or a client.
type discardWriter struct {
	remote net.Addr
	n      int // bytes of the last response
}

func (w *discardWriter) LocalAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}
}
func (w *discardWriter) RemoteAddr() net.Addr { return w.remote }
func (w *discardWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	if err != nil {
		return err
	}
	w.n = len(b)
	return nil
}
func (w *discardWriter) Write(b []byte) (int, error) { w.n = len(b); return len(b), nil }
func (w *discardWriter) Close() error                { return nil }
func (w *discardWriter) TsigStatus() error           { return nil }
func (w *discardWriter) TsigTimersOnly(bool)         {}
func (w *discardWriter) Hijack()                     {}

// benchZoneStore returns a store serving bench.test as hack/bench-dns.sh builds
// it: 1,000 A names h1..h1000, a 3-record A set, 10 AAAA, 10 TXT and 10 CNAME
// names.
func benchZoneStore(b *testing.B) *zonedb.Store {
	b.Helper()
	store := zonedb.NewStore(zonedb.StoreOptions{})
	if _, err := store.CreateZone("bench.test", zonedb.ZoneMeta{}); err != nil {
		b.Fatal(err)
	}
	err := store.Update("bench.test.", func(tx *zonedb.Tx) error {
		for i := 1; i <= 1000; i++ {
			put(b, tx, "", nil, fmt.Sprintf("h%d.bench.test. 300 IN A 10.0.%d.%d", i, i/256, i%256))
		}
		put(b, tx, "", nil, "multi.bench.test. 300 IN A 192.0.2.1", "multi.bench.test. 300 IN A 192.0.2.2", "multi.bench.test. 300 IN A 192.0.2.3")
		for i := 1; i <= 10; i++ {
			put(b, tx, "", nil, fmt.Sprintf("v%d.bench.test. 300 IN AAAA 2001:db8::%x", i, i))
			put(b, tx, "", nil, fmt.Sprintf("t%d.bench.test. 300 IN TXT \"bench text record %d\"", i, i))
			put(b, tx, "", nil, fmt.Sprintf("c%d.bench.test. 300 IN CNAME h%d.bench.test.", i, i*97))
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return store
}

// benchQueries returns n packed queries in hack/bench-dns.sh's mix: 80% A for
// existing names (some through a CNAME, some the 3-record set), 10% NODATA,
// 10% NXDOMAIN; no EDNS0, as dnsperf sends by default.
func benchQueries(b *testing.B, n int) [][]byte {
	b.Helper()
	out := make([][]byte, n)
	for i := range out {
		name, qtype := "", dns.TypeA
		switch r := (i * 7919) % 1020; {
		case i%10 == 8:
			name, qtype = fmt.Sprintf("h%d", r%1000+1), dns.TypeAAAA
		case i%10 == 9:
			name = fmt.Sprintf("nx%d", i*31)
		case r < 1000:
			name = fmt.Sprintf("h%d", r+1)
		case r < 1010:
			name = fmt.Sprintf("c%d", r-999)
		default:
			name = "multi"
		}
		m := new(dns.Msg)
		m.SetQuestion(name+".bench.test.", qtype)
		m.Id = uint16(i)
		out[i] = packed(b, m)
	}
	return out
}

// BenchmarkServer_Answer measures the server's own cost per UDP query, in
// process: unpack the request (as miekg/dns's server loop does), answer it and
// pack the response, over hack/bench-dns.sh's zone and query mix. allocs/op
// and B/op are the server's alone; no socket, no client. "nocache" turns the
// packed-answer cache off (AnswerCacheBytes -1), for a same-run comparison.
func BenchmarkServer_Answer(b *testing.B) {
	for _, c := range []struct {
		name  string
		bytes int
	}{{"cache", 0}, {"nocache", -1}} {
		b.Run(c.name, func(b *testing.B) {
			srv, err := NewServer(benchZoneStore(b), ServerOptions{Addr: "127.0.0.1:0", AnswerCacheBytes: c.bytes})
			if err != nil {
				b.Fatal(err)
			}
			benchServeDNS(b, srv, benchQueries(b, 1009))
		})
	}
}

// benchServeDNS unpacks and answers qs in turn, b.N in all.
func benchServeDNS(b *testing.B, srv *Server, qs [][]byte) {
	benchServe(b, srv, func(i int) *dns.Msg {
		req := new(dns.Msg)
		if err := req.Unpack(qs[i%len(qs)]); err != nil {
			b.Fatal(err)
		}
		return req
	})
}

// benchServe answers through ServeDNS, b.N times, the request next returns for the i-th time
// (next's own work is measured with it), and fails when one gets no response.
func benchServe(b *testing.B, srv *Server, next func(i int) *dns.Msg) {
	w := &discardWriter{remote: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		srv.ServeDNS(w, next(i))
		if w.n == 0 {
			b.Fatal("no response")
		}
		w.n = 0
	}
}

// BenchmarkServer_AnswerReadLoop measures the UDP read loop's own cost for a
// cached answer (parse, look up, copy with the asker's ID and name), in
// process, over the same queries as BenchmarkServer_Answer (less the rotating
// set, never cached) once each has been answered the long way; the socket
// write is left out.
func BenchmarkServer_AnswerReadLoop(b *testing.B) {
	srv, err := NewServer(benchZoneStore(b), ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	benchReadLoop(b, srv, benchQueries(b, 1009), netip.Addr{})
}

// benchReadLoop answers qs the long way through ServeDNS (from 127.0.0.2), filling the answer
// cache, and then measures the UDP read loop's reply to the cached ones, asked from from, b.N
// in all; it fails when fewer than 90% of qs are cached or a cached one is not answered.
func benchReadLoop(b *testing.B, srv *Server, qs [][]byte, from netip.Addr) {
	w := &discardWriter{remote: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000}}
	for _, q := range qs { // fill the cache
		req := new(dns.Msg)
		if err := req.Unpack(q); err != nil {
			b.Fatal(err)
		}
		srv.ServeDNS(w, req)
	}
	r := srv.newFastReader(nil).(*fastReader)
	var cached [][]byte // all but the rotating 3-record set
	for _, q := range qs {
		if _, ok := r.reply(q, from); ok {
			cached = append(cached, q)
		}
	}
	if len(cached) < len(qs)*9/10 {
		b.Fatalf("%d of %d queries cached", len(cached), len(qs))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, ok := r.reply(cached[i%len(cached)], from); !ok {
			b.Fatal("not answered from the cache")
		}
	}
}

// repacked returns qs, each unpacked, changed by edit (i is its index) and packed again.
func repacked(b *testing.B, qs [][]byte, edit func(i int, m *dns.Msg)) [][]byte {
	b.Helper()
	out := make([][]byte, len(qs))
	for i, q := range qs {
		m := new(dns.Msg)
		if err := m.Unpack(q); err != nil {
			b.Fatal(err)
		}
		edit(i, m)
		out[i] = packed(b, m)
	}
	return out
}

// packed is m packed.
func packed(b *testing.B, m *dns.Msg) []byte {
	b.Helper()
	p, err := m.Pack()
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkServer_AnswerReferral measures the long way (no answer cache) for the answers whose
// additional section is built per query: referrals (in-domain glue only; with sibling glue and
// name servers elsewhere in the zone; 20 in-domain name servers) and an MX and an apex NS answer,
// over the zone of TestNSD_AnswersLikeARealNSD.
func BenchmarkServer_AnswerReferral(b *testing.B) {
	srv, err := NewServer(diffStore(b), ServerOptions{Addr: "127.0.0.1:0", AnswerCacheBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	var qs [][]byte
	for _, q := range []struct {
		name  string
		qtype uint16
	}{{"x.sub.z.test.", dns.TypeA}, {"x.mixed.z.test.", dns.TypeA}, {"x.sib1.z.test.", dns.TypeA},
		{"x.bigdeleg.z.test.", dns.TypeA}, {"mx.z.test.", dns.TypeMX}, {"z.test.", dns.TypeNS}} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		m.SetEdns0(1232, false)
		qs = append(qs, packed(b, m))
	}
	benchServeDNS(b, srv, qs)
}
