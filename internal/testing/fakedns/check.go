package fakedns

import (
	"testing"
	"time"

	"github.com/miekg/dns"
)

// CheckNXDOMAINThenGone is how every fake's DNS test ends: at addr (the fake's DNSAddr), a name
// of zone that does not exist ("nope.<zone>" A) is NXDOMAIN with one record, the zone's SOA, in
// the authority section; then deleteZone deletes the zone through the fake's API, and zone's SOA
// is REFUSED: the zone is no longer served. It fails the test otherwise.
func CheckNXDOMAINThenGone(t testing.TB, addr, zone string, deleteZone func() error) {
	t.Helper()
	if r := queryUDP(t, addr, "nope."+zone, dns.TypeA); r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 {
		t.Fatalf("NXDOMAIN: %v", r)
	}
	if err := deleteZone(); err != nil {
		t.Fatal(err)
	}
	if r := queryUDP(t, addr, zone, dns.TypeSOA); r.Rcode != dns.RcodeRefused {
		t.Fatalf("deleted zone still served: %v", r)
	}
}

func queryUDP(t testing.TB, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s at %s: %v", name, addr, err)
	}
	return r
}
