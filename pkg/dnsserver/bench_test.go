package dnsserver

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
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
		m.Id = uint16(i)
		_ = co.SetDeadline(time.Now().Add(2 * time.Second))
		if err := co.WriteMsg(m); err != nil {
			b.Fatal(err)
		}
		resp, err := co.ReadMsg()
		if err != nil {
			b.Fatal(err)
		}
		if resp.Id != m.Id || len(resp.Answer) != 3 {
			b.Fatalf("bad response %v", resp)
		}
	}
}

// BenchmarkServer_UDPQueryBigZone is BenchmarkServer_UDPQuery against a zone of 10,000 A sets
// with a TXT beside each, as registry records are (the size of zone a 10k-endpoint bench writes), asking names spread
// over the zone.
func BenchmarkServer_UDPQueryBigZone(b *testing.B) {
	const n = 10_000
	store := exampleStore(b, "")
	err := store.Update("example.test.", func(tx *Tx) error {
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
		m.Id = uint16(i)
		_ = co.SetDeadline(time.Now().Add(2 * time.Second))
		if err := co.WriteMsg(m); err != nil {
			b.Fatal(err)
		}
		resp, err := co.ReadMsg()
		if err != nil {
			b.Fatal(err)
		}
		if resp.Id != m.Id || len(resp.Answer) != 1 {
			b.Fatalf("bad response %v", resp)
		}
	}
}
