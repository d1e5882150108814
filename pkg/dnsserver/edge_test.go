package dnsserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/dnscase"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// ANY at a CNAME, TC per section, malformed requests. Each answer is
// asked twice (a miss, then a cache hit where the answer is cacheable), over UDP with and
// without batched reads, and over TCP.

// edgeServers returns servers of store with the batched UDP reader (the default) and with one
// datagram per read (fastReader).
func edgeServers(t *testing.T, store *zonedb.Store) map[string]*Server {
	t.Helper()
	return map[string]*Server{"batched": startServer(t, store, ServerOptions{}), "one per read": startServer(t, store, ServerOptions{UDPBatch: 1})}
}

// TestServer_ANYAtACNAMEReturnsTheCNAMEAlone: "a type CNAME or * query should return just the
// CNAME" (RFC 1034 §3.6.2). Before, dangling ANY was NXDOMAIN with the SOA, alias ANY carried
// the target's records and a CNAME into a delegation gave a referral with AA set.
func TestServer_ANYAtACNAMEReturnsTheCNAMEAlone(t *testing.T) {
	store := exampleStore(t, "")
	err := store.Update("example.test", func(tx *zonedb.Tx) error {
		put(t, tx, "", nil, "todeleg.example.test. 300 IN CNAME host.sub.example.test.")
		put(t, tx, "", nil, "*.wc.example.test. 300 IN CNAME www.example.test.")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for label, srv := range edgeServers(t, store) {
		for _, tc := range []struct{ qname, cname string }{
			{"dangling.example.test.", "dangling.example.test. CNAME nothere.example.test."},
			{"alias.example.test.", "alias.example.test. CNAME www.example.test."},
			{"chain.example.test.", "chain.example.test. CNAME alias.example.test."},
			{"ext.example.test.", "ext.example.test. CNAME target.other.test."},
			{"todeleg.example.test.", "todeleg.example.test. CNAME host.sub.example.test."},
			{"x.wc.example.test.", "x.wc.example.test. CNAME www.example.test."},
		} {
			for _, proto := range []string{"udp", "tcp"} {
				for round := range 2 {
					c := dnscase.Case{Qname: tc.qname, Qtype: dns.TypeANY, Rcode: dns.RcodeSuccess, AA: true, Answer: []string{tc.cname}}
					resp := ask(t, srv.Addr(), proto, tc.qname, dns.TypeANY)
					if err := c.Check(resp); err != nil || resp.Truncated {
						t.Errorf("%s %s %s ANY (round %d), TC %v, want the CNAME alone: %v", label, proto, tc.qname, round+1, resp.Truncated, err)
					}
				}
			}
		}
	}
}

// TestServer_TCOnlyWhenARequiredRRsetDoesNotFit: RFC 2181 §9, TC is set when an RRset the
// answer needs does not fit, "not ... merely because some extra information could have been
// included"; RFC 9471 §3, a referral's in-domain glue is needed. Before, an MX answer whose
// target had 40 addresses came back with TC and 27 of them over UDP without EDNS.
func TestServer_TCOnlyWhenARequiredRRsetDoesNotFit(t *testing.T) {
	store := exampleStore(t, "")
	err := store.Update("example.test", func(tx *zonedb.Tx) error {
		var mail, ns, glue []string
		for i := range 40 {
			mail = append(mail, fmt.Sprintf("mail40.example.test. 300 IN A 192.0.2.%d", 100+i))
		}
		for i := range 20 {
			ns = append(ns, fmt.Sprintf("bigdeleg.example.test. 300 IN NS ns%02d.bigdeleg.example.test.", i))
			glue = append(glue, fmt.Sprintf("ns%02d.bigdeleg.example.test. 300 IN A 198.51.100.%d", i, i+1))
		}
		put(t, tx, "", nil, mail...)
		put(t, tx, "", nil, ns...)
		for _, g := range glue {
			put(t, tx, "", nil, g)
		}
		put(t, tx, "", nil, "mx40.example.test. 300 IN MX 10 mail40.example.test.")
		put(t, tx, "", nil, "mx40.example.test. 300 IN TXT \"t\"")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name              string
		qname             string
		qtype             uint16
		edns              uint16 // 0: none
		proto             string
		aa, tc            bool
		answer, ns, extra int // record counts; -1: not checked
	}{
		{"MX, the 40 addresses do not fit 512: dropped without TC", "mx40.example.test.", dns.TypeMX, 0, "udp", true, false, 1, 0, 0},
		{"MX, they fit 1232", "mx40.example.test.", dns.TypeMX, 1232, "udp", true, false, 1, 0, 40},
		{"MX over TCP", "mx40.example.test.", dns.TypeMX, 0, "tcp", true, false, 1, 0, 40},
		{"ANY: MX and TXT fit, the addresses do not", "mx40.example.test.", dns.TypeANY, 0, "udp", true, false, 2, 0, 0},
		{"the 40 addresses themselves do not fit 512: TC, no partial RRset", "mail40.example.test.", dns.TypeA, 0, "udp", true, true, 0, 0, 0},
		{"the 1,100-byte TXT does not fit 512: TC", "big.example.test.", dns.TypeTXT, 0, "udp", true, true, 0, 0, 0},
		{"referral whose glue does not fit 512: TC (RFC 9471)", "host.bigdeleg.example.test.", dns.TypeA, 0, "udp", false, true, 0, 20, -1},
		{"referral whose glue fits 1232", "host.bigdeleg.example.test.", dns.TypeA, 1232, "udp", false, false, 0, 20, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for label, srv := range edgeServers(t, store) {
				for round := range 2 {
					m := new(dns.Msg)
					m.SetQuestion(tc.qname, tc.qtype)
					if tc.edns > 0 {
						m.SetEdns0(tc.edns, false)
					}
					wire, err := m.Pack()
					if err != nil {
						t.Fatal(err)
					}
					raw := rawExchange(t, tc.proto, srv.Addr(), wire)
					resp := new(dns.Msg)
					if err := resp.Unpack(raw); err != nil {
						t.Fatal(err)
					}
					limit := 512
					if tc.edns > 0 {
						limit = int(tc.edns)
					}
					if tc.proto == "udp" && len(raw) > limit {
						t.Errorf("%s: %d bytes, above %d", label, len(raw), limit)
					}
					count := func(got, want int) bool { return want < 0 || got == want }
					if resp.Authoritative != tc.aa || resp.Truncated != tc.tc || !count(len(resp.Answer), tc.answer) ||
						!count(len(resp.Ns), tc.ns) || !count(len(texts(resp.Extra)), tc.extra) {
						t.Errorf("%s round %d: aa=%v tc=%v answer %d authority %d additional %d; want aa=%v tc=%v %d %d %d\n%v",
							label, round+1, resp.Authoritative, resp.Truncated, len(resp.Answer), len(resp.Ns), len(texts(resp.Extra)),
							tc.aa, tc.tc, tc.answer, tc.ns, tc.extra, resp)
					}
					if tc.edns > 0 && resp.IsEdns0() == nil {
						t.Errorf("%s: no OPT in the answer to an EDNS query (RFC 6891 §6.1.1)", label)
					}
				}
			}
		})
	}
}

// TestFit pins fit's per-section rule on messages built by hand.
func TestFit(t *testing.T) {
	many := func(owner string, n int) []dns.RR {
		var out []dns.RR
		for i := range n {
			out = append(out, rrs(t, fmt.Sprintf("%s 300 IN A 192.0.2.%d", owner, i+1))...)
		}
		return out
	}
	msg := func(answer, ns, extra []dns.RR, edns bool) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion("q.example.test.", dns.TypeA)
		m.Response = true
		m.Answer, m.Ns, m.Extra = answer, ns, extra
		if edns {
			m.SetEdns0(1232, true)
		}
		return m
	}
	nsSet := rrs(t, "d.example.test. 300 IN NS ns.d.example.test.")
	for _, tc := range []struct {
		name                 string
		m                    *dns.Msg
		trimmed, tc          bool
		answer, ns, extra    int
		optLast              bool
		compressed, unpacked bool
	}{
		{"fits uncompressed", msg(many("q.example.test.", 3), nil, nil, false), false, false, 3, 0, 0, false, false, false},
		{"fits compressed", msg(many("q.example.test.", 25), nil, nil, false), false, false, 25, 0, 0, false, true, false},
		{"answer RRset too large: TC, dropped whole", msg(many("q.example.test.", 40), nil, nil, false), true, true, 0, 0, 0, false, true, false},
		{"second answer RRset too large: the first kept", msg(append(many("q.example.test.", 2), many("r.example.test.", 40)...), nil, nil, true),
			true, true, 2, 0, 0, true, true, false},
		{"additional too large: dropped without TC, OPT kept last", msg(many("q.example.test.", 2), nil, append(many("a.example.test.", 2), many("b.example.test.", 40)...), true),
			true, false, 2, 0, 2, true, true, false},
		{"referral glue too large: TC", msg(nil, nsSet, many("ns.d.example.test.", 40), true), true, true, 0, 1, 0, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trimmed := fit(tc.m, 512)
			wire, err := tc.m.Pack()
			if err != nil {
				t.Fatal(err)
			}
			extra := len(texts(tc.m.Extra))
			if trimmed != tc.trimmed || tc.m.Truncated != tc.tc || len(tc.m.Answer) != tc.answer || len(tc.m.Ns) != tc.ns || extra != tc.extra ||
				tc.m.Compress != tc.compressed || len(wire) > 512 {
				t.Fatalf("trimmed=%v tc=%v answer %d authority %d additional %d compress=%v, %d bytes", trimmed, tc.m.Truncated,
					len(tc.m.Answer), len(tc.m.Ns), extra, tc.m.Compress, len(wire))
			}
			if tc.optLast && (len(tc.m.Extra) == 0 || tc.m.Extra[len(tc.m.Extra)-1].Header().Rrtype != dns.TypeOPT) {
				t.Fatalf("OPT not last in %v", tc.m.Extra)
			}
		})
	}
}

