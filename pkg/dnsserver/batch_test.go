package dnsserver

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// burstQuery is one query of a burst and a check of its answer.
type burstQuery struct {
	msg   *dns.Msg
	check func(*dns.Msg) error
}

// sendBurst sends every query of qs from c to dst before reading any answer
// (so that the server's read loop gets them in batches), then reads one
// answer per query, each within 5 s. It returns an error unless every answer
// comes from dst, carries the ID and question (name case included) of a query
// of the burst, once, and passes that query's check.
func sendBurst(c *net.UDPConn, dst *net.UDPAddr, qs []burstQuery) error {
	byID := map[uint16]burstQuery{}
	for _, q := range qs {
		wire, err := q.msg.Pack()
		if err != nil {
			return fmt.Errorf("pack: %w", err)
		}
		if _, err := c.WriteToUDP(wire, dst); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		byID[q.msg.Id] = q
	}
	return readAnswersFrom(c, dst, byID)
}

// readAnswers reads one answer per query of qs on c (see sendBurst), from
// any address.
func readAnswers(c *net.UDPConn, qs []burstQuery) error {
	byID := map[uint16]burstQuery{}
	for _, q := range qs {
		byID[q.msg.Id] = q
	}
	return readAnswersFrom(c, nil, byID)
}

// readAnswersFrom reads len(byID) answers on c, from dst unless it is nil,
// and checks each against the query of its ID (sendBurst).
func readAnswersFrom(c *net.UDPConn, dst *net.UDPAddr, byID map[uint16]burstQuery) error {
	buf := make([]byte, dns.MaxMsgSize)
	for range len(byID) {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := c.ReadFromUDP(buf)
		if err != nil {
			return fmt.Errorf("read (%d answers missing): %w", len(byID), err)
		}
		if dst != nil && (!from.IP.Equal(dst.IP) || from.Port != dst.Port) {
			return fmt.Errorf("answer from %v, want %v", from, dst)
		}
		resp := new(dns.Msg)
		if err := resp.Unpack(buf[:n]); err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
		q, ok := byID[resp.Id]
		if !ok {
			return fmt.Errorf("answer with unknown or repeated ID %d", resp.Id)
		}
		delete(byID, resp.Id)
		if len(resp.Question) != 1 || resp.Question[0] != q.msg.Question[0] {
			return fmt.Errorf("ID %d: question %v, want %v", resp.Id, resp.Question, q.msg.Question)
		}
		if err := q.check(resp); err != nil {
			return fmt.Errorf("ID %d %v: %w", resp.Id, q.msg.Question[0], err)
		}
	}
	return nil
}

// mixedBurst returns n queries with IDs from id: cached A answers (in the
// client's name case), the rotating 3-record set (never cached), NXDOMAIN
// names, the 1,100-byte TXT without EDNS0 (TC: the long way) and with a
// 4096-byte payload (whole, cached).
func mixedBurst(client, n int, id uint16) []burstQuery {
	var qs []burstQuery
	for i := range n {
		m := new(dns.Msg)
		var check func(*dns.Msg) error
		switch i % 5 {
		case 0:
			m.SetQuestion([]string{"www.eXample.test.", "WWW.example.TEST.", "wWw.example.test."}[client%3], dns.TypeA)
			check = wantAnswers(dns.RcodeSuccess, 1, false)
		case 1:
			m.SetQuestion("multi.example.test.", dns.TypeA)
			check = wantAnswers(dns.RcodeSuccess, 3, false)
		case 2:
			m.SetQuestion(fmt.Sprintf("nx%d-%d.example.test.", client, i), dns.TypeA)
			check = wantAnswers(dns.RcodeNameError, 0, false)
		case 3:
			m.SetQuestion("big.example.test.", dns.TypeTXT)
			check = wantAnswers(dns.RcodeSuccess, 0, true)
		default:
			m.SetQuestion("big.example.test.", dns.TypeTXT)
			m.SetEdns0(4096, false)
			check = wantAnswers(dns.RcodeSuccess, 1, false)
		}
		m.Id = id + uint16(i)
		qs = append(qs, burstQuery{msg: m, check: check})
	}
	return qs
}

// wantAnswers checks an answer's rcode, answer count and TC bit.
func wantAnswers(rcode, answers int, truncated bool) func(*dns.Msg) error {
	return func(resp *dns.Msg) error {
		if resp.Rcode != rcode || len(resp.Answer) != answers || resp.Truncated != truncated {
			return fmt.Errorf("rcode %s, %d answers, TC %v; want %s, %d, %v", dns.RcodeToString[resp.Rcode],
				len(resp.Answer), resp.Truncated, dns.RcodeToString[rcode], answers, truncated)
		}
		return nil
	}
}

