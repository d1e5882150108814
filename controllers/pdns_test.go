package controllers_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
)

// TestPowerDNS_ZoneAndRecordsThroughTheSameControllers: the controllers never special-case a
// provider. A DNSZone whose Secret is dnsplane.io/pdns creates the zone in a real PowerDNS,
// checks its SOA at DNS_ADDRESS, and a DNSEndpoint's record is served by PowerDNS; deleting
// both removes the record and the zone.
func TestPowerDNS_ZoneAndRecordsThroughTheSameControllers(t *testing.T) {
	ns := "pdns"
	srv := pdnsNamespace(t, ns, "PDNS_NAMESERVERS", "ns1.pdns.test")
	z := zoneObj(ns, "z", "pdns.test", nil)
	ep := endpointObj(ns, "api", dnsv1.Endpoint{DNSName: "api.pdns.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.80", "192.0.2.81"}})
	create(t, z, ep)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	if z.Status.ZoneID != pdns.ZoneID("pdns.test") {
		t.Fatalf("zoneID %q", z.Status.ZoneID)
	}
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	ask := func(name string) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeA)
		r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, srv.DNSAddr)
		if err != nil {
			t.Fatalf("query PowerDNS: %v", err)
		}
		return r
	}
	if r := ask("api.pdns.test"); !r.Authoritative || len(r.Answer) != 2 {
		t.Fatalf("PowerDNS answer for api.pdns.test: %v", r)
	}

	if err := k8s.Delete(ctxT(t), ep); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ep)
	eventually(t, 10*time.Second, "record removed from PowerDNS", func() error {
		if r := ask("api.pdns.test"); len(r.Answer) != 0 {
			return fmt.Errorf("still answered: %v", r.Answer)
		}
		return nil
	})
	if err := k8s.Delete(ctxT(t), z); err != nil {
		t.Fatal(err)
	}
	waitGone(t, z)
	if r := ask("pdns.test"); r.Rcode != dns.RcodeRefused {
		t.Fatalf("PowerDNS still serves the deleted zone: %v", r)
	}
}
