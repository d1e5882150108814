package controllers_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	dnsprovider "github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// registryOf returns the registry entries of srv's zone that owner wrote, keyed "name/type".
func registryOf(t *testing.T, srv pdnstest.Server, zone, owner string) map[string]registry.Entry {
	t.Helper()
	out := map[string]registry.Entry{}
	for k, v := range pdnsSets(t, srv, zone) {
		if !registry.IsRegistryName(strings.TrimSuffix(k, "/TXT")) || len(v) != 1 {
			continue
		}
		if e, err := registry.Parse(v[0]); err == nil && e.OwnerID == owner {
			out[e.Key().String()] = e
		}
	}
	return out
}

// TestPowerDNS_BlockedTypeChangeKeepsTheOldRecord: t5 publishes tr5 A and
// t5txt a TXT at the same name. Patching t5 to a CNAME used to delete the A and its registry
// record before the CNAME was refused (OwnershipConflict), leaving the name without an address
// (external-dns #6683's shape). The change is now one unit: the CNAME is refused, the A and its
// registry record stay and are still served, and Ready (with its Warning Event) says why.
func TestPowerDNS_BlockedTypeChangeKeepsTheOldRecord(t *testing.T) {
	ns := "owners-t5"
	const zone = "ext7.test"
	srv := pdnsNamespace(t, ns)
	z := zoneObj(ns, "z", zone, nil)
	t5 := endpointObj(ns, "t5", dnsv1.Endpoint{DNSName: "tr5." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.55"}})
	t5txt := endpointObj(ns, "t5txt", dnsv1.Endpoint{DNSName: "tr5." + zone, RecordType: "TXT", Targets: dnsv1.Targets{"owned by t5txt"}})
	create(t, z, t5, t5txt)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, t5, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	waitCondition(t, t5txt, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)

	update(t, t5, func() {
		t5.Spec.Endpoints = []dnsv1.Endpoint{{DNSName: "tr5." + zone, RecordType: "CNAME", Targets: dnsv1.Targets{"lb.example.net"}}}
	})
	c := waitCondition(t, t5, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict)
	t.Logf("t5 Ready: %s", c.Message)
	for _, want := range []string{"tr5." + zone + "/CNAME: CNAME cannot coexist", "tr5." + zone + "/A is kept as it is"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Ready message %q does not contain %q", c.Message, want)
		}
	}
	sets := pdnsSets(t, srv, zone)
	if got := sets["tr5."+zone+"/A"]; !slices.Equal(got, []string{"192.0.2.55"}) {
		t.Errorf("tr5 A = %v, want the old address kept", got)
	}
	if _, ok := sets["tr5."+zone+"/CNAME"]; ok {
		t.Errorf("a CNAME was written beside the TXT")
	}
	own := registryOf(t, srv, zone, ownerID)
	if e, ok := own["tr5."+zone+"/A"]; !ok || e.Resource != registry.Resource("DNSEndpoint", ns, "t5") {
		t.Errorf("t5's registry record for tr5 A is gone: %v", own)
	}
	if got := served(t, srv.DNSAddr, "tr5."+zone); !slices.Equal(got, []string{"192.0.2.55"}) {
		t.Errorf("PowerDNS answers tr5 A with %v, want the old address", got)
	}
	eventually(t, 10*time.Second, "a Warning OwnershipConflict Event on t5", func() error {
		msg, err := warningFor(t, ns, "DNSEndpoint", "t5", dnsv1.ReasonOwnershipConflict)
		if err == nil && !strings.Contains(msg, "is kept as it is") {
			return fmt.Errorf("Event %q does not say the A is kept", msg)
		}
		return err
	})
}

// TestPowerDNS_SetIdentifierIsNotCapableAlone: PowerDNS has
// no weighted routing. An endpoint with a set identifier used to fail the object's whole write
// with ProviderError, retried forever; it is now refused alone before any write, with the
// terminal reason NotCapable and a Warning Event, and the object's other endpoint is published.
func TestPowerDNS_SetIdentifierIsNotCapableAlone(t *testing.T) {
	ns := "owners-weighted"
	const zone = "weighted-pdns.test"
	srv := pdnsNamespace(t, ns)
	z := zoneObj(ns, "z", zone, nil)
	ep := endpointObj(ns, "mixed",
		dnsv1.Endpoint{DNSName: "www." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.61"}},
		dnsv1.Endpoint{DNSName: "w." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.62"}, SetIdentifier: "eu",
			ProviderSpecific: []dnsv1.ProviderSpecificProperty{{Name: "aws/weight", Value: "10"}}})
	create(t, z, ep)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	c := waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonNotCapable)
	if !strings.Contains(c.Message, "w."+zone+"/A/eu") || !strings.Contains(c.Message, "no weighted routing") {
		t.Errorf("Ready message %q does not name the endpoint and the missing capability", c.Message)
	}
	eventually(t, 30*time.Second, "www served by PowerDNS", func() error {
		if got := served(t, srv.DNSAddr, "www."+zone); !slices.Equal(got, []string{"192.0.2.61"}) {
			return fmt.Errorf("www = %v", got)
		}
		return nil
	})
	eventually(t, 10*time.Second, "a Warning NotCapable Event", func() error {
		_, err := warningFor(t, ns, "DNSEndpoint", "mixed", dnsv1.ReasonNotCapable)
		return err
	})
	// Terminal: nothing is retried, so the condition stays as it is (no ProviderError between).
	time.Sleep(2 * time.Second)
	c2, err := condition(t, ep, dnsv1.ConditionReady)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Reason != dnsv1.ReasonNotCapable || !c2.LastTransitionTime.Equal(&c.LastTransitionTime) {
		t.Errorf("Ready changed after NotCapable: %s %s at %v (was %v)", c2.Reason, c2.Message, c2.LastTransitionTime, c.LastTransitionTime)
	}
}

// TestDNSEndpoint_DeleteKeepsEverySetAnotherOwnerClaims: a DNSEndpoint holds
// 13 names. 11 of them an external-dns owner claims too (a double claim, refused on write, used
// to be deleted on delete) and one has a malformed registry record beside it. Deleting the
// object keeps those 12 sets, removes its own registry record for every name, deletes the free
// set, and names every set left in one Warning RecordsKept Event (it used to name only 10).
func TestDNSEndpoint_DeleteKeepsEverySetAnotherOwnerClaims(t *testing.T) {
	ns := namespace(t, "owners-kept")
	const zone = "kept-all.test"
	z := zoneObj(ns, "z", zone, nil)
	create(t, z)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	var eps []dnsv1.Endpoint
	var claimed []string
	for i := range 11 {
		n := fmt.Sprintf("ext%02d.%s", i, zone)
		claimed = append(claimed, n)
		eps = append(eps, dnsv1.Endpoint{DNSName: n, RecordType: "A", Targets: dnsv1.Targets{fmt.Sprintf("192.0.2.%d", 100+i)}})
	}
	eps = append(eps,
		dnsv1.Endpoint{DNSName: "bad." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.90"}},
		dnsv1.Endpoint{DNSName: "free." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.91"}})
	ep := endpointObj(ns, "many", eps...)
	create(t, ep)
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)

	// external-dns owner ext2 claims the eleven names, and a malformed registry record sits
	// beside bad, all written at the provider behind the manager's back.
	zoneID := local.ZoneID(zone)
	var changes []dnsprovider.Change
	for _, n := range claimed {
		txt := dnsprovider.RecordSet{Name: registry.ExternalNaming{}.TXTName(n, "A"), Type: "TXT", TTL: 300,
			Targets: []string{`"heritage=external-dns,external-dns/owner=ext2,external-dns/resource=service/default/web"`}}
		changes = append(changes, dnsprovider.Change{Action: dnsprovider.ActionCreate, After: &txt})
	}
	stranger := registry.Contributor{OwnerID: "other", Resource: registry.Resource("DNSEndpoint", "x", "bad")}
	junk := dnsprovider.RecordSet{Name: registry.Name(zone, stranger, dnsprovider.RecordSetKey{Name: "bad." + zone, Type: "A"}), Type: "TXT", TTL: 300, Targets: []string{"junk"}}
	changes = append(changes, dnsprovider.Change{Action: dnsprovider.ActionCreate, After: &junk})
	if err := provider.ApplyChanges(ctxT(t), zoneID, changes); err != nil {
		t.Fatal(err)
	}
	// The zone writer's view predates these records: fail the release's first write once, so
	// that the writer re-reads the zone and the retry sees them.
	faults.failNext(local.FaultBeforeApplyChanges, zone)
	deleteGone(t, ep)
	// The object carries no finalizer: its release follows its deletion, and its last Event
	// says that the release is done.
	msg := waitRecordsKept(t, ns, "many")

	sets, err := provider.ListRecordSets(ctxT(t), zoneID)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	self := registry.Contributor{OwnerID: ownerID, Resource: registry.Resource("DNSEndpoint", ns, "many")}
	for _, s := range sets {
		have[s.Key().String()] = true
		for _, v := range s.Targets {
			if e, err := registry.Parse(v); err == nil && e.Contributor() == self {
				t.Errorf("the deleted object's registry record %s for %s is still in the zone", s.Name, e.Key())
			}
		}
	}
	for _, n := range append(slices.Clone(claimed), "bad."+zone) {
		if !have[n+"/A"] {
			t.Errorf("%s A, which another owner claims, was deleted", n)
		}
	}
	if have["free."+zone+"/A"] {
		t.Errorf("free A, which nobody else claims, was left")
	}
	t.Logf("Warning %s: %s", dnsv1.ReasonRecordsKept, msg)
	for _, n := range append(slices.Clone(claimed), "bad."+zone) {
		if !strings.Contains(msg, n+"/A") {
			t.Errorf("the Event does not name %s/A", n)
		}
	}
	if !strings.Contains(msg, "claimed twice") || !strings.Contains(msg, "malformed") {
		t.Errorf("the Event does not say why: %s", msg)
	}
}
