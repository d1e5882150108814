package controllers_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/bindtest"
)

// TestRFC2136_AdoptedZoneThroughTheSameControllers: RFC 2136 cannot create zones, so a DNSZone
// without zoneID reports NotCapable; one adopting a BIND zone by zoneID becomes Ready, a
// DNSEndpoint's record is served by BIND, and deleting the DNSZone keeps the adopted zone.
func TestRFC2136_AdoptedZoneThroughTheSameControllers(t *testing.T) {
	srv := bindtest.Start(t)
	zone := srv.AddZone(t, "adopt")
	ns := "rfc2136"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: "dnsplane.io/rfc2136",
			StringData: map[string]string{"RFC2136_HOST": srv.Host, "RFC2136_PORT": strconv.Itoa(srv.Port),
				"RFC2136_TSIG_KEYNAME": bindtest.KeyName, "RFC2136_TSIG_SECRET": srv.Secret, "DNS_ADDRESS": srv.Addr()}})

	created, adopted, ep := adoptedZoneObjects(t, ns, "new.rfc2136.test", zone)
	ask := func(name string, qtype uint16) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qtype)
		r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, srv.Addr())
		if err != nil {
			t.Fatalf("query BIND: %v", err)
		}
		return r
	}
	if r := ask("web."+zone, dns.TypeA); !r.Authoritative || len(r.Answer) != 1 {
		t.Fatalf("BIND answer for web.%s: %v", zone, r)
	}

	if err := k8s.Delete(ctxT(t), ep); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ep)
	eventually(t, 10*time.Second, "record removed from BIND", func() error {
		if r := ask("web."+zone, dns.TypeA); len(r.Answer) != 0 {
			return fmt.Errorf("still answered: %v", r.Answer)
		}
		return nil
	})
	deleteKeepsAdopted(t, ask, zone, adopted, created)
}

// adoptedZoneObjects creates in ns a DNSZone "created" for newZone, a DNSZone "adopted" of the
// provider's existing zone and a DNSEndpoint "web" (web.<zone> A 192.0.2.90), and waits until the
// first is NotCapable (the provider cannot create zones), the second Ready and the third
// Published.
func adoptedZoneObjects(t *testing.T, ns, newZone, zone string) (created, adopted *dnsv1.DNSZone, ep *dnsv1.DNSEndpoint) {
	t.Helper()
	created = zoneObj(ns, "created", newZone, nil)
	adopted = zoneObj(ns, "adopted", zone, func(z *dnsv1.DNSZone) { z.Spec.ZoneID = zone })
	ep = endpointObj(ns, "web", dnsv1.Endpoint{DNSName: "web." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.90"}})
	create(t, created, adopted, ep)
	waitCondition(t, created, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonNotCapable)
	waitCondition(t, adopted, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	return created, adopted, ep
}

// deleteKeepsAdopted deletes the DNSZones, waits until they are gone, and fails the test unless
// the provider still answers the adopted zone's SOA (ask queries its server).
func deleteKeepsAdopted(t *testing.T, ask func(string, uint16) *dns.Msg, zone string, zones ...*dnsv1.DNSZone) {
	t.Helper()
	for _, o := range zones {
		if err := k8s.Delete(ctxT(t), o); err != nil {
			t.Fatal(err)
		}
		waitGone(t, o)
	}
	if r := ask(zone, dns.TypeSOA); !r.Authoritative || len(r.Answer) != 1 {
		t.Fatalf("deleting the DNSZone removed the adopted zone: %v", r)
	}
}
