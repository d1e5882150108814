//go:build linux

package dnsserver

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"testing"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
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
	r := srv.newBatchReader(nil, rawConn(t, sock), false)
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

// rawConn returns the syscall.RawConn of uc.
func rawConn(t testing.TB, uc *net.UDPConn) syscall.RawConn {
	t.Helper()
	rc, err := uc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func msgs(qs []burstQuery) []*dns.Msg {
	var out []*dns.Msg
	for _, q := range qs {
		out = append(out, q.msg)
	}
	return out
}

// hitRig is a batchReader on a socket of its own with a warm cache for
// www.example.test. A, and a client socket that sends it queries and reads the
// answers without allocating (the netip forms of the UDP calls).
type hitRig struct {
	r       *batchReader
	srv     *Server
	client  *net.UDPConn
	dst     netip.AddrPort
	queries [][]byte
	buf     []byte
}

func newHitRig(t testing.TB, n int) *hitRig {
	t.Helper()
	srv, err := NewServer(exampleStore(t, ""), ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	warm := new(dns.Msg)
	warm.SetQuestion("www.example.test.", dns.TypeA)
	srv.ServeDNS(&discardWriter{remote: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000}}, warm)
	sock, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sock.Close() })
	client, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	rig := &hitRig{r: srv.newBatchReader(nil, rawConn(t, sock), false), srv: srv, client: client,
		dst: sock.LocalAddr().(*net.UDPAddr).AddrPort(), buf: make([]byte, dns.MaxMsgSize)}
	for i := range n {
		m := new(dns.Msg)
		m.SetQuestion("www.example.test.", dns.TypeA)
		m.Id = uint16(1000 + i)
		wire, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		rig.queries = append(rig.queries, wire)
	}
	return rig
}

// round sends the rig's queries, has the reader read one batch and reads the
// answers back, checking each answer's ID.
func (g *hitRig) round(t testing.TB) {
	for _, q := range g.queries {
		if _, err := g.client.WriteToUDPAddrPort(q, g.dst); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.r.readBatch(); err != nil {
		t.Fatal(err)
	}
	if len(g.r.out) != len(g.queries) {
		t.Fatalf("%d of %d answered from the cache in one batch", len(g.r.out), len(g.queries))
	}
	for i := range g.queries {
		n, _, err := g.client.ReadFromUDPAddrPort(g.buf)
		if err != nil {
			t.Fatal(err)
		}
		if n < 12 || binary.BigEndian.Uint16(g.buf) != uint16(1000+i) {
			t.Fatalf("answer %d: % x", i, g.buf[:n])
		}
	}
}

// TestBatchReader_HitsAllocateNothing pins what removing the per-datagram
// source address (and the slices of x/net's ipv4.Message) bought: a batch of
// cached answers, read with one recvmmsg and sent with one sendmmsg, makes no
// allocation in the reader (the client's calls make none either).
func TestBatchReader_HitsAllocateNothing(t *testing.T) {
	rig := newHitRig(t, 16)
	rig.round(t) // the first batch resolves the metrics' counters, if any
	if a := testing.AllocsPerRun(20, func() { rig.round(t) }); a != 0 {
		t.Fatalf("%v allocations per batch of %d hits, want 0", a, len(rig.queries))
	}
}

// BenchmarkBatchReader_Hits measures one batch of 16 cached answers through
// the batched read loop and a client socket on loopback: the client's sends,
// the reader's recvmmsg, lookups and sendmmsg, and the client's reads, in one
// goroutine (no poller wait). ns/op is per batch; allocs/op are the reader's
// and the client's (none).
func BenchmarkBatchReader_Hits(b *testing.B) {
	rig := newHitRig(b, 16)
	b.ReportAllocs()
	for b.Loop() {
		rig.round(b)
	}
	b.ReportMetric(16, "queries/op")
}

// TestUDPAddrOf_ReadsTheKernelsSockaddr pins the decoding of the source
// address recvmmsg writes: family in host order, port in network order.
func TestUDPAddrOf_ReadsTheKernelsSockaddr(t *testing.T) {
	v4 := func(ip [4]byte, port uint16) []byte {
		sa := make([]byte, unix.SizeofSockaddrInet4)
		binary.NativeEndian.PutUint16(sa, unix.AF_INET)
		binary.BigEndian.PutUint16(sa[2:], port)
		copy(sa[4:], ip[:])
		return sa
	}
	v6 := func(ip netip.Addr, port uint16, scope uint32) []byte {
		sa := make([]byte, unix.SizeofSockaddrInet6)
		binary.NativeEndian.PutUint16(sa, unix.AF_INET6)
		binary.BigEndian.PutUint16(sa[2:], port)
		a := ip.As16()
		copy(sa[8:], a[:])
		binary.NativeEndian.PutUint32(sa[24:], scope)
		return sa
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skipf("no loopback interface: %v", err)
	}
	for _, c := range []struct {
		name string
		sa   []byte
		want string // "" = nil
	}{
		{"IPv4", v4([4]byte{192, 0, 2, 7}, 53000), "192.0.2.7:53000"},
		{"IPv4 high port", v4([4]byte{127, 0, 0, 1}, 65535), "127.0.0.1:65535"},
		{"IPv6", v6(netip.MustParseAddr("2001:db8::1"), 5353, 0), "[2001:db8::1]:5353"},
		{"IPv4-mapped IPv6", v6(netip.MustParseAddr("::ffff:192.0.2.1"), 1, 0), "192.0.2.1:1"},
		{"link-local with a scope", v6(netip.MustParseAddr("fe80::1"), 53, uint32(lo.Index)), "[fe80::1%lo]:53"},
		{"IPv4 cut short", v4([4]byte{192, 0, 2, 7}, 53)[:8], ""},
		{"IPv6 cut short", v6(netip.MustParseAddr("2001:db8::1"), 53, 0)[:20], ""},
		{"another family", []byte{byte(unix.AF_UNIX), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ""},
		{"empty", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := udpAddrOf(c.sa)
			switch {
			case c.want == "" && got != nil:
				t.Fatalf("got %v, want nil", got)
			case c.want != "" && (got == nil || got.String() != c.want):
				t.Fatalf("got %v, want %s", got, c.want)
			}
		})
	}
}

// TestBatchReader_ReadsADatagramOfAnySize sends queries of a few bytes and of nearly 64 KiB
// (an EDNS padding option) in one batch: each slot's buffer (slotBuffers, an anonymous
// mapping whose pages are backed as they are written) takes the largest datagram UDP carries,
// byte for byte.
func TestBatchReader_ReadsADatagramOfAnySize(t *testing.T) {
	rig := newHitRig(t, 0)
	var sent [][]byte
	for i, pad := range []int{0, 60_000, 5_000, 65_000} {
		m := new(dns.Msg)
		m.SetQuestion("missing.example.test.", dns.TypeA)
		m.Id = uint16(2000 + i)
		if pad > 0 {
			opt := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
			opt.SetUDPSize(1232)
			opt.Option = append(opt.Option, &dns.EDNS0_PADDING{Padding: make([]byte, pad)})
			m.Extra = append(m.Extra, opt)
		}
		wire, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rig.client.WriteToUDPAddrPort(wire, rig.dst); err != nil {
			t.Fatalf("send %d bytes: %v", len(wire), err)
		}
		sent = append(sent, wire)
	}
	for i, want := range sent {
		got, from, err := rig.r.ReadPacketConn(nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if from == nil || !bytes.Equal(got, want) {
			t.Fatalf("datagram %d: read %d bytes from %v, sent %d", i, len(got), from, len(want))
		}
	}
}
