package dnsserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/secondarytest"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// The embedded server against a real NSD. NSD is a secondary of the
// embedded server (hack/nsd.sh), so both serve one zone by construction (SameZone checks it
// by AXFR); the corpus of queries goes to both, each query twice to the embedded server (the
// second is a cache hit where the answer is cacheable, on the batched UDP path), and the
// answers are compared section by section. Differences the RFCs allow are in nsdAllowed, each
// with its reason; any other difference fails the test.

const diffZone = "z.test."

// diffRecords is the zone beside the SOA and apex NS (ns1.z.test, 127.0.0.1) that the store
// writes: CNAMEs to every kind of target, wildcards, empty non-terminals, delegations with and
// without DS and glue, and answers too large for 512 bytes and for 1,232.
var diffRecords = func() []string {
	l := []string{
		"www.z.test. 300 IN A 192.0.2.1",
		"www.z.test. 300 IN AAAA 2001:db8::1",
		`www.z.test. 300 IN TXT "www"`,
		"multi.z.test. 60 IN A 192.0.2.11",
		"multi.z.test. 60 IN A 192.0.2.12",
		"multi.z.test. 60 IN A 192.0.2.13",
		"cname.z.test. 300 IN CNAME www.z.test.",
		"chain.z.test. 300 IN CNAME cname.z.test.",
		"dangling.z.test. 300 IN CNAME nothere.z.test.",
		"ext.z.test. 300 IN CNAME target.other.test.",
		"todeleg.z.test. 300 IN CNAME host.sub.z.test.",
		"towild.z.test. 300 IN CNAME q.wild.z.test.",
		"toent.z.test. 300 IN CNAME ent.z.test.",
		"loop1.z.test. 300 IN CNAME loop2.z.test.",
		"loop2.z.test. 300 IN CNAME loop1.z.test.",
		"deep.ent.z.test. 300 IN A 192.0.2.2",
		"*.wild.z.test. 120 IN A 192.0.2.50",
		`*.wild.z.test. 120 IN TXT "wild"`,
		"*.wc.z.test. 120 IN CNAME www.z.test.",
		"sub.z.test. 300 IN NS ns1.sub.z.test.",
		"sub.z.test. 300 IN NS ns.elsewhere.test.",
		"ns1.sub.z.test. 300 IN A 192.0.2.53",
		"sub.z.test. 300 IN DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF",
		"nods.z.test. 300 IN NS ns.elsewhere.test.",
		"mx.z.test. 300 IN MX 10 mail.z.test.",
		"srv._tcp.z.test. 300 IN SRV 0 5 443 www.z.test.",
		"z.test. 300 IN MX 10 www.z.test.",
		`z.test. 300 IN TXT "v=spf1 -all"`,
		"z.test. 300 IN CAA 0 issue \"ca.example\"",
		"ptr.z.test. 300 IN PTR www.z.test.",
	}
	for i := range 40 { // one MX target with 40 addresses: 700 bytes of additional data
		l = append(l, fmt.Sprintf("mail.z.test. 300 IN A 192.0.2.%d", 100+i))
	}
	for i := range 20 { // a referral whose in-domain glue does not fit 512 bytes (RFC 9471)
		l = append(l, fmt.Sprintf("bigdeleg.z.test. 300 IN NS ns%02d.bigdeleg.z.test.", i),
			fmt.Sprintf("ns%02d.bigdeleg.z.test. 300 IN A 198.51.100.%d", i, i+1))
	}
	// Referrals whose name servers lie elsewhere in the zone: below another delegation (sibling
	// glue), at an authoritative name, both with in-domain glue and an out-of-zone one, and
	// sibling glue beyond 512 bytes beside in-domain glue that fits (RFC 9471).
	l = append(l,
		"sib2.z.test. 300 IN NS ns.sib2.z.test.",
		"ns.sib2.z.test. 300 IN A 192.0.2.70",
		"ns.sib2.z.test. 300 IN AAAA 2001:db8::70",
		"sib1.z.test. 300 IN NS ns.sib2.z.test.",
		"auth.z.test. 300 IN NS www.z.test.",
		"mixed.z.test. 300 IN NS ns.mixed.z.test.",
		"mixed.z.test. 300 IN NS ns.sib2.z.test.",
		"mixed.z.test. 300 IN NS www.z.test.",
		"mixed.z.test. 300 IN NS ns.elsewhere.test.",
		"ns.mixed.z.test. 300 IN A 192.0.2.71",
		"mxsib.z.test. 300 IN MX 10 ns.sib2.z.test.",
		"bigsib.z.test. 300 IN NS ns.bigsib.z.test.",
		"ns.bigsib.z.test. 300 IN A 192.0.2.72",
	)
	for i := range 16 {
		l = append(l, fmt.Sprintf("bigsib.z.test. 300 IN NS ns%02d.bigdeleg.z.test.", i))
	}
	// Names written with decimal escapes of ordinary characters (RFC 1035 §5.1): the same
	// names as without them, as owners and as targets.
	l = append(l,
		`esc\097ped.z.test. 300 IN A 192.0.2.80`,
		`toesc.z.test. 300 IN CNAME \101sc\097ped.z.test.`,
		`escdeleg.z.test. 300 IN NS ns.esc\100eleg.z.test.`,
		`ns.\101scdeleg.z.test. 300 IN A 192.0.2.81`,
		`mxesc.z.test. 300 IN MX 10 ESC\097PED.z.test.`,
	)
	var txt []string
	for range 10 { // one 1,010-byte TXT record: above 512, below 1,232
		txt = append(txt, `"`+strings.Repeat("x", 100)+`"`)
	}
	l = append(l, "big.z.test. 300 IN TXT "+strings.Join(txt, " "))
	for i := range 24 { // 24 TXT records of 100 bytes: above 1,232
		l = append(l, fmt.Sprintf("huge.z.test. 300 IN TXT \"%02d%s\"", i, strings.Repeat("h", 98)))
	}
	return l
}()

