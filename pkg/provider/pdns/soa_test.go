package pdns_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
)

// askSOA returns the SOA PowerDNS serves for zone over DNS.
func askSOA(t *testing.T, srv server, zone string) *dns.SOA {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeSOA)
	r, _, err := (&dns.Client{Timeout: 5 * time.Second}).Exchange(m, srv.DNSAddr)
	if err != nil {
		t.Fatalf("SOA %s: %v", zone, err)
	}
	for _, rr := range r.Answer {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa
		}
	}
	t.Fatalf("SOA %s: no SOA in %v", zone, r)
	return nil
}

// TestRealServer_NewZoneSOANamesItsFirstNameServer: a zone dnsplane creates has an SOA whose MNAME
// is the zone's first name server (RFC 1035 §3.3.13), RNAME hostmaster.<zone> and the timers of
// pdns.SOASerial and its timers, not PowerDNS' default-soa-content placeholder
// a.misconfigured.dns.server.invalid.
func TestRealServer_NewZoneSOANamesItsFirstNameServer(t *testing.T) {
	srv := startPDNS(t)
	cases := []struct {
		name, zone string
		servers    []string
		mname      string
	}{
		{"default ns1.<zone>", "soa.example.test", nil, "ns1.soa.example.test."},
		{"PDNS_NAMESERVERS", "soa2.example.test", []string{"NS-b.provider.test", "ns-a.provider.test"}, "ns-b.provider.test."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key, Nameservers: tc.servers})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: tc.zone, CallerReference: "r"}); err != nil {
				t.Fatal(err)
			}
			checkSOA(t, askSOA(t, srv, tc.zone), tc.mname, "hostmaster."+tc.zone+".")
		})
	}
}

func checkSOA(t *testing.T, soa *dns.SOA, mname, rname string) {
	t.Helper()
	if soa.Ns != mname || soa.Mbox != rname {
		t.Errorf("SOA MNAME %s RNAME %s, want %s %s", soa.Ns, soa.Mbox, mname, rname)
	}
	if soa.Refresh != pdns.SOARefresh || soa.Retry != pdns.SOARetry || soa.Expire != pdns.SOAExpire || soa.Minttl != pdns.SOAMinimum || soa.Serial == 0 {
		t.Errorf("SOA timers %d %d %d %d serial %d, want %d %d %d %d and a serial > 0", soa.Refresh, soa.Retry, soa.Expire, soa.Minttl, soa.Serial,
			pdns.SOARefresh, pdns.SOARetry, pdns.SOAExpire, pdns.SOAMinimum)
	}
}

// TestRealServer_PlaceholderSOAOfAnOwnZoneIsRepaired: a zone this caller reference created before
// the SOA was set (PowerDNS' placeholder MNAME) gets the proper SOA at the next EnsureZone; an
// SOA someone set by hand is left alone.
func TestRealServer_PlaceholderSOAOfAnOwnZoneIsRepaired(t *testing.T) {
	srv := startPDNS(t)
	p := newProvider(t, srv, srv.Key)
	if code, body := srv.API(t, http.MethodPost, "/zones", `{"name":"old.example.test.","kind":"Native","nameservers":["ns1.old.example.test."],"account":"uid-old"}`); code != http.StatusCreated {
		t.Fatalf("creating an old-style zone by hand: HTTP %d %s", code, body)
	}
	if soa := askSOA(t, srv, "old.example.test"); soa.Ns != pdns.PlaceholderMNAME {
		t.Fatalf("precondition: hand-made zone has MNAME %s, want PowerDNS' placeholder", soa.Ns)
	}
	if _, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "old.example.test", CallerReference: "uid-old"}); err != nil {
		t.Fatal(err)
	}
	checkSOA(t, askSOA(t, srv, "old.example.test"), "ns1.old.example.test.", "hostmaster.old.example.test.")

	custom := `{"rrsets":[{"name":"old.example.test.","type":"SOA","ttl":3600,"changetype":"REPLACE","records":[{"content":"ns.custom.test. admin.custom.test. 7 1 2 3 4","disabled":false}]}]}`
	if code, body := srv.API(t, http.MethodPatch, "/zones/old.example.test.", custom); code != http.StatusNoContent {
		t.Fatalf("setting a custom SOA: HTTP %d %s", code, body)
	}
	if _, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "old.example.test", CallerReference: "uid-old"}); err != nil {
		t.Fatal(err)
	}
	if soa := askSOA(t, srv, "old.example.test"); soa.Ns != "ns.custom.test." {
		t.Errorf("a hand-set SOA was replaced: MNAME %s", soa.Ns)
	}
}
