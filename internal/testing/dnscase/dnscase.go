package dnscase

import (
	"errors"
	"fmt"
	"slices"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/zonedb/zonedbtest"
)

// Case is one question and the response expected to it. Answer, Ns and Extra hold records in
// presentation form ("www.example.test. A 192.0.2.1"; a TTL and a class may be given and are not
// compared), in any order; an empty section expects none. OPT records are not compared.
type Case struct {
	Qname  string
	Qtype  uint16
	Rcode  int
	AA     bool
	Answer []string
	Ns     []string
	Extra  []string
}

// Msg is the case's question as a query message.
func (c Case) Msg() *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(c.Qname), c.Qtype)
	return m
}

// Check compares resp with the case: its rcode, its AA bit, the question echoed and each section
// in order-independent form. The error names every difference; nil when there is none.
func (c Case) Check(resp *dns.Msg) error {
	if resp == nil {
		return errors.New("no response")
	}
	var errs []error
	if resp.Rcode != c.Rcode || resp.Authoritative != c.AA {
		errs = append(errs, fmt.Errorf("rcode %s aa %v, want %s aa %v", dns.RcodeToString[resp.Rcode],
			resp.Authoritative, dns.RcodeToString[c.Rcode], c.AA))
	}
	if len(resp.Question) != 1 || resp.Question[0].Name != dns.Fqdn(c.Qname) || resp.Question[0].Qtype != c.Qtype {
		errs = append(errs, fmt.Errorf("question %v, want %s %s echoed", resp.Question, dns.Fqdn(c.Qname),
			dns.TypeToString[c.Qtype]))
	}
	for _, sec := range []struct {
		name string
		got  []dns.RR
		want []string
	}{{"answer", resp.Answer, c.Answer}, {"authority", resp.Ns, c.Ns}, {"additional", resp.Extra, c.Extra}} {
		errs = append(errs, Section(sec.name, sec.got, sec.want))
	}
	return errors.Join(errs...)
}

// Section compares the records got of the section called name with want (presentation form, any
// order) and returns an error quoting both when they differ, or when a wanted record does not
// parse.
func Section(name string, got []dns.RR, want []string) error {
	w, err := parse(want)
	if err != nil {
		return fmt.Errorf("%s section: %w", name, err)
	}
	if g := Texts(got); !slices.Equal(g, w) {
		return fmt.Errorf("%s section:\n got %q\nwant %q", name, g, w)
	}
	return nil
}

// Texts renders records in the form Check compares: "owner TYPE rdata", sorted, OPT left out.
func Texts(rrs []dns.RR) []string { return zonedbtest.Texts(rrs) }

// parse renders the wanted records as Texts does.
func parse(want []string) ([]string, error) {
	rrs := make([]dns.RR, 0, len(want))
	for _, s := range want {
		rr, err := dns.NewRR(s)
		if err != nil || rr == nil {
			return nil, fmt.Errorf("wanted record %q does not parse: %v", s, err)
		}
		rrs = append(rrs, rr)
	}
	return Texts(rrs), nil
}

// Addrs is the addresses of the A and AAAA records of rrs, in their order, as text.
func Addrs(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		switch v := rr.(type) {
		case *dns.A:
			out = append(out, v.A.String())
		case *dns.AAAA:
			out = append(out, v.AAAA.String())
		}
	}
	return out
}
