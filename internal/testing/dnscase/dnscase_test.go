package dnscase

import (
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// response is a NOERROR, authoritative answer to www.example.test A with two addresses, in the
// order given.
func response(t *testing.T, answer ...string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion("www.example.test.", dns.TypeA)
	r := new(dns.Msg)
	r.SetReply(m)
	r.Authoritative = true
	for _, s := range answer {
		r.Answer = append(r.Answer, mustRR(s))
	}
	r.SetEdns0(1232, false)
	return r
}

func mustRR(s string) dns.RR {
	rr, err := dns.NewRR(s)
	if err != nil {
		panic(err)
	}
	return rr
}

func TestCase_CheckComparesSectionsInAnyOrder(t *testing.T) {
	c := Case{Qname: "www.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, AA: true,
		Answer: []string{"www.example.test. A 192.0.2.2", "WWW.example.test. 300 IN A 192.0.2.1"}}
	if err := c.Check(response(t, "www.example.test. 60 A 192.0.2.1", "www.example.test. 60 A 192.0.2.2")); err != nil {
		t.Fatalf("same records in another order, TTL and case: %v", err)
	}
	for _, tc := range []struct {
		name string
		c    Case
		resp *dns.Msg
		want string
	}{
		{"a record missing", c, response(t, "www.example.test. 60 A 192.0.2.1"), "answer section"},
		{"a record too many", Case{Qname: c.Qname, Qtype: c.Qtype, AA: true}, response(t, "www.example.test. 60 A 192.0.2.1"), "answer section"},
		{"another rcode", Case{Qname: c.Qname, Qtype: c.Qtype, Rcode: dns.RcodeNameError, AA: true, Answer: c.Answer},
			response(t, "www.example.test. A 192.0.2.1", "www.example.test. A 192.0.2.2"), "rcode NOERROR aa true, want NXDOMAIN"},
		{"another question", Case{Qname: "ftp.example.test", Qtype: c.Qtype, AA: true, Answer: c.Answer},
			response(t, "www.example.test. A 192.0.2.1", "www.example.test. A 192.0.2.2"), "question"},
		{"an unparsable wanted record", Case{Qname: c.Qname, Qtype: c.Qtype, AA: true, Ns: []string{"nonsense"}},
			response(t), "does not parse"},
		{"no response", c, nil, "no response"},
	} {
		if err := tc.c.Check(tc.resp); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// A case states a question and the response expected; Check names what differs.
func ExampleCase_Check() {
	c := Case{Qname: "www.example.test", Qtype: dns.TypeA, Rcode: dns.RcodeSuccess, AA: true,
		Answer: []string{"www.example.test. A 192.0.2.1"}}
	resp := new(dns.Msg)
	resp.SetReply(c.Msg())
	resp.Authoritative = true
	resp.Answer = []dns.RR{mustRR("www.example.test. 60 IN A 192.0.2.9")}
	fmt.Println(c.Check(resp))
	// Output:
	// answer section:
	//  got ["www.example.test. A 192.0.2.9"]
	// want ["www.example.test. A 192.0.2.1"]
}

// TestAddrs: the A and AAAA values of an answer, in its order; other types are left out.
func TestAddrs(t *testing.T) {
	var rrs []dns.RR
	for _, s := range []string{"a.test. A 192.0.2.2", "a.test. CNAME b.test.", "a.test. AAAA 2001:db8::1", "a.test. A 192.0.2.1"} {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		rrs = append(rrs, rr)
	}
	if got, want := strings.Join(Addrs(rrs), ","), "192.0.2.2,2001:db8::1,192.0.2.1"; got != want {
		t.Fatalf("Addrs = %s, want %s", got, want)
	}
}
