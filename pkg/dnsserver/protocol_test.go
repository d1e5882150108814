package dnsserver

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// Protocol details of the embedded server, checked over the wire with the
// miekg/dns client against the RFC text.

// ednsQuery is a query for name/qtype with an OPT record of the given size and DO bit.
func ednsQuery(name string, qtype, size uint16, do bool) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(size, do)
	return m
}

// udpWire sends m over UDP and returns the response with its size on the wire, in bytes.
func udpWire(t *testing.T, addr string, m *dns.Msg) (*dns.Msg, int) {
	t.Helper()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	out, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(out); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, dns.MaxMsgSize)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("UDP query %v: %v", m.Question, err)
	}
	resp := new(dns.Msg)
	if err := resp.Unpack(buf[:n]); err != nil {
		t.Fatal(err)
	}
	return resp, n
}

// TestServer_CopiesTheDOBit: RFC 3225 §3, "The DO bit of the query MUST be copied in the
// response", also on negative answers.
func TestServer_CopiesTheDOBit(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	for _, proto := range []string{"udp", "tcp"} {
		for _, name := range []string{"www.example.test", "nope.example.test"} {
			for _, do := range []bool{true, false} {
				resp := exchange(t, srv.Addr(), proto, ednsQuery(name, dns.TypeA, 1232, do))
				opt := resp.IsEdns0()
				if opt == nil {
					t.Fatalf("%s %s: no OPT in the response", proto, name)
				}
				if opt.Do() != do {
					t.Errorf("%s %s: DO = %v in the response, %v in the query (RFC 3225 §3)", proto, name, opt.Do(), do)
				}
			}
		}
	}
}

// TestServer_ErrorsToEDNSQueriesCarryOPT: RFC 6891 §6.1.1, "If an OPT record is present in a
// received request, compliant responders MUST include an OPT record in their respective
// responses", and §7: a FORMERR about the request still carries an OPT. UPDATE gets NOTIMP, a
// query without exactly one question or with two OPT records FORMERR; a NOTIFY's acknowledgement
// carries one too.
func TestServer_ErrorsToEDNSQueriesCarryOPT(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	notify := ednsQuery("example.test", dns.TypeSOA, 1232, true)
	notify.Opcode = dns.OpcodeNotify
	update := new(dns.Msg)
	update.SetUpdate("example.test.")
	update.Insert(rrs(t, "new.example.test. 60 IN A 192.0.2.9"))
	update.SetEdns0(1232, true)
	twoQuestions := ednsQuery("www.example.test", dns.TypeA, 1232, true)
	twoQuestions.Question = append(twoQuestions.Question, dns.Question{Name: "mx.example.test.", Qtype: dns.TypeMX, Qclass: dns.ClassINET})
	noQuestion := ednsQuery("www.example.test", dns.TypeA, 1232, true)
	noQuestion.Question = nil
	twoOPTs := ednsQuery("www.example.test", dns.TypeA, 1232, true)
	twoOPTs.Extra = append(twoOPTs.Extra, dns.Copy(twoOPTs.Extra[0]))
	for _, tc := range []struct {
		name  string
		req   *dns.Msg
		rcode int
	}{
		{"NOTIFY", notify, dns.RcodeSuccess}, // acknowledged as a primary does (RFC 1996 §4.7)
		{"UPDATE", update, dns.RcodeNotImplemented},
		{"two questions", twoQuestions, dns.RcodeFormatError},
		{"no question", noQuestion, dns.RcodeFormatError},
		{"two OPT records", twoOPTs, dns.RcodeFormatError},
	} {
		for _, proto := range []string{"udp", "tcp"} {
			t.Run(tc.name+" "+proto, func(t *testing.T) {
				resp := exchange(t, srv.Addr(), proto, tc.req)
				if resp.Rcode != tc.rcode || resp.Opcode != tc.req.Opcode {
					t.Fatalf("rcode %s opcode %s, want %s %s", dns.RcodeToString[resp.Rcode], dns.OpcodeToString[resp.Opcode],
						dns.RcodeToString[tc.rcode], dns.OpcodeToString[tc.req.Opcode])
				}
				opt := resp.IsEdns0()
				if opt == nil {
					t.Fatal("no OPT in the error response to an EDNS request (RFC 6891 §6.1.1)")
				}
				if opt.UDPSize() != DefaultUDPSize || !opt.Do() {
					t.Errorf("OPT size %d DO %v, want %d and the request's DO", opt.UDPSize(), opt.Do(), DefaultUDPSize)
				}
				if len(resp.Answer) != 0 || len(resp.Ns) != 0 {
					t.Errorf("error response with data: %v", resp)
				}
			})
		}
	}
	// Without EDNS the same errors carry no OPT (RFC 6891 §7).
	plain := new(dns.Msg)
	plain.SetUpdate("example.test.")
	if resp := exchange(t, srv.Addr(), "udp", plain); resp.Rcode != dns.RcodeNotImplemented || resp.IsEdns0() != nil {
		t.Fatalf("UPDATE without EDNS: rcode %s, OPT %v", dns.RcodeToString[resp.Rcode], resp.IsEdns0())
	}
}