// TestServer_BatchedBurstsFromManyClientsAnswerEachRight has 8 clients,
// each on its own socket, send bursts of 20 queries at once (160 in flight:
// more overflow the server sockets' default 208 KiB receive buffers, on any
// read loop, and the kernel drops them), mixing cache
// hits with misses (a rotating set, NXDOMAIN names) and a truncated answer
// in every batch: every client gets one right answer per query, with its ID
// and its name's case, and the hits were answered from the cache.
func TestServer_BatchedBurstsFromManyClientsAnswerEachRight(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{UDPSockets: 2})
	dst := udpAddr(t, srv.Addr())
	var wg sync.WaitGroup
	const clients, burst, rounds = 8, 20, 6
	for client := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Error(err)
				return
			}
			defer func() { _ = c.Close() }()
			for round := range rounds {
				if err := sendBurst(c, dst, mixedBurst(client, burst, uint16(round*1000+client*burst))); err != nil {
					t.Errorf("client %d round %d: %v", client, round, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if hits, all := srv.cacheHits.Load(), clients*burst*rounds; hits < uint64(all/5) {
		t.Fatalf("%d cache hits of %d queries, want at least %d", hits, all, all/5)
	}
}

// TestServer_WildcardBindAnswersFromTheQueriedAddress binds 0.0.0.0 and
// asks at 127.0.0.1, .2 and .3: hits and misses (the rotating set) alike
// leave from the address the query came to (the destination control
// message; a client would drop an answer from another address).
func TestServer_WildcardBindAnswersFromTheQueriedAddress(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{Addr: "0.0.0.0:0", UDPSockets: 1})
	port := srv.udp.LocalAddr().(*net.UDPAddr).Port
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	for i, ip := range []net.IP{net.IPv4(127, 0, 0, 2), net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 3)} {
		dst := &net.UDPAddr{IP: ip, Port: port}
		for round := range 2 { // the second round's hits are cached
			if err := sendBurst(c, dst, mixedBurst(i, 20, uint16(i*100+round*20))); err != nil {
				t.Fatalf("%v round %d: %v", ip, round, err)
			}
		}
	}
	if srv.cacheHits.Load() == 0 {
		t.Fatal("no answer came from the cache")
	}
}

// TestServer_IPv6WildcardBindAnswersFromTheQueriedAddress binds [::] and
// asks at ::1 and, through the dual-stack socket, at 127.0.0.2: each answer
// leaves from the address asked.
func TestServer_IPv6WildcardBindAnswersFromTheQueriedAddress(t *testing.T) {
	probe, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	_ = probe.Close()
	srv := startServer(t, exampleStore(t, ""), ServerOptions{Addr: "[::]:0", UDPSockets: 1})
	port := srv.udp.LocalAddr().(*net.UDPAddr).Port
	for i, dst := range []*net.UDPAddr{{IP: net.IPv6loopback, Port: port}, {IP: net.IPv4(127, 0, 0, 2), Port: port}} {
		network, local := "udp6", net.IPv6loopback
		if dst.IP.To4() != nil {
			network, local = "udp4", net.IPv4(127, 0, 0, 1)
		}
		c, err := net.ListenUDP(network, &net.UDPAddr{IP: local})
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 {
			if err := sendBurst(c, dst, mixedBurst(i, 20, uint16(i*100+round*20))); err != nil {
				t.Fatalf("%v round %d: %v", dst, round, err)
			}
		}
		_ = c.Close()
	}
}

// TestServer_OneDatagramPerReadStillAnswers is the batched bursts with
// UDPBatch 1: the read loop of other platforms (fastReader) serves alike.
func TestServer_OneDatagramPerReadStillAnswers(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{UDPSockets: 1, UDPBatch: 1})
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	for round := range 2 {
		if err := sendBurst(c, udpAddr(t, srv.Addr()), mixedBurst(round, 40, uint16(round*40))); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if srv.cacheHits.Load() == 0 {
		t.Fatal("no answer came from the cache")
	}
}

func udpAddr(t testing.TB, addr string) *net.UDPAddr {
	t.Helper()
	a, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// BenchmarkServer_UDPBurst measures bursts of 32 cached A queries over
// loopback (sent at once, then the 32 answers read) against the batched read
// loop and, for comparison, one datagram per read. Client and server share the
// machine, so the figure is of the pair; ns/op is per burst.
func BenchmarkServer_UDPBurst(b *testing.B) {
	for _, batch := range []int{DefaultUDPBatch, 1} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			srv := startServer(b, exampleStore(b, ""), ServerOptions{UDPSockets: 1, UDPBatch: batch})
			dst := udpAddr(b, srv.Addr())
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close() })
			qs := make([]burstQuery, 32)
			for i := range qs {
				m := new(dns.Msg)
				m.SetQuestion("www.example.test.", dns.TypeA)
				m.Id = uint16(i)
				qs[i] = burstQuery{msg: m, check: wantAnswers(dns.RcodeSuccess, 1, false)}
			}
			if err := sendBurst(c, dst, qs); err != nil { // fills the cache
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := sendBurst(c, dst, qs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(32, "queries/op")
		})
	}
}
