package dnsserver

import (
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
