package dnsserver

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// BenchmarkServer_UDPQuery measures one A query over loopback UDP, round
// trip included, on one reused client socket.
func BenchmarkServer_UDPQuery(b *testing.B) {
	srv := startServer(b, exampleStore(b, ""), ServerOptions{})
	co, err := dns.Dial("udp", srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = co.Close() })
	m := new(dns.Msg)
	m.SetQuestion("multi.example.test.", dns.TypeA)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		benchExchange(b, co, m, uint16(i), 3)
	}
}

// BenchmarkServer_UDPQueryBigZone is BenchmarkServer_UDPQuery against a zone of 10,000 A sets
// with a TXT beside each, as registry records are (the size of zone a 10k-endpoint bench writes), asking names spread
// over the zone.
func BenchmarkServer_UDPQueryBigZone(b *testing.B) {
	const n = 10_000
	store := exampleStore(b, "")
	err := store.Update("example.test.", func(tx *zonedb.Tx) error {
		for i := range n {
			put(b, tx, "", nil, fmt.Sprintf("h%d.example.test. 300 IN A 10.%d.%d.1", i, i/256, i%256))
			put(b, tx, "", nil, fmt.Sprintf("dp-a.h%d.example.test. 300 IN TXT \"heritage=dnsplane,owner=c1\"", i))
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	srv := startServer(b, store, ServerOptions{})
	co, err := dns.Dial("udp", srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = co.Close() })
	qs := make([]*dns.Msg, 97) // a prime, so that ids and names do not align
	for i := range qs {
		qs[i] = new(dns.Msg)
		qs[i].SetQuestion(fmt.Sprintf("h%d.example.test.", i*n/len(qs)), dns.TypeA)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		m := qs[i%len(qs)]
		benchExchange(b, co, m, uint16(i), 1)
	}
}

// benchExchange sends m with ID id over co and fails b unless the answer carries that ID and
// wantAnswers records (2 s deadline per exchange).
func benchExchange(b *testing.B, co *dns.Conn, m *dns.Msg, id uint16, wantAnswers int) {
	m.Id = id
	_ = co.SetDeadline(time.Now().Add(2 * time.Second))
	if err := co.WriteMsg(m); err != nil {
		b.Fatal(err)
	}
	resp, err := co.ReadMsg()
	if err != nil {
		b.Fatal(err)
	}
	if resp.Id != m.Id || len(resp.Answer) != wantAnswers {
		b.Fatalf("bad response %v", resp)
	}
}
