package dnsserver

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// nameAlphabet are the ordinary characters of the generated labels.
const nameAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789-_"

// randomLabels returns 1 to 3 labels of 1 to 12 ordinary characters, dot-separated.
func randomLabels(rnd *rand.Rand) string {
	labels := make([]string, 1+rnd.IntN(3))
	for i := range labels {
		b := make([]byte, 1+rnd.IntN(12))
		for j := range b {
			b[j] = nameAlphabet[rnd.IntN(len(nameAlphabet))]
		}
		labels[i] = string(b)
	}
	return strings.Join(labels, ".")
}

// escapeRandomly writes name (ordinary characters and dots) another way that RFC 1035 §5.1
// reads as the same name: each character as itself, upper case, \DDD, or \X (not for digits,
// which would start a \DDD).
func escapeRandomly(rnd *rand.Rand, name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch r := rnd.IntN(6); {
		case c == '.':
			b.WriteByte(c)
		case r == 0:
			fmt.Fprintf(&b, `\%03d`, c)
		case r == 1 && (c < '0' || c > '9'):
			b.WriteByte('\\')
			b.WriteByte(c)
		case r == 2 && c >= 'a' && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// escapeZone is the zone of the property test.
const escapeZone = "p.test."

// escapeRecords are the records of the property test around the generated name n (an FQDN in
// escapeZone), with every name written by w: n's data, a CNAME to it, an MX and an SRV naming
// it, a delegation with glue at n, and a referral to a name server at n's glue (sibling glue).
func escapeRecords(n string, w func(string) string) []string {
	return []string{
		w(n) + " 300 IN A 192.0.2.1",
		w(n) + ` 300 IN TXT "n"`,
		w("alias."+escapeZone) + " 300 IN CNAME " + w(n),
		w("mail."+escapeZone) + " 300 IN MX 10 " + w(n),
		w("_x._tcp."+escapeZone) + " 300 IN SRV 0 0 1 " + w(n),
		w("d."+n) + " 300 IN NS " + w("ns.d."+n),
		w("ns.d."+n) + " 300 IN A 192.0.2.53",
		w("sib."+escapeZone) + " 300 IN NS " + w("ns.d."+n),
		w("other."+escapeZone) + " 300 IN NS " + w(n),
	}
}

// escapeStore serves escapeZone with records, one set per line, and then sets, one set each.
func escapeStore(t *testing.T, records []string, sets ...[]string) *zonedb.Store {
	t.Helper()
	store := zonedb.NewStore(zonedb.StoreOptions{Clock: countingClock()})
	if _, err := store.CreateZone(escapeZone, zonedb.ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := store.Update(escapeZone, func(tx *zonedb.Tx) error {
		for _, l := range records {
			put(t, tx, "", nil, l)
		}
		for _, set := range sets {
			put(t, tx, "", nil, set...)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return store
}

// answerWire resolves name/qtype against srv's store and packs the response (ID 1).
func answerWire(t *testing.T, srv *Server, name string, qtype uint16) []byte {
	t.Helper()
	req := new(dns.Msg)
	req.SetQuestion(name, qtype)
	req.Id = 1
	resp := new(dns.Msg)
	resp.SetReply(req)
	srv.resolve(srv.store.Snapshot(), req.Question[0], resp)
	fit(resp, dns.MaxMsgSize)
	wire, err := resp.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return wire
}

// Writing the names of a zone with decimal or character escapes of ordinary characters, or in
// another case, does not change a single answer: owners, CNAME, MX, SRV and NS targets and glue
// are one name however written (RFC 1035 §5.1, RFC 4343). The same random names go into two
// stores, plain and escaped at random; every answer must be the same, as a resolver reads it,
// but for the case of the names in record data (the store keeps it as written, RFC 4343 §4).
// ESCAPE_SEED replays a run.
func TestResolve_EscapedNamesAnswerAsPlainOnes(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("ESCAPE_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("ESCAPE_SEED: %v", err)
		}
		seed = n
	}
	rnd := rand.New(rand.NewPCG(seed, 22))
	t.Logf("seed %d", seed)
	types := []uint16{dns.TypeA, dns.TypeTXT, dns.TypeMX, dns.TypeSRV, dns.TypeNS, dns.TypeCNAME, dns.TypeANY}
	for range 50 {
		n := randomLabels(rnd) + "." + escapeZone
		if l := dns.SplitDomainName(n); slices.Contains([]string{"alias", "mail", "_tcp", "sib", "other"}, l[len(l)-3]) {
			continue // a name of the records around n
		}
		plain := escapeStore(t, escapeRecords(n, func(s string) string { return s }))
		escaped := escapeRecords(n, func(s string) string { return escapeRandomly(rnd, s) })
		mixed := escapeStore(t, escaped)
		a, err := NewServer(plain, ServerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewServer(mixed, ServerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{n, "alias." + escapeZone, "mail." + escapeZone, "_x._tcp." + escapeZone,
			"d." + n, "x.d." + n, "ns.d." + n, "sib." + escapeZone, "x.sib." + escapeZone, "other." + escapeZone} {
			for _, qt := range types {
				qn := randomCase(rnd, q) // a name read off the wire has no escapes of ordinary characters
				want, got := answerWire(t, a, qn, qt), answerWire(t, b, qn, qt)
				if len(got) != len(want) || strings.ToLower(unpacked(t, got)) != strings.ToLower(unpacked(t, want)) {
					t.Fatalf("seed %d: %s %s differs with the zone written as\n  %s\ngot  %s\nwant %s", seed, q, dns.Type(qt),
						strings.Join(escaped, "\n  "), unpacked(t, got), unpacked(t, want))
				}
			}
		}
	}
}

// unpacked renders a packed response as a resolver reads it.
func unpacked(t *testing.T, wire []byte) string {
	t.Helper()
	m := new(dns.Msg)
	if err := m.Unpack(wire); err != nil {
		t.Fatal(err)
	}
	return m.String()
}

// A referral carries the addresses of its name servers that are elsewhere in the zone, below
// another cut (sibling glue) or at an authoritative name, after its in-domain glue (RFC 1034
// §4.3.2 step 3b). Over UDP the in-domain glue is mandatory (TC when it does not fit, RFC 9471
// §3) and the rest optional: dropped without TC. Addresses below a cut are not additional data
// of an answer that names them as an MX target (glue is not data of the zone), but are for an
// NS answer (the addresses NS records call for).
func TestResolve_ReferralGlueInDomainSiblingAndElsewhere(t *testing.T) {
	records := []string{
		"www.p.test. 300 IN A 192.0.2.1",
		"sib.p.test. 300 IN NS ns.sib.p.test.",
		"ns.sib.p.test. 300 IN A 192.0.2.2",
		"mx.p.test. 300 IN MX 10 ns.sib.p.test.",
		"big.p.test. 300 IN NS ns.big.p.test.",
		"ns.big.p.test. 300 IN A 192.0.2.3",
	}
	var sibNS, inNS []string
	for i := range 16 {
		h := fmt.Sprintf("ns%02d.sib.p.test.", i)
		records = append(records, h+" 300 IN A 198.51.100."+strconv.Itoa(i+1))
		sibNS = append(sibNS, "big.p.test. 300 IN NS "+h)
		inNS = append(inNS, fmt.Sprintf("in.p.test. 300 IN NS ns%02d.in.p.test.", i))
		records = append(records, fmt.Sprintf("ns%02d.in.p.test. 300 IN A 203.0.113.%d", i, i+1))
	}
	store := escapeStore(t, records, append([]string{"big.p.test. 300 IN NS ns.big.p.test.", "big.p.test. 300 IN NS www.p.test."}, sibNS...),
		inNS, []string{"p.test. 300 IN NS ns.sib.p.test.", "p.test. 300 IN NS www.p.test."})
	srv := startServer(t, store, ServerOptions{})
	addr := srv.Addr()
	all := ask(t, addr, "tcp", "x.big.p.test.", dns.TypeA)
	if len(all.Extra) != 18 || all.Truncated {
		t.Fatalf("referral over TCP: %d additional records (want 18: in-domain, www, 16 sibling), TC %v:\n%v", len(all.Extra), all.Truncated, all)
	}
	udp := ask(t, addr, "udp", "x.big.p.test.", dns.TypeA)
	if udp.Truncated || len(udp.Extra) == 0 || len(udp.Extra) >= 18 || texts(udp.Extra[:1])[0] != "ns.big.p.test. A 192.0.2.3" {
		t.Errorf("referral over UDP 512: TC %v, additional %v; want the in-domain glue first, some optional addresses dropped, no TC",
			udp.Truncated, texts(udp.Extra))
	}
	if in := ask(t, addr, "udp", "x.in.p.test.", dns.TypeA); !in.Truncated {
		t.Errorf("referral whose in-domain glue does not fit 512 bytes: no TC")
	}
	if mx := ask(t, addr, "tcp", "mx.p.test.", dns.TypeMX); len(mx.Extra) != 0 {
		t.Errorf("MX to a host below a cut: additional %v, want none (glue is not data of the zone)", texts(mx.Extra))
	}
	want := []string{"ns.sib.p.test. A 192.0.2.2", "www.p.test. A 192.0.2.1"}
	if apex := ask(t, addr, "tcp", "p.test.", dns.TypeNS); !slices.Equal(texts(apex.Extra), want) {
		t.Errorf("apex NS: additional %v, want %v (the name servers' addresses, glue included)", texts(apex.Extra), want)
	}
}