// malformedRequests are requests that miekg/dns unpacks leniently and checkRequest refuses,
// with the error it names; each has ID 0x2525 and RD.
func malformedRequests(t *testing.T) []struct {
	name string
	pkt  []byte
	err  error
} {
	t.Helper()
	www := packQ(t, "www.example.test.", dns.TypeA, 0)
	name := www[12 : len(www)-4]
	hdr := func(qd, an, ns, ar uint16) []byte {
		h := []byte{0x25, 0x25, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		for i, c := range []uint16{qd, an, ns, ar} {
			binary.BigEndian.PutUint16(h[4+2*i:], c)
		}
		return h
	}
	opt := []byte{0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0}
	q := slices.Concat(name, []byte{0, 1, 0, 1})
	return []struct {
		name string
		pkt  []byte
		err  error
	}{
		{"cut before QCLASS", www[:len(www)-2], errCutShort},
		{"cut before QTYPE", www[:len(www)-4], errCutShort},
		{"cut inside the name", www[:16], errCutShort},
		{"forward compression pointer", slices.Concat(hdr(1, 0, 0, 0), []byte{0xc0, 18, 0, 1, 0, 1}, name), errBadPointer},
		{"pointer into the header", slices.Concat(hdr(1, 0, 0, 0), []byte{3, 'w', 'w', 'w', 0xc0, 2, 0, 1, 0, 1}), errBadPointer},
		{"pointer to itself", slices.Concat(hdr(1, 0, 0, 0), []byte{3, 'w', 'w', 'w', 0xc0, 12, 0, 1, 0, 1}), errBadPointer},
		{"label type 0x40", slices.Concat(hdr(1, 0, 0, 0), []byte{0x41, 'w', 0, 0, 1, 0, 1}), errBadLabel},
		{"OPT in the answer section", slices.Concat(hdr(1, 1, 0, 0), q, opt), errMisplacedOPT},
		{"OPT in the authority section", slices.Concat(hdr(1, 0, 1, 0), q, opt), errMisplacedOPT},
		{"ARCOUNT 1, nothing follows", slices.Concat(hdr(1, 0, 0, 1), q), errCutShort},
		{"OPT with RDLENGTH beyond the end", slices.Concat(hdr(1, 0, 0, 1), q, opt[:9], []byte{0, 4}), errCutShort},
	}
}

// TestCheckRequest: the malformed requests are refused with their reason; well-formed ones,
// with backward compression pointers in later records, pass.
func TestCheckRequest(t *testing.T) {
	for _, tc := range malformedRequests(t) {
		if err := checkRequest(tc.pkt); !errors.Is(err, tc.err) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
	}
	notify := new(dns.Msg)
	notify.SetNotify("example.test.")
	notify.Answer = rrs(t, "example.test. 60 IN SOA ns1.example.test. hostmaster.example.test. 7 3600 600 1209600 60")
	notify.Compress = true
	signed := new(dns.Msg)
	signed.SetAxfr("example.test.")
	signed.SetTsig("key.example.test.", dns.HmacSHA256, 300, time.Now().Unix())
	signed.Compress = true
	ednsQ := new(dns.Msg)
	ednsQ.SetQuestion("www.example.test.", dns.TypeA)
	ednsQ.SetEdns0(1232, true)
	long := packQ(t, "www.example.test.", dns.TypeA, 0)
	for name, m := range map[string]*dns.Msg{"NOTIFY with a compressed SOA": notify, "AXFR with a TSIG record": signed, "EDNS query": ednsQ} {
		wire, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		if err := checkRequest(wire); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := checkRequest(append(long, 0xde, 0xad)); err != nil {
		t.Errorf("trailing bytes: %v (ignored, as by miekg/dns and NSD)", err)
	}
}

// TestServer_MalformedRequestsGetFORMERR: over UDP (both readers) and TCP, each malformed
// request gets FORMERR with its ID and opcode, the header alone, and the server goes on
// answering. Before, a query cut before its QCLASS got REFUSED with a class-0 question, and
// one with a forward pointer or an OPT in the answer section was answered.
func TestServer_MalformedRequestsGetFORMERR(t *testing.T) {
	for label, srv := range edgeServers(t, exampleStore(t, "")) {
		for _, tc := range malformedRequests(t) {
			for _, proto := range []string{"udp", "tcp"} {
				raw := rawExchange(t, proto, srv.Addr(), tc.pkt)
				resp := new(dns.Msg)
				if err := resp.Unpack(raw); err != nil {
					t.Fatalf("%s %s %s: %v", label, proto, tc.name, err)
				}
				if resp.Rcode != dns.RcodeFormatError || resp.Id != 0x2525 || !resp.Response || resp.Opcode != dns.OpcodeQuery ||
					len(resp.Question)+len(resp.Answer)+len(resp.Ns)+len(resp.Extra) != 0 {
					t.Errorf("%s %s %s: want a header-only FORMERR with ID 0x2525, got\n%v", label, proto, tc.name, resp)
				}
			}
		}
		if resp := ask(t, srv.Addr(), "udp", "www.example.test", dns.TypeA); resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 1 {
			t.Fatalf("%s: after the malformed requests: %v", label, resp)
		}
	}
}
