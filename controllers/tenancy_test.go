package controllers_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	dnsprovider "github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
)

// tenancyBackend is one provider of the tenancy story: two namespaces whose Secrets reach the
// same account, the zone tenant A creates there, and how to read what the account serves.
type tenancyBackend struct {
	nsA, nsB, zone string
	zoneID         func(zone string) string
	dnsAddr        string               // where the account's zones are answered
	provider       dnsprovider.Provider // the account, read directly
}

// waitEvent waits for an Event of the object kind/ns/name with reason whose message holds every
// one of says, and returns its message.
func waitEvent(t *testing.T, kind, ns, name, reason string, says ...string) string {
	t.Helper()
	var msg string
	eventually(t, 30*time.Second, fmt.Sprintf("Event %s on %s %s/%s", reason, kind, ns, name), func() error {
		var events corev1.EventList
		if err := k8s.List(ctxT(t), &events, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range events.Items {
			if e.InvolvedObject.Kind != kind || e.InvolvedObject.Name != name || e.Reason != reason {
				continue
			}
			seen = append(seen, e.Message)
			if e.Type == corev1.EventTypeWarning && containsAll(e.Message, says) {
				msg = e.Message
				return nil
			}
		}
		return fmt.Errorf("no Warning Event saying %q; seen %q", says, seen)
	})
	return msg
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// waitServed waits until the account answers name with exactly want (A targets).
func (b tenancyBackend) waitServed(t *testing.T, name string, want ...string) {
	t.Helper()
	slices.Sort(want)
	eventually(t, 30*time.Second, name+" answered "+strings.Join(want, ","), func() error {
		if got := served(t, b.dnsAddr, name); !slices.Equal(got, want) {
			return fmt.Errorf("answered %v", got)
		}
		return nil
	})
}

// mustSay fails unless c's message holds every one of says.
func mustSay(t *testing.T, c *metav1.Condition, says ...string) {
	t.Helper()
	if !containsAll(c.Message, says) {
		t.Fatalf("%s %s message %q does not say %q", c.Type, c.Reason, c.Message, says)
	}
}

// tenancyStory is the tenancy rules (docs/api.md, "Tenancy") on one provider account reached by two namespaces'
// Secrets: tenant B cannot adopt A's hosted zone until A shares it, cannot serve a zone inside
// A's until A allows it, and cannot delegate names A holds even when allowed to delegate.
func tenancyStory(t *testing.T, b tenancyBackend) {
	zone, nsA, nsB := b.zone, b.nsA, b.nsB
	name := func(label string) string { return label + "." + zone }
	a := zoneObj(nsA, "mt", zone, nil)
	names := endpointObj(nsA, "names",
		dnsv1.Endpoint{DNSName: name("app"), RecordType: "A", Targets: dnsv1.Targets{"198.51.100.4"}},
		dnsv1.Endpoint{DNSName: name("www.sub"), RecordType: "A", Targets: dnsv1.Targets{"192.0.2.102"}},
		dnsv1.Endpoint{DNSName: name("www.deleg"), RecordType: "A", Targets: dnsv1.Targets{"192.0.2.120"}},
		dnsv1.Endpoint{DNSName: name("deleg2"), RecordType: "A", Targets: dnsv1.Targets{"192.0.2.121"}})
	create(t, a, names)
	waitCondition(t, a, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, names, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)

	// 1. B adopts A's hosted zone with its own Secret: ZoneConflict naming A, nothing written.
	adopter := zoneObj(nsB, "mt", zone, func(z *dnsv1.DNSZone) { z.Spec.ZoneID = b.zoneID(zone) })
	evil := endpointObj(nsB, "evil",
		dnsv1.Endpoint{DNSName: name("evil"), RecordType: "A", Targets: dnsv1.Targets{"203.0.113.66"}},
		dnsv1.Endpoint{DNSName: name("app"), RecordType: "A", Targets: dnsv1.Targets{"192.0.2.110"}})
	create(t, adopter, evil)
	c := waitCondition(t, adopter, dnsv1.ConditionZoneAvailable, metav1.ConditionFalse, dnsv1.ReasonZoneConflict)
	holds := fmt.Sprintf("DNSZone %s/mt holds it and does not list namespace %s in sharing.allowedNamespaces", nsA, nsB)
	mustSay(t, c, holds)
	waitCondition(t, adopter, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonZoneConflict)
	waitEvent(t, "DNSZone", nsB, "mt", dnsv1.ReasonZoneConflict, "ZoneAvailable=False", holds)
	if adopter.Status.ZoneID != "" {
		t.Fatalf("a refused adopter recorded zone ID %q", adopter.Status.ZoneID)
	}
	waitCondition(t, evil, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonAwaitingZone)
	b.waitServed(t, name("app"), "198.51.100.4")
	b.waitServed(t, name("evil"))

	// A shares it: B's DNSZone is Ready and B publishes into it; deleting B's objects leaves A's
	// zone and records.
	update(t, a, func() { a.Spec.Sharing = &dnsv1.Sharing{AllowedNamespaces: []string{nsB}} })
	waitCondition(t, adopter, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, evil, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict) // app is A's
	b.waitServed(t, name("evil"), "203.0.113.66")
	b.waitServed(t, name("app"), "198.51.100.4")
	for _, o := range []client.Object{evil, adopter} {
		if err := k8s.Delete(ctxT(t), o); err != nil {
			t.Fatal(err)
		}
		waitGone(t, o)
	}
	b.waitServed(t, name("evil"))
	b.waitServed(t, name("app"), "198.51.100.4")
	update(t, a, func() { a.Spec.Sharing = nil })

	// 2. B's zone inside A's: ParentNotAllowed naming A, not created at the provider, A's name
	// still answered with A's address; once A allows the namespace it is created and served.
	sub := zoneObj(nsB, "sub", name("sub"), nil)
	subWWW := endpointObj(nsB, "sub-www", dnsv1.Endpoint{DNSName: name("www.sub"), RecordType: "A", Targets: dnsv1.Targets{"198.51.100.5"}})
	create(t, sub, subWWW)
	inside := fmt.Sprintf("zone %s is inside zone %s of DNSZone %s/mt, which does not list namespace %s in delegation.allowedNamespaces", name("sub"), zone, nsA, nsB)
	c = waitCondition(t, sub, dnsv1.ConditionZoneAvailable, metav1.ConditionFalse, dnsv1.ReasonParentNotAllowed)
	mustSay(t, c, inside)
	waitCondition(t, sub, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonParentNotAllowed)
	waitEvent(t, "DNSZone", nsB, "sub", dnsv1.ReasonParentNotAllowed, "ZoneAvailable=False", inside)
	if _, err := b.provider.GetZone(ctxT(t), b.zoneID(name("sub"))); !errors.Is(err, dnsprovider.ErrZoneNotFound) {
		t.Fatalf("the refused inner zone exists at the provider (GetZone: %v)", err)
	}
	b.waitServed(t, name("www.sub"), "192.0.2.102")

	update(t, a, func() { a.Spec.Delegation = &dnsv1.Delegation{AllowedNamespaces: []string{nsB}} })
	waitCondition(t, sub, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, subWWW, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	b.waitServed(t, name("www.sub"), "198.51.100.5")

	// 3. B, allowed to delegate, delegates names A holds: OwnershipConflict naming them, no NS
	// written, A's names answered; a delegation over free names is published.
	ref := &dnsv1.ZoneReference{Name: "mt", Namespace: nsA}
	deleg := endpointObj(nsB, "deleg",
		dnsv1.Endpoint{DNSName: name("deleg"), RecordType: "NS", Targets: dnsv1.Targets{"ns.evil.example"}},
		dnsv1.Endpoint{DNSName: name("deleg2"), RecordType: "NS", Targets: dnsv1.Targets{"ns.evil.example"}})
	deleg.Spec.ZoneRef = ref
	free := endpointObj(nsB, "free", dnsv1.Endpoint{DNSName: name("free"), RecordType: "NS", Targets: dnsv1.Targets{"ns.b.example"}})
	free.Spec.ZoneRef = ref
	create(t, deleg, free)
	waitCondition(t, free, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	hides := []string{
		fmt.Sprintf("a delegation at %s would hide names held outside namespace %s: %s/A (owner %s resource DNSEndpoint/%s/names)", name("deleg"), nsB, name("www.deleg"), ownerID, nsA),
		fmt.Sprintf("a delegation at %s would hide names held outside namespace %s: %s/A (owner %s resource DNSEndpoint/%s/names)", name("deleg2"), nsB, name("deleg2"), ownerID, nsA),
	}
	c = waitCondition(t, deleg, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict)
	mustSay(t, c, hides...)
	waitEvent(t, "DNSEndpoint", nsB, "deleg", dnsv1.ReasonOwnershipConflict, append([]string{"Ready=False"}, hides...)...)
	sets, err := b.provider.ListRecordSets(ctxT(t), b.zoneID(zone))
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range sets {
		if rs.Type == "NS" && (rs.Name == name("deleg") || rs.Name == name("deleg2")) {
			t.Fatalf("a refused delegation was written: %v", rs)
		}
	}
	b.waitServed(t, name("www.deleg"), "192.0.2.120")
	b.waitServed(t, name("deleg2"), "192.0.2.121")
}

// TestTenancy_EmbeddedServer is the tenancy rules on the embedded server, where every
// dnsplane.io/local Secret reaches the same zones.
func TestTenancy_EmbeddedServer(t *testing.T) {
	tenancyStory(t, tenancyBackend{
		nsA: namespace(t, "tenant-a"), nsB: namespace(t, "tenant-b"), zone: "mt.test",
		zoneID: local.ZoneID, dnsAddr: dnsAddr, provider: provider,
	})
}

// TestTenancy_PowerDNS is the same story on one PowerDNS that both namespaces' Secrets reach,
// each with its own copy of the API key.
func TestTenancy_PowerDNS(t *testing.T) {
	nsA, nsB := "tenant-pa", "tenant-pb"
	srv := pdnsNamespace(t, nsA)
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsB}}, pdnsSecret(nsB, srv))
	p, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key})
	if err != nil {
		t.Fatal(err)
	}
	tenancyStory(t, tenancyBackend{nsA: nsA, nsB: nsB, zone: "mtp.test", zoneID: pdns.ZoneID, dnsAddr: srv.DNSAddr, provider: p})
}
