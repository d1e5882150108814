package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
)

// deletePDNSZone deletes zone through the PowerDNS HTTP API, as an operator would by hand.
func deletePDNSZone(t *testing.T, srv pdnstest.Server, zone string) {
	t.Helper()
	if code, body := srv.API(t, http.MethodDelete, "/zones/"+dns.Fqdn(zone), ""); code != http.StatusNoContent {
		t.Fatalf("DELETE zone %s: HTTP %d %s", zone, code, body)
	}
}

// zoneEvents returns "type reason" of every Event of DNSZone name in ns.
func zoneEvents(ctx context.Context, c client.Reader, ns, name string) ([]string, error) {
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "DNSZone" && e.InvolvedObject.Name == name {
			out = append(out, e.Type+" "+e.Reason)
		}
	}
	return out, nil
}

// TestDNSZone_ZoneDeletedAtProviderIsRecreatedAndRepublished runs on a real
// PowerDNS: the hosted zone of a Ready DNSZone is deleted through the PowerDNS API. The next
// write into it (a new DNSEndpoint) fails with ZoneNotFound, and that alone, with
// --zone-resync-interval at 1h, makes the DNSZone report it (a Warning Event
// ZoneDeletedAtProvider), re-create the zone (a Normal Event ZoneRecreated) and get every
// DNSEndpoint and DNSRecord of the zone written again, though nobody touched them.
func TestDNSZone_ZoneDeletedAtProviderIsRecreatedAndRepublished(t *testing.T) {
	srv := pdnstest.Start(t)
	c := startClusterWith(t, "gone-cluster", time.Hour, 5*time.Hour, clusterOptions{DNSAddr: "127.0.0.1:0"})
	direct, err := client.New(c.cfg, client.Options{Scheme: c.scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := "apps"
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: "dnsplane.io/pdns",
			StringData: map[string]string{"PDNS_API_URL": srv.APIURL, "PDNS_API_KEY": srv.Key, "DNS_ADDRESS": srv.DNSAddr}})
	z := zoneObj(ns, "gone", "gone1.test", nil)
	c.create(z)
	c.waitCondition(z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 60*time.Second)
	web := endpointObj(ns, "web", dnsv1.Endpoint{DNSName: "web.gone1.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.10"}})
	app := recordObj("app", "app.gone1.test", dnsv1.Endpoint{DNSName: "app.gone1.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.20"}})
	c.create(web, app)
	servedAs := func(name string, want ...string) func() error {
		return func() error {
			if got := served(t, srv.DNSAddr, name); !slices.Equal(got, want) {
				return fmt.Errorf("PowerDNS serves %s as %v, want %v", name, got, want)
			}
			return nil
		}
	}
	eventually(t, 60*time.Second, "web published", servedAs("web.gone1.test", "192.0.2.10"))
	eventually(t, 60*time.Second, "app published", servedAs("app.gone1.test", "192.0.2.20"))
	before := &dnsv1.DNSEndpoint{}
	if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(web), before); err != nil {
		t.Fatal(err)
	}

	deletePDNSZone(t, srv, "gone1.test")
	eventually(t, 10*time.Second, "zone gone from PowerDNS", servedAs("web.gone1.test"))
	// The first write into the deleted zone: a new object, not the ones that must come back.
	c.create(endpointObj(ns, "trigger", dnsv1.Endpoint{DNSName: "new.gone1.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.30"}}))

	eventually(t, 60*time.Second, "Events ZoneDeletedAtProvider and ZoneRecreated", func() error {
		evs, err := zoneEvents(c.ctx(), direct, ns, z.Name)
		if err != nil {
			return err
		}
		if !slices.Contains(evs, "Warning "+dnsv1.ReasonZoneDeletedAtProvider) || !slices.Contains(evs, "Normal ZoneRecreated") {
			return fmt.Errorf("DNSZone Events: %s", strings.Join(evs, ", "))
		}
		return nil
	})
	eventually(t, 60*time.Second, "web republished", servedAs("web.gone1.test", "192.0.2.10"))
	eventually(t, 60*time.Second, "app republished", servedAs("app.gone1.test", "192.0.2.20"))
	eventually(t, 60*time.Second, "trigger published", servedAs("new.gone1.test", "192.0.2.30"))
	c.waitCondition(z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 60*time.Second)
	after := &dnsv1.DNSEndpoint{}
	if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(web), after); err != nil {
		t.Fatal(err)
	}
	if after.Generation != before.Generation {
		t.Fatalf("web's generation changed %d -> %d: it was touched", before.Generation, after.Generation)
	}
}