// TestServer_ANYKeepsEachRRsetsTTL: RFC 2181 §5.2 asks for one TTL within an RRset only, so an
// ANY answer gives each type its own TTL: the apex SOA and NS keep 3600 beside a TXT of 300.
// Synthesised from a wildcard, the records carry the query name (RFC 4592 §3.3.1).
func TestServer_ANYKeepsEachRRsetsTTL(t *testing.T) {
	store := exampleStore(t, "")
	err := store.Update("example.test", func(tx *zonedb.Tx) error {
		put(t, tx, "", nil, `example.test. 300 IN TXT "v=spf1 -all"`)
		put(t, tx, "", nil, "multi.example.test. 900 IN TXT \"t\"")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, store, ServerOptions{})
	for _, tc := range []struct {
		name string
		want map[uint16]uint32 // type -> TTL
	}{
		{"example.test", map[uint16]uint32{dns.TypeSOA: zonedb.DefaultSOATTL, dns.TypeNS: zonedb.DefaultNSTTL, dns.TypeTXT: 300}},
		{"multi.example.test", map[uint16]uint32{dns.TypeA: 60, dns.TypeTXT: 900}},
		{"x.wild.example.test", map[uint16]uint32{dns.TypeA: 120, dns.TypeTXT: 120}},
	} {
		resp := ask(t, srv.Addr(), "tcp", tc.name, dns.TypeANY)
		seen := map[uint16]bool{}
		for _, rr := range resp.Answer {
			h := rr.Header()
			seen[h.Rrtype] = true
			if want, ok := tc.want[h.Rrtype]; !ok || h.Ttl != want {
				t.Errorf("%s ANY: %s with TTL %d, want %d (RFC 2181 §5.2)", tc.name, dns.TypeToString[h.Rrtype], h.Ttl, want)
			}
			if h.Name != dns.Fqdn(tc.name) {
				t.Errorf("%s ANY: record owned by %s", tc.name, h.Name)
			}
		}
		if len(seen) != len(tc.want) {
			t.Errorf("%s ANY: types %v, want %v", tc.name, seen, tc.want)
		}
	}
}

// TestServer_UDPAnswersFitTheSmallerPayloadSize: the payload size is the smaller of the
// client's (RFC 6891 §6.2.3, at least 512) and the server's own (DefaultUDPSize, 1232, the DNS
// Flag Day 2020 value, RFC 6891 §6.2.5); a larger answer is truncated with TC set, as PowerDNS
// does. TCP answers are never truncated.
func TestServer_UDPAnswersFitTheSmallerPayloadSize(t *testing.T) {
	store := exampleStore(t, "")
	err := store.Update("example.test", func(tx *zonedb.Tx) error {
		var lines []string
		for i := range 24 {
			lines = append(lines, fmt.Sprintf("huge.example.test. 300 IN TXT \"%02d%s\"", i, strings.Repeat("h", 98)))
		}
		put(t, tx, "", nil, lines...) // about 2,600 bytes
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		server, client uint16
		limit, answers int // limit in bytes; answers -1: fewer than all
		truncated      bool
	}{
		{"client 4096, server 1232", 0, 4096, 1232, -1, true},
		{"client 1000, server 1232", 0, 1000, 1000, -1, true},
		{"client 4096, server 4096", 4096, 4096, 4096, 24, false},
		{"client 100 counts as 512", 0, 100, 512, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, store, ServerOptions{UDPSize: tc.server})
			resp, n := udpWire(t, srv.Addr(), ednsQuery("huge.example.test", dns.TypeTXT, tc.client, false))
			if resp.Truncated != tc.truncated {
				t.Errorf("TC = %v, want %v", resp.Truncated, tc.truncated)
			}
			if n > tc.limit {
				t.Errorf("UDP answer of %d bytes, above the payload size %d", n, tc.limit)
			}
			if tc.answers >= 0 && len(resp.Answer) != tc.answers {
				t.Errorf("%d answers, want %d", len(resp.Answer), tc.answers)
			}
			if resp.IsEdns0() == nil {
				t.Error("truncated answer without OPT")
			}
		})
	}
	srv := startServer(t, store, ServerOptions{})
	if resp := exchange(t, srv.Addr(), "tcp", ednsQuery("huge.example.test", dns.TypeTXT, 4096, false)); resp.Truncated || len(resp.Answer) != 24 {
		t.Fatalf("TCP answer: TC %v, %d answers; want all 24", resp.Truncated, len(resp.Answer))
	}
}