// diffNames are the query names (lower case; each query gets random 0x20 case).
var diffNames = []string{
	"z.test", "www", "multi", "cname", "chain", "dangling", "ext", "todeleg", "towild", "toent", "loop1",
	"ent", "deep.ent", "x.deep.ent", "wild", "x.wild", "a.b.wild", "*.wild", "x.wc", "sub", "host.sub",
	"ns1.sub", "nods", "x.nods", "bigdeleg", "mx", "mail", "srv._tcp", "_tcp", "big", "huge", "ptr",
	"nope", "x.www", "other.test", "test",
	"sib1", "x.sib1", "sib2", "ns.sib2", "auth", "mixed", "x.mixed", "bigsib", "mxsib",
	"escaped", "toesc", "escdeleg", "x.escdeleg", "mxesc",
}

// diffTypes are the query types asked at every name.
var diffTypes = []uint16{
	dns.TypeA, dns.TypeNS, dns.TypeCNAME, dns.TypeSOA, dns.TypePTR, dns.TypeHINFO, dns.TypeMX,
	dns.TypeTXT, dns.TypeAAAA, dns.TypeSRV, dns.TypeNAPTR, dns.TypeDS, dns.TypeRRSIG, dns.TypeNSEC,
	dns.TypeDNSKEY, dns.TypeSVCB, dns.TypeHTTPS, dns.TypeCAA, 65280, dns.TypeANY,
}

// diffVariant is how a query is sent: transport and EDNS0 (size 0: none).
type diffVariant struct {
	proto string
	size  uint16
	do    bool
}

var diffVariants = []diffVariant{
	{"udp", 0, false}, {"udp", 1232, false}, {"udp", 512, true}, {"tcp", 0, false}, {"tcp", 4096, true},
}

