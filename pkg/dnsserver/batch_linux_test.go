//go:build linux

package dnsserver

import (
	"net"
	"testing"

	"github.com/miekg/dns"
)

// TestBatchReader_OneReadAnswersAQueuedBurst queues 10 cached queries and a
// miss on a socket, then has the batchReader read once: one recvmmsg takes
// all 11, the 10 hits go out with one sendmmsg (every one answered, with its
// ID), and the miss is what ReadPacketConn hands to miekg/dns, as a udpPeer.
func TestBatchReader_OneReadAnswersAQueuedBurst(t *testing.T) {
	srv, err := NewServer(exampleStore(t, ""), ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	warm := new(dns.Msg)
	warm.SetQuestion("www.example.test.", dns.TypeA)
	srv.ServeDNS(&discardWriter{remote: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000}}, warm) // fills the cache
	sock, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sock.Close() }()
	client, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	var qs []burstQuery
	for i := range 10 {
		m := new(dns.Msg)
		m.SetQuestion("www.example.test.", dns.TypeA)
		m.Id = uint16(100 + i)
		qs = append(qs, burstQuery{msg: m, check: wantAnswers(dns.RcodeSuccess, 1, false)})
	}
	miss := new(dns.Msg)
	miss.SetQuestion("multi.example.test.", dns.TypeA)
	for _, m := range append(msgs(qs), miss) {
		wire, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.WriteToUDP(wire, sock.LocalAddr().(*net.UDPAddr)); err != nil {
			t.Fatal(err)
		}
	}
	r := srv.newBatchReader(nil, sock, false).(*batchReader)
	if err := r.readBatch(); err != nil {
		t.Fatal(err)
	}
	if len(r.out) != 10 || len(r.misses) != 1 || srv.cacheHits.Load() != 10 {
		t.Fatalf("one read: %d answered, %d misses, %d hits; want 10, 1, 10", len(r.out), len(r.misses), srv.cacheHits.Load())
	}
	pkt, addr, err := r.ReadPacketConn(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := new(dns.Msg)
	if err := got.Unpack(pkt); err != nil || got.Question[0].Name != "multi.example.test." {
		t.Fatalf("miss handed on: %v %v", got, err)
	}
	if peer, ok := addr.(*udpPeer); !ok || !isUDP(addr) || peer.Port != client.LocalAddr().(*net.UDPAddr).Port {
		t.Fatalf("miss's client %#v, want the udpPeer of %v", addr, client.LocalAddr())
	}
	if err := readAnswers(client, qs); err != nil {
		t.Fatal(err)
	}
}

func msgs(qs []burstQuery) []*dns.Msg {
	var out []*dns.Msg
	for _, q := range qs {
		out = append(out, q.msg)
	}
	return out
}
