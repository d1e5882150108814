package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/answerloop"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/pkg/plan"
	dnsprovider "github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// extRecord is a record set external-dns v0.22 publishes with its TXT registry: the set, and
// its registry record at the typed name, its value quoted as external-dns writes it.
func extRecord(name, typ, owner, resource string, targets ...string) []dnsprovider.Change {
	txtName := registry.ExternalNaming{}.TXTName(name, typ)
	v := fmt.Sprintf(`"heritage=external-dns,external-dns/owner=%s,external-dns/resource=%s"`, owner, resource)
	set := dnsprovider.RecordSet{Name: name, Type: typ, TTL: 300, Targets: targets}
	txt := dnsprovider.RecordSet{Name: txtName, Type: "TXT", TTL: 300, Targets: []string{v}}
	return []dnsprovider.Change{{Action: dnsprovider.ActionCreate, After: &txt}, {Action: dnsprovider.ActionCreate, After: &set}}
}

// TestTakeover_ExternalDNSOwnerWithNoGap, on a real PowerDNS: external-dns
// owner ext1 published www (A) and api (CNAME), owner ext2 published other (A). A manager with
// --adopt-external-dns-owner=ext1 and DNSEndpoints of the same names (www with a new address)
// takes www and api over: its registry records are written, www's address changes in place, and
// ext1's TXT records go; a query loop asking every 50 ms sees no missing and no third value.
// other stays OwnershipConflict and untouched. A second external-dns owner's claim that then
// appears on www is a double claim: Ready=False DoubleClaim and a Warning Event.
func TestTakeover_ExternalDNSOwnerWithNoGap(t *testing.T) {
	const zone = "takeover.test"
	srv := pdnstest.Start(t)
	p, zoneID := sharedZone(t, srv, zone)
	var changes []dnsprovider.Change
	changes = append(changes, extRecord("www."+zone, "A", "ext1", "crd/default/www", "192.0.2.1")...)
	changes = append(changes, extRecord("api."+zone, "CNAME", "ext1", "crd/default/api", "lb.example.net")...)
	changes = append(changes, extRecord("other."+zone, "A", "ext2", "crd/default/other", "192.0.2.7")...)
	if err := p.ApplyChanges(context.Background(), zoneID, changes); err != nil {
		t.Fatal(err)
	}
	before := pdnsSets(t, srv, zone)

	loop := answerloop.Start(t, srv.DNSAddr, []answerloop.Query{
		{Name: "www." + zone, Type: dns.TypeA, Allowed: []string{"192.0.2.1", "192.0.2.2"}},
		{Name: "api." + zone, Type: dns.TypeCNAME, Allowed: []string{"lb.example.net"}},
		{Name: "other." + zone, Type: dns.TypeA, Allowed: []string{"192.0.2.7"}}}, answerloop.Options{Interval: 50 * time.Millisecond})
	c := startClusterWith(t, "cluster-t", time.Minute, 5*time.Minute, clusterOptions{ExternalDNS: plan.ExternalDNS{AdoptOwner: "ext1"}})
	c.adopt(srv, zone, zoneID)
	www := endpointIn("apps", "www", dnsv1.Endpoint{DNSName: "www." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.2"}, RecordTTL: 300})
	api := endpointIn("apps", "api", dnsv1.Endpoint{DNSName: "api." + zone, RecordType: "CNAME", Targets: dnsv1.Targets{"lb.example.net"}, RecordTTL: 300})
	other := endpointIn("apps", "other", dnsv1.Endpoint{DNSName: "other." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.8"}})
	c.create(www, api, other)
	c.waitCondition(www, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
	c.waitCondition(api, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
	cond := c.waitCondition(other, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict, 30*time.Second)
	if !strings.Contains(cond.Message, "external-dns owner ext2") {
		t.Errorf("other's conflict does not name ext2: %s", cond.Message)
	}
	eventually(t, 10*time.Second, "PowerDNS serves www's new address", func() error {
		if got := served(t, srv.DNSAddr, "www."+zone); !slices.Equal(got, []string{"192.0.2.2"}) {
			return fmt.Errorf("www = %v", got)
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond) // a few more rounds of the loop after the switch
	loop.Stop()
	t.Logf("takeover: %d queries during the switch, %d failed %v", loop.Queries.Load(), loop.Failures.Load(), loop.Examples())
	if loop.Failures.Load() != 0 || loop.Queries.Load() == 0 {
		t.Errorf("%d of %d answers missing or wrong: %v", loop.Failures.Load(), loop.Queries.Load(), loop.Examples())
	}

	checkTakenOverSets(t, srv, zone, before)
	checkDoubleClaim(t, c, p, zoneID, srv, www)
}

// checkTakenOverSets checks the zone after the takeover: no external-dns record of the adopted
// owner, ext2's records as before, and one registry record of cluster-t per taken name.
func checkTakenOverSets(t *testing.T, srv pdnstest.Server, zone string, before map[string][]string) {
	t.Helper()
	after := pdnsSets(t, srv, zone)
	for _, k := range []string{"a-www." + zone + "/TXT", "cname-api." + zone + "/TXT"} {
		if _, ok := after[k]; ok {
			t.Errorf("external-dns record %s of the adopted owner is still there", k)
		}
	}
	for _, k := range []string{"other." + zone + "/A", "a-other." + zone + "/TXT"} {
		if !slices.Equal(after[k], before[k]) {
			t.Errorf("%s of owner ext2 changed: %v -> %v", k, before[k], after[k])
		}
	}
	claims := 0
	for k, v := range after {
		if registry.IsRegistryName(strings.TrimSuffix(k, "/TXT")) {
			if e, err := registry.Parse(v[0]); err == nil && e.OwnerID == "cluster-t" {
				claims++
			}
		}
	}
	if claims != 2 {
		t.Errorf("%d dnsplane registry records of cluster-t, want 2 (www, api): %v", claims, after)
	}
}

// checkDoubleClaim: another external-dns owner's claim on www, a name cluster-t holds, is a
// DoubleClaim with a Warning Event, and nothing is written for www.
func checkDoubleClaim(t *testing.T, c *cluster, p dnsprovider.Provider, zoneID string, srv pdnstest.Server, www *dnsv1.DNSEndpoint) {
	t.Helper()
	const zone = "takeover.test"
	// Another external-dns owner claims www too, written while the manager is down (a running
	// one would see it at its next zone re-read, --zone-resync-interval): a double claim,
	// reported, and nothing is written for www, not even its changed spec.
	c.stopManager()
	if err := p.ApplyChanges(context.Background(), zoneID, extRecord("www."+zone, "A", "ext3", "crd/x/www", "192.0.2.3")[:1]); err != nil {
		t.Fatal(err)
	}
	c.startManager()
	if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(www), www); err != nil {
		t.Fatal(err)
	}
	www.Spec.Endpoints[0].Targets = dnsv1.Targets{"192.0.2.4"}
	if err := c.client.Update(c.ctx(), www); err != nil {
		t.Fatal(err)
	}
	cond := c.waitCondition(www, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonDoubleClaim, 30*time.Second)
	if !strings.Contains(cond.Message, "external-dns owner ext3") {
		t.Errorf("DoubleClaim message does not name ext3: %s", cond.Message)
	}
	if got := served(t, srv.DNSAddr, "www."+zone); !slices.Equal(got, []string{"192.0.2.2"}) {
		t.Errorf("a double claim was written: www = %v", got)
	}
	eventually(t, 10*time.Second, "a DoubleClaim Warning Event", func() error {
		var evs corev1.EventList
		if err := c.client.List(c.ctx(), &evs, client.InNamespace("apps")); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "www" && e.Reason == dnsv1.ReasonDoubleClaim && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("none among %d Events", len(evs.Items))
	})
}

func endpointIn(ns, name string, eps ...dnsv1.Endpoint) *dnsv1.DNSEndpoint {
	return &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: dnsv1.DNSEndpointSpec{PublishingSpec: dnsv1.PublishingSpec{Endpoints: eps}}}
}
