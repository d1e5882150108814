package dnsserver

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// dropWait is how long FuzzQuery listens for a reply to a packet the server must drop. A late
// reply to such a packet is missed, not misread: every packet is sent from a socket of its own.
const dropWait = 20 * time.Millisecond

// FuzzQuery pins the embedded server's whole UDP query path (the cached-answer fast path,
// screenRequest, miekg/dns's unpacking and acceptMsg, ServeDNS with TSIG and the transfer
// unit) against any bytes a client can send: a packet shorter than a header or with QR set is
// dropped (no answer to amplify), and every other packet gets exactly one reply, which
// miekg/dns unpacks, with the request's ID, QR set and the request's opcode (QUERY in the
// FORMERR to a packet miekg/dns cannot unpack, see below), no longer than
// 512 bytes unless it carries an OPT (RFC 1035 §4.2.1, RFC 6891 §6.2.5). The server must never
// panic (a panic in ServeDNS would be a missing reply here, and kills the test binary).
//
// The packets go over a real socket on 127.0.0.1, one server per fuzz worker, so that what is
// fuzzed is what a client reaches. The seeds are the protocol tests' queries: plain and EDNS
// queries of every answer kind, a signed query, NOTIFY, AXFR over UDP, UPDATE, and malformed
// headers, names and counts.
func FuzzQuery(f *testing.F) {
	for _, seed := range fuzzQuerySeeds(f) {
		f.Add(seed)
	}
	key, err := dnswire.NewTSIGKey("xfr", "hmac-sha256", testSecret)
	if err != nil {
		f.Fatal(err)
	}
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		f.Fatal(err)
	}
	srv := startServer(f, exampleStore(f, ""), ServerOptions{
		AllowTransfer: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, TSIG: &key, Metrics: m})
	addr := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(srv.Addr()))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		if len(pkt) > 4096 {
			return // far beyond any query; the socket's limit is not what is fuzzed
		}
		conn, err := net.DialUDP("udp", nil, addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write(pkt); err != nil {
			t.Fatal(err)
		}
		drop := len(pkt) < headerLen || pkt[2]&0x80 != 0
		wait := testrun.HangTimeout
		if drop {
			wait = dropWait
		}
		if err := conn.SetReadDeadline(time.Now().Add(wait)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, dns.MaxMsgSize)
		n, err := conn.Read(buf)
		switch {
		case drop && errors.Is(err, os.ErrDeadlineExceeded):
			return
		case drop && err == nil:
			t.Fatalf("the server answered a packet it must drop (%x): %x", pkt, buf[:n])
		case err != nil:
			t.Fatalf("no reply to %x: %v", pkt, err)
		}
		resp := new(dns.Msg)
		if err := resp.Unpack(buf[:n]); err != nil {
			t.Fatalf("the reply to %x does not unpack: %v (%x)", pkt, err, buf[:n])
		}
		if id := uint16(pkt[0])<<8 | uint16(pkt[1]); resp.Id != id || !resp.Response {
			t.Fatalf("the reply to %x has ID %d, QR %v; want ID %d, QR set", pkt, resp.Id, resp.Response, id)
		}
		// The opcode is echoed, except in the FORMERR miekg/dns's server writes itself to a
		// packet it cannot unpack: SetRcodeFormatError sets QUERY (NSD and Knot echo it; the
		// server never sees that packet to do so). testdata/fuzz/FuzzQuery/6fbe8ea6c914b070 is
		// such a NOTIFY.
		op := int(pkt[2]>>3) & 0xf
		unparsable := new(dns.Msg).Unpack(pkt) != nil
		if resp.Opcode != op && !(unparsable && resp.Rcode == dns.RcodeFormatError && resp.Opcode == dns.OpcodeQuery) {
			t.Fatalf("the reply to %x has opcode %d, want %d", pkt, resp.Opcode, op)
		}
		if resp.IsEdns0() == nil && n > dns.MinMsgSize {
			t.Fatalf("the reply to %x is %d bytes without OPT, over %d", pkt, n, dns.MinMsgSize)
		}
	})
}

// fuzzQuerySeeds are FuzzQuery's seeds (see there).
func fuzzQuerySeeds(f *testing.F) [][]byte {
	var out [][]byte
	pack := func(m *dns.Msg) {
		b, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	q := func(name string, qtype uint16) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		m.Id = 0x1234
		return m
	}
	for _, tc := range []struct {
		name  string
		qtype uint16
	}{
		{"www.example.test.", dns.TypeA}, {"multi.example.test.", dns.TypeA}, {"chain.example.test.", dns.TypeA},
		{"a.wild.example.test.", dns.TypeTXT}, {"x.sub.example.test.", dns.TypeA}, {"nothere.example.test.", dns.TypeA},
		{"big.example.test.", dns.TypeTXT}, {"w.example.test.", dns.TypeA}, {"example.test.", dns.TypeSOA},
		{"example.test.", dns.TypeANY}, {"other.test.", dns.TypeA}, {"example.test.", dns.TypeAXFR}, {"example.test.", dns.TypeIXFR},
	} {
		pack(q(tc.name, tc.qtype))
		e := q(tc.name, tc.qtype)
		e.SetEdns0(4096, true)
		pack(e)
	}
	notify := q("example.test.", dns.TypeSOA)
	notify.Opcode = dns.OpcodeNotify
	pack(notify)
	update := q("example.test.", dns.TypeSOA)
	update.Opcode = dns.OpcodeUpdate
	pack(update)
	signed := q("www.example.test.", dns.TypeA)
	signed.SetTsig("xfr.", dns.HmacSHA256, 300, time.Now().Unix())
	if b, _, err := dns.TsigGenerate(signed, testSecret, "", false); err == nil {
		out = append(out, b)
	}
	bad := q("www.example.test.", dns.TypeA)
	bad.SetEdns0(1232, false)
	bad.IsEdns0().SetVersion(1)
	pack(bad)
	chaos := q("www.example.test.", dns.TypeA)
	chaos.Question[0].Qclass = dns.ClassCHAOS
	pack(chaos)
	// EDNS Client Subnet options that screenECS rewrites (a 4-octet /24 address, family 3,
	// source 33) and a well-formed one, in a query and an UPDATE.
	for _, data := range [][]byte{{0, 1, 24, 0, 192, 0, 2, 0}, {0, 3, 24, 0, 192, 0, 2}, {0, 1, 33, 0, 192, 0, 2, 0, 0}, {0, 1, 24, 0, 192, 0, 2}} {
		for _, op := range []int{dns.OpcodeQuery, dns.OpcodeUpdate} {
			m := q("www.example.test.", dns.TypeA)
			m.Opcode = op
			m.SetEdns0(1232, false)
			b, err := m.Pack()
			if err != nil {
				f.Fatal(err)
			}
			b[len(b)-1] = byte(4 + len(data)) // the OPT's RDLENGTH: one option
			out = append(out, append(append(b, 0, dns.EDNS0SUBNET, 0, byte(len(data))), data...))
		}
	}
	header := out[0][:headerLen]
	out = append(out,
		header,
		out[0][:len(out[0])-2], // cut inside the question
		append(append([]byte{}, header...), 0xc0, 0x0c, 0, 1, 0, 1), // a pointer into itself
		append([]byte{0x12, 0x34, 0x81, 0x00}, out[0][4:]...),       // a response
		[]byte{0x12, 0x34, 0x00})
	return out
}
