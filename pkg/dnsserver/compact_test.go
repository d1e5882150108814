package dnsserver

import (
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/dnscase"
	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// withoutRRSIGs returns a copy of resp without the RRSIGs of its answer and authority sections
// (their signatures differ at each signing; verifySections checks them).
func withoutRRSIGs(resp *dns.Msg) *dns.Msg {
	out := resp.Copy()
	drop := func(rrs []dns.RR) []dns.RR {
		var keep []dns.RR
		for _, rr := range rrs {
			if rr.Header().Rrtype != dns.TypeRRSIG {
				keep = append(keep, rr)
			}
		}
		return keep
	}
	out.Answer, out.Ns = drop(out.Answer), drop(out.Ns)
	return out
}

// TestCompact_AnswerShapes: with compact denial (RFC 9824) every denial is one NSEC at the name
// asked whose next name is the name's immediate successor, signed: a name that does not exist
// is NOERROR with RRSIG NSEC NXNAME (NXDOMAIN when the request has the CO bit), NODATA lists the
// name's types, an empty non-terminal none, a wildcard NODATA the wildcard's, a delegation
// without DS NS; a wildcard answer is signed as the name's own (label count of the name) with
// no proof; a request without DO gets NXDOMAIN and the SOA alone.
func TestCompact_AnswerShapes(t *testing.T) {
	store := exampleStore(t, "")
	if err := store.Update("example.test.", func(tx *zonedb.Tx) error {
		put(t, tx, "", nil, "ins.example.test. 300 IN NS ns.elsewhere.test.")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, store, ServerOptions{})
	pol := signingPolicy(t, "example.test.", nil)
	pol.Compact = true
	if err := srv.SetSigning("example.test.", pol); err != nil {
		t.Fatal(err)
	}
	z, _ := store.Snapshot().Enclosing("example.test.")
	soa := negativeSOA(z).String()
	nsec := func(name, types string) string {
		return name + " 60 IN NSEC \\000." + name + " " + types
	}
	for _, c := range []dnscase.Case{
		{Qname: "nothere.example.test.", Qtype: dns.TypeA, AA: true,
			Ns: []string{soa, nsec("nothere.example.test.", "RRSIG NSEC NXNAME")}},
		{Qname: "deep.nothere.example.test.", Qtype: dns.TypeTXT, AA: true,
			Ns: []string{soa, nsec("deep.nothere.example.test.", "RRSIG NSEC NXNAME")}},
		{Qname: "www.example.test.", Qtype: dns.TypeTXT, AA: true,
			Ns: []string{soa, nsec("www.example.test.", "A AAAA RRSIG NSEC")}},
		{Qname: "example.test.", Qtype: dns.TypeTXT, AA: true,
			Ns: []string{soa, nsec("example.test.", "NS SOA RRSIG NSEC DNSKEY")}},
		{Qname: "ent.example.test.", Qtype: dns.TypeA, AA: true,
			Ns: []string{soa, nsec("ent.example.test.", "RRSIG NSEC")}},
		{Qname: "x.wild.example.test.", Qtype: dns.TypeA, AA: true,
			Answer: []string{"x.wild.example.test. 120 IN A 192.0.2.50"}},
		{Qname: "x.wild.example.test.", Qtype: dns.TypeMX, AA: true,
			Ns: []string{soa, nsec("x.wild.example.test.", "A TXT RRSIG NSEC")}},
		{Qname: "child.example.test.", Qtype: dns.TypeDS, AA: true,
			Ns: []string{soa, nsec("child.example.test.", "NS RRSIG NSEC")}},
		{Qname: "www.ins.example.test.", Qtype: dns.TypeA,
			Ns: []string{"ins.example.test. 300 IN NS ns.elsewhere.test.", nsec("ins.example.test.", "NS RRSIG NSEC")}},
		{Qname: "dangling.example.test.", Qtype: dns.TypeA, AA: true,
			Answer: []string{"dangling.example.test. 300 IN CNAME nothere.example.test."},
			Ns:     []string{soa, nsec("nothere.example.test.", "RRSIG NSEC NXNAME")}},
	} {
		for range 2 { // the second from the answer cache
			resp := askDO(t, srv.Addr(), "udp", c.Qname, c.Qtype, 1232)
			verifySections(t, pol, resp)
			if err := c.Check(withoutRRSIGs(resp)); err != nil {
				t.Fatalf("%s %s: %v", c.Qname, dns.TypeToString[c.Qtype], err)
			}
		}
	}
	// The wildcard answer's RRSIG has the label count of the name asked.
	resp := askDO(t, srv.Addr(), "udp", "x.wild.example.test.", dns.TypeA, 1232)
	if sig, ok := resp.Answer[len(resp.Answer)-1].(*dns.RRSIG); !ok || sig.Labels != 4 {
		t.Fatalf("wildcard answer's RRSIG: %v, want labels 4", resp.Answer)
	}
	// The CO bit keeps NXDOMAIN, and the response has it too.
	m := new(dns.Msg)
	m.SetQuestion("nothere.example.test.", dns.TypeA)
	m.SetEdns0(1232, true)
	m.IsEdns0().SetCo()
	for range 2 {
		r := exchange(t, srv.Addr(), "udp", m)
		if r.Rcode != dns.RcodeNameError || r.IsEdns0() == nil || !r.IsEdns0().Co() || types(r.Ns) != "SOA RRSIG NSEC RRSIG" {
			t.Fatalf("CO request: %s [%s], want NXDOMAIN with CO and the compact NSEC", dns.RcodeToString[r.Rcode], types(r.Ns))
		}
	}
	if r := askDO(t, srv.Addr(), "udp", "nothere.example.test.", dns.TypeA, 1232); r.Rcode != dns.RcodeSuccess {
		t.Fatalf("DO without CO after a CO request: %s", dns.RcodeToString[r.Rcode])
	}
	if r := ask(t, srv.Addr(), "udp", "nothere.example.test.", dns.TypeA); r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 {
		t.Fatalf("without DO: %s %v, want NXDOMAIN and the SOA alone", dns.RcodeToString[r.Rcode], r.Ns)
	}
	if r := askDO(t, srv.Addr(), "udp", "www.example.test.", dns.TypeNXNAME, 1232); r.Rcode != dns.RcodeFormatError {
		t.Fatalf("a query for NXNAME: %s, want FORMERR (RFC 9824 §3.5)", dns.RcodeToString[r.Rcode])
	}
}

// TestDNSSEC_CompactDenialValidates: Unbound, and delv through it, validate compact.test.,
// signed with compact denial under the signed parent test.: a name that does not exist is a
// secure NODATA (NOERROR, no data), and so are NODATA, an empty non-terminal, a wildcard answer
// and a wildcard NODATA, CNAMEs and the denial of a DS at an insecure delegation.
func TestDNSSEC_CompactDenialValidates(t *testing.T) {
	hackrun.Need(t, "unbound", "unbound")
	hackrun.Need(t, "bind9-dnsutils", "delv")
	tree := newSignedTree(t)
	var cases []validationCase
	for _, c := range validationCases(compactZone) {
		if c.rcode == dns.RcodeNameError {
			c.rcode = dns.RcodeSuccess // NXDOMAIN as NODATA
		}
		cases = append(cases, c)
	}
	cases = append(cases, validationCase{"deep.nothere." + compactZone, dns.TypeAAAA, dns.RcodeSuccess, true})
	validate(t, tree, cases)
}