// probe is one query of the corpus, packed.
type probe struct {
	desc  string
	proto string
	qtype uint16 // 0 for the odd packets, but AXFR's
	wire  []byte
	odd   bool // one of oddPackets
}

// fqdn returns the query name of a diffNames entry.
func fqdn(n string) string {
	if strings.HasSuffix(n, "test") {
		return n + "."
	}
	return n + "." + diffZone
}

// randomCase returns name with each letter's case chosen by rnd (the 0x20 practice).
func randomCase(rnd *rand.Rand, name string) string {
	b := []byte(name)
	for i, c := range b {
		if 'a' <= c && c <= 'z' && rnd.IntN(2) == 1 {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// diffCorpus returns every name × type × variant query, then the malformed and odd packets.
func diffCorpus(t *testing.T, rnd *rand.Rand) []probe {
	t.Helper()
	var out []probe
	for _, n := range diffNames {
		for _, qt := range diffTypes {
			for _, v := range diffVariants {
				m := new(dns.Msg)
				m.Id = uint16(rnd.Uint32())
				m.SetQuestion(randomCase(rnd, fqdn(n)), qt)
				m.RecursionDesired = rnd.IntN(2) == 1
				if v.size > 0 {
					m.SetEdns0(v.size, v.do)
				}
				wire, err := m.Pack()
				if err != nil {
					t.Fatal(err)
				}
				desc := fmt.Sprintf("%s %s %s", fqdn(n), dns.Type(qt), v.proto)
				if v.size > 0 {
					desc += fmt.Sprintf(" edns %d do=%v", v.size, v.do)
				}
				out = append(out, probe{desc: desc, proto: v.proto, qtype: qt, wire: wire})
			}
		}
	}
	for _, p := range oddPackets(t) {
		for _, proto := range []string{"udp", "tcp"} {
			pr := probe{desc: p.desc + " " + proto, proto: proto, wire: p.wire, odd: true}
			if p.desc == "AXFR" {
				pr.qtype = dns.TypeAXFR
			}
			out = append(out, pr)
		}
	}
	return out
}

// oddPacket is a hand-made request.
type oddPacket struct {
	desc string
	wire []byte
}

// packQ packs a one-question query for name/qtype with id 0x2525 and RD, EDNS0 when size > 0.
func packQ(t *testing.T, name string, qtype uint16, size uint16) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.Id = 0x2525
	if size > 0 {
		m.SetEdns0(size, false)
	}
	wire, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return wire
}

// oddPackets are the malformed and unusual requests of the corpus (RFC 1035 §4.1, RFC 6891).
func oddPackets(t *testing.T) []oddPacket {
	t.Helper()
	www := packQ(t, "www.z.test.", dns.TypeA, 0)
	qend := len(www) // header, name, qtype, qclass
	hdr := func(qd, an, ns, ar uint16) []byte {
		h := make([]byte, 12)
		binary.BigEndian.PutUint16(h, 0x2525)
		h[2] = 0x01 // RD
		binary.BigEndian.PutUint16(h[4:], qd)
		binary.BigEndian.PutUint16(h[6:], an)
		binary.BigEndian.PutUint16(h[8:], ns)
		binary.BigEndian.PutUint16(h[10:], ar)
		return h
	}
	// opt is an OPT record of payload size 1232: root, type, class, TTL, RDLENGTH 0.
	opt := []byte{0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0}
	name := www[12 : qend-4] // \003www\001z\004test\000
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	question := func(qname []byte) []byte { return cat(qname, []byte{0, 1, 0, 1}) }
	set := func(b []byte, f func([]byte)) []byte { b = slices.Clone(b); f(b); return b }
	return []oddPacket{
		{"cut before QCLASS", www[:qend-2]},
		{"cut inside QCLASS", www[:qend-1]},
		{"cut before QTYPE", www[:qend-4]},
		{"cut inside the name", www[:16]},
		{"header only, QDCOUNT 1", www[:12]},
		{"shorter than a header", www[:7]},
		{"QDCOUNT 0", hdr(0, 0, 0, 0)},
		{"QDCOUNT 2", cat(hdr(2, 0, 0, 0), question(name), question(name))},
		{"forward compression pointer in QNAME", cat(hdr(1, 0, 0, 0), []byte{0xc0, 18}, []byte{0, 1, 0, 1}, name)},
		{"compression pointer into the header", cat(hdr(1, 0, 0, 0), []byte{3, 'w', 'w', 'w', 0xc0, 2}, []byte{0, 1, 0, 1})},
		{"compression pointer loop", cat(hdr(1, 0, 0, 0), []byte{3, 'w', 'w', 'w', 0xc0, 12}, []byte{0, 1, 0, 1})},
		{"label type 0x40 (RFC 6891 §5)", cat(hdr(1, 0, 0, 0), []byte{0x41, 'w', 0}, []byte{0, 1, 0, 1})},
		{"OPT in the answer section", cat(hdr(1, 1, 0, 0), question(name), opt)},
		{"OPT in the authority section", cat(hdr(1, 0, 1, 0), question(name), opt)},
		{"two OPT records", cat(hdr(1, 0, 0, 2), question(name), opt, opt)},
		{"ARCOUNT 1, nothing follows", cat(hdr(1, 0, 0, 1), question(name))},
		{"OPT cut short", cat(hdr(1, 0, 0, 1), question(name), opt[:7])},
		{"trailing bytes after the question", cat(www, []byte{0xde, 0xad})},
		{"EDNS version 1", set(packQ(t, "www.z.test.", dns.TypeA, 1232), func(b []byte) { b[len(b)-5] = 1 })},
		{"unknown EDNS option", cat(hdr(1, 0, 0, 1), question(name), []byte{0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 4, 0xfd, 0xe9, 0, 0})},
		{"QR set (a response)", set(www, func(b []byte) { b[2] |= 0x80 })},
		{"opcode IQUERY", set(www, func(b []byte) { b[2] |= 1 << 3 })},
		{"opcode STATUS", set(www, func(b []byte) { b[2] |= 2 << 3 })},
		{"opcode 7 (unassigned)", set(www, func(b []byte) { b[2] |= 7 << 3 })},
		{"opcode UPDATE", set(packQ(t, "z.test.", dns.TypeSOA, 0), func(b []byte) { b[2] |= 5 << 3 })},
		{"Z bit set", set(www, func(b []byte) { b[3] |= 0x40 })},
		{"AD and CD set", set(www, func(b []byte) { b[3] |= 0x30 })},
		{"class CHAOS", set(www, func(b []byte) { b[len(b)-1] = 3 })},
		{"class NONE", set(www, func(b []byte) { b[len(b)-1] = 254 })},
		{"class ANY", set(www, func(b []byte) { b[len(b)-1] = 255 })},
		{"class 0", set(www, func(b []byte) { b[len(b)-1] = 0 })},
		{"qtype 0", set(www, func(b []byte) { b[len(b)-3] = 0 })},
		{"AXFR", packQ(t, "z.test.", dns.TypeAXFR, 0)},
		{"IXFR without SOA", packQ(t, "z.test.", dns.TypeIXFR, 0)},
		{"MAILB", packQ(t, "z.test.", dns.TypeMAILB, 0)},
		{"OPT query type", packQ(t, "z.test.", dns.TypeOPT, 0)},
		{"name with an escaped dot", packQ(t, `a\.b.z.test.`, dns.TypeA, 0)},
		{"name of 63-byte labels", packQ(t, strings.Repeat(strings.Repeat("a", 63)+".", 3)+"z.test.", dns.TypeA, 1232)},
	}
}

// exchangeRaw sends wire over proto to addr and returns the response, or nil when none came
// within timeout (or the server closed the TCP connection).
func exchangeRaw(addr, proto string, wire []byte, timeout time.Duration) ([]byte, error) {
	conn, err := net.DialTimeout(proto, addr, timeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if proto == "tcp" {
		wire = append(binary.BigEndian.AppendUint16(nil, uint16(len(wire))), wire...)
	}
	if _, err := conn.Write(wire); err != nil {
		return nil, err
	}
	if proto == "udp" {
		buf := make([]byte, dns.MaxMsgSize)
		n, err := conn.Read(buf)
		if isTimeout(err) {
			return nil, nil
		}
		return buf[:n], err
	}
	var l [2]byte
	if _, err := io.ReadFull(conn, l[:]); err != nil {
		if isTimeout(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
			strings.Contains(err.Error(), "connection reset") {
			return nil, nil
		}
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint16(l[:]))
	_, err = io.ReadFull(conn, buf)
	return buf, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// answerView is a response reduced to what the comparison looks at. Sections are sorted RR
// strings, lower case (names compare without case, RFC 4343; NSD compresses owner names to the
// question's 0x20 case, the embedded server writes the zone's), OPT left out of additional.
type answerView struct {
	none               bool // no response
	unparsable         string
	rcode              int
	qr, aa, tc, rd, cd bool
	opcode             int
	question           string
	answer, ns, extra  []string
	opt                bool
	do                 bool
}

func viewOf(wire []byte) answerView {
	if wire == nil {
		return answerView{none: true}
	}
	m := new(dns.Msg)
	if err := m.Unpack(wire); err != nil {
		return answerView{unparsable: err.Error()}
	}
	v := answerView{rcode: m.Rcode, qr: m.Response, aa: m.Authoritative, tc: m.Truncated, rd: m.RecursionDesired,
		cd: m.CheckingDisabled, opcode: m.Opcode}
	for _, q := range m.Question {
		v.question += q.String() // the asker's case: compared exactly
	}
	str := func(rrs []dns.RR) []string {
		var out []string
		for _, rr := range rrs {
			if o, ok := rr.(*dns.OPT); ok {
				v.opt, v.do = true, o.Do()
				continue
			}
			out = append(out, strings.ToLower(rr.String()))
		}
		slices.Sort(out)
		return out
	}
	v.answer, v.ns, v.extra = str(m.Answer), str(m.Ns), str(m.Extra)
	return v
}

// differences lists how a (embedded) and b (the reference server, named ref) differ.
func differences(a, b answerView, ref string) []string {
	var out []string
	add := func(what string, x, y any) { out = append(out, fmt.Sprintf("%s: %v, %s %v", what, x, ref, y)) }
	if a.none != b.none {
		return []string{fmt.Sprintf("answered: %v, %s %v", !a.none, ref, !b.none)}
	}
	if a.unparsable != b.unparsable {
		add("unparsable", a.unparsable, b.unparsable)
	}
	if a.none {
		return out
	}
	if a.rcode != b.rcode {
		add("rcode", dns.RcodeToString[a.rcode], dns.RcodeToString[b.rcode])
	}
	if a.opcode != b.opcode {
		add("opcode", a.opcode, b.opcode)
	}
	for _, f := range []struct {
		name string
		x, y bool
	}{{"QR", a.qr, b.qr}, {"AA", a.aa, b.aa}, {"TC", a.tc, b.tc}, {"RD", a.rd, b.rd}, {"CD", a.cd, b.cd}, {"OPT", a.opt, b.opt}, {"DO", a.do, b.do}} {
		if f.x != f.y {
			add(f.name, f.x, f.y)
		}
	}
	if a.question != b.question {
		add("question", a.question, b.question)
	}
	for _, s := range []struct {
		name string
		x, y []string
	}{{"answer", a.answer, b.answer}, {"authority", a.ns, b.ns}, {"additional", a.extra, b.extra}} {
		if !slices.Equal(s.x, s.y) {
			add(s.name, s.x, s.y)
		}
	}
	return out
}

// allowance is a difference from NSD that the RFCs allow: apply rewrites the two views
// (embedded, NSD) of one probe so that the allowed part no longer differs, and reports
// whether it changed anything.
type allowance struct {
	name, reason string
	apply        func(p probe, emb, ref *answerView) bool
}

// apexNS is the zone's NS RRset as the views print it.
const apexNS = "z.test.\t3600\tin\tns\tns1.z.test."

// nsdAllowed is the table of differences the RFCs allow, applied in order.
var nsdAllowed = []allowance{
	{"apex NS in authority", "NSD (minimal-responses: no, its default) adds the zone's NS RRset to the " +
		"authority section of positive answers, and its name servers' addresses to the additional section; " +
		"that is optional data (RFC 1034 §4.3.2 step 6, RFC 2181 §9), which the embedded server leaves out " +
		"as NSD does with minimal-responses: yes",
		func(_ probe, emb, ref *answerView) bool {
			if len(emb.ns) != 0 || !slices.Equal(ref.ns, []string{apexNS}) || len(ref.answer) == 0 {
				return false
			}
			ref.ns = nil
			ref.extra = slices.DeleteFunc(ref.extra, func(rr string) bool {
				return strings.HasPrefix(rr, "ns1.z.test.\t") && !slices.Contains(emb.extra, rr)
			})
			return true
		}},
	{"ANY subset", "NSD answers ANY with one RRset of the name (RFC 8482 §4.1 allows any non-empty subset) " +
		"and the additional data of that RRset; the embedded server returns every RRset and the additional " +
		"data of all",
		func(p probe, emb, ref *answerView) bool {
			if p.qtype != dns.TypeANY || emb.rcode != ref.rcode || len(ref.answer) == 0 || slices.Equal(emb.answer, ref.answer) ||
				!subset(ref.answer, emb.answer) || !subset(ref.extra, emb.extra) {
				return false
			}
			ref.answer, ref.extra = emb.answer, emb.extra
			return true
		}},
	{"referral glue sets TC", "a referral whose in-domain glue does not fit sets TC (RFC 9471 §3: all glue " +
		"of in-domain name servers, or TC); NSD 4.6 predates RFC 9471 and sends the glue that fits without TC",
		func(_ probe, emb, ref *answerView) bool {
			if !emb.tc || ref.tc || emb.aa || !slices.ContainsFunc(emb.ns, func(rr string) bool { return strings.Contains(rr, "\tns\t") }) {
				return false
			}
			ref.tc = true
			return true
		}},
	{"optional referral addresses that fit", "a referral's sibling glue and the addresses of its name " +
		"servers elsewhere in the zone are optional (RFC 9471 §3.2, RFC 2181 §9): when not all fit, each " +
		"server keeps the ones that fit in its own order (the embedded server rotates the NS RRset), without " +
		"TC; the in-domain glue, which is mandatory, must be the same",
		func(p probe, emb, ref *answerView) bool {
			cut := referralCut(emb.ns)
			if p.proto != "udp" || cut == "" || emb.tc || ref.tc || slices.Equal(emb.extra, ref.extra) ||
				!slices.Equal(emb.answer, ref.answer) || !slices.Equal(emb.ns, ref.ns) {
				return false
			}
			inDomain := func(rr string) bool { return dns.IsSubDomain(cut, strings.Fields(rr)[0]) }
			optional := func(rr string) bool { return !inDomain(rr) && dns.IsSubDomain(diffZone, strings.Fields(rr)[0]) }
			for _, x := range [][]string{emb.extra, ref.extra} {
				for _, rr := range x {
					if !inDomain(rr) && !optional(rr) {
						return false
					}
				}
			}
			if !slices.Equal(slices.DeleteFunc(slices.Clone(emb.extra), optional), slices.DeleteFunc(slices.Clone(ref.extra), optional)) {
				return false
			}
			ref.extra = emb.extra
			return true
		}},
	{"content of a TC answer", "with TC set on both, the records that fit are not compared: the client " +
		"ignores them and asks again over TCP (RFC 2181 §9, RFC 1035 §4.2.1); NSD and the embedded server " +
		"both keep whole RRsets",
		func(_ probe, emb, ref *answerView) bool {
			if !emb.tc || !ref.tc || (slices.Equal(emb.answer, ref.answer) && slices.Equal(emb.ns, ref.ns) && slices.Equal(emb.extra, ref.extra)) {
				return false
			}
			ref.answer, ref.ns, ref.extra = emb.answer, emb.ns, emb.extra
			return true
		}},
	{"header-only error answers", "to a request it cannot interpret or will not answer (FORMERR, NOTIMP, " +
		"REFUSED for a class it does not serve) NSD returns the header alone, RD cleared with FORMERR; the " +
		"embedded server echoes what it could read of the question, copies RD for queries (RFC 1035 §4.1.1) " +
		"and answers an OPT with an OPT (RFC 6891 §6.1.1, §7); nothing in RFC 1035 asks for either form",
		func(_ probe, emb, ref *answerView) bool {
			switch ref.rcode {
			case dns.RcodeFormatError, dns.RcodeNotImplemented, dns.RcodeRefused:
			default:
				return false
			}
			if ref.none || emb.rcode != ref.rcode || ref.question != "" ||
				(emb.question == "" && emb.rd == ref.rd && emb.opt == ref.opt) {
				return false
			}
			ref.question, ref.rd, ref.opt, ref.do = emb.question, emb.rd, emb.opt, emb.do
			return true
		}},
	{"TCP close on an unreadable request", "over TCP, NSD closes the connection on a request without a " +
		"complete question; the embedded server answers FORMERR, as NSD does over UDP (RFC 7766 §6.2 lets a " +
		"server close connections)",
		func(p probe, emb, ref *answerView) bool {
			if p.proto != "tcp" || !ref.none || emb.none || emb.rcode != dns.RcodeFormatError {
				return false
			}
			*ref = *emb
			return true
		}},
	{"CD copied", "the embedded server copies CD from the query (RFC 4035 §3.1.6: a security-aware name " +
		"server MUST copy it); NSD 4.6 does not",
		func(_ probe, emb, ref *answerView) bool {
			if !emb.cd || ref.cd {
				return false
			}
			ref.cd = true
			return true
		}},
	{"AXFR over UDP", "AXFR over UDP is not defined (RFC 5936 §4.2), so neither is its error: the embedded " +
		"server answers REFUSED, NSD NOTIMP",
		func(p probe, emb, ref *answerView) bool {
			if p.qtype != dns.TypeAXFR || p.proto != "udp" || emb.rcode != dns.RcodeRefused || ref.rcode != dns.RcodeNotImplemented {
				return false
			}
			ref.rcode = emb.rcode
			return true
		}},
}

// referralCut returns the owner of the NS records of an authority section (a referral's cut),
// or "".
func referralCut(ns []string) string {
	for _, rr := range ns {
		if f := strings.Fields(rr); len(f) >= 5 && f[3] == "ns" {
			return f[0]
		}
	}
	return ""
}

// subset reports whether every record of a is in b.
func subset(a, b []string) bool {
	for _, rr := range a {
		if !slices.Contains(b, rr) {
			return false
		}
	}
	return true
}

// nsdAvailable reports whether nsd is installed (.ci/run installs it).
func nsdAvailable() bool {
	if _, err := exec.LookPath("nsd"); err == nil {
		return true
	}
	_, err := os.Stat("/usr/sbin/nsd")
	return err == nil
}

// diffStore is the zone of the comparison in a fresh store.
func diffStore(t testing.TB) *zonedb.Store {
	t.Helper()
	store := zonedb.NewStore(zonedb.StoreOptions{})
	if _, err := store.CreateZone(diffZone, zonedb.ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	err := store.Update(diffZone, func(tx *zonedb.Tx) error {
		type key struct {
			name string
			typ  uint16
		}
		sets := map[key][]string{}
		var order []key
		for _, l := range diffRecords {
			rr := rrs(t, l)[0]
			k := key{rr.Header().Name, rr.Header().Rrtype}
			if sets[k] == nil {
				order = append(order, k)
			}
			sets[k] = append(sets[k], l)
		}
		for _, k := range order {
			put(t, tx, "", nil, sets[k]...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// TestNSD_AnswersLikeARealNSD replays the corpus against the embedded server and NSD 4 and
// compares the answers (see the top of this file).
func TestNSD_AnswersLikeARealNSD(t *testing.T) {
	if !nsdAvailable() {
		t.Skip("nsd is not installed (apt-get install -y nsd; .ci/run installs it)")
	}
	srv := startServer(t, diffStore(t), ServerOptions{})
	nsd := secondarytest.NSD(t)
	nsd.Start(t, srv.Addr(), diffZone)
	secondarytest.SameZone(t, 60*time.Second, srv.Addr(), diffZone, nsd)
	compareAnswers(t, srv, "NSD", nsd.Addr, nsdAllowed, true)
}

// diffSeed is the seed of a comparison's random case, IDs and RD: NSD_DIFF_SEED when set (to
// replay a run), else the clock.
func diffSeed(t *testing.T) uint64 {
	t.Helper()
	if v := os.Getenv("NSD_DIFF_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("NSD_DIFF_SEED: %v", err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// compareAnswers sends the corpus (without the odd packets unless odd) to the reference server
// ref (named name) and, twice, to srv, and fails the test on every difference that allowed does
// not allow.
func compareAnswers(t *testing.T, srv *Server, name, ref string, allowed []allowance, odd bool) {
	t.Helper()
	seed := diffSeed(t)
	rnd := rand.New(rand.NewPCG(seed, 25))
	corpus := slices.DeleteFunc(diffCorpus(t, rnd), func(p probe) bool { return p.odd && !odd })
	const timeout = 1500 * time.Millisecond
	counts := map[string]int{}
	failed, compared := 0, 0
	// askUntilAnswered sends p to addr; when silent is false and no answer came, it asks twice
	// more with longer timeouts, so that an answer late on a loaded machine is not taken for a
	// drop.
	askUntilAnswered := func(addr string, p probe, silent bool) []byte {
		t.Helper()
		var resp []byte
		for try := range 3 {
			var err error
			if resp, err = exchangeRaw(addr, p.proto, p.wire, timeout*time.Duration(1+3*try)); err != nil {
				t.Fatalf("%s to %s: %v", p.desc, addr, err)
			}
			if resp != nil || silent {
				break
			}
		}
		return resp
	}
	for _, p := range corpus {
		refWire := askUntilAnswered(ref, p, true)
		for round := range 2 { // a miss, then (when cacheable) a hit
			embWire := askUntilAnswered(srv.Addr(), p, refWire == nil)
			if refWire == nil && embWire != nil {
				refWire = askUntilAnswered(ref, p, false)
			}
			emb, rv := viewOf(embWire), viewOf(refWire)
			for _, a := range allowed {
				if a.apply(p, &emb, &rv) {
					counts[a.name]++
				}
			}
			compared++
			if d := differences(emb, rv, name); len(d) > 0 {
				failed++
				t.Errorf("%s (round %d):\n  %s", p.desc, round+1, strings.Join(d, "\n  "))
			}
		}
	}
	odds := 0
	if odd {
		odds = len(oddPackets(t))
	}
	t.Logf("seed %d: corpus of %d queries (%d names × %d types × %d variants, %d odd packets × 2 transports); "+
		"%d answers compared with %s (%d of the embedded server's from its answer cache), %d differ; allowed differences: %v",
		seed, len(corpus), len(diffNames), len(diffTypes), len(diffVariants), odds, compared, name,
		srv.cacheHits.Load(), failed, counts)
}
