package controllers_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
)

// registeredFor returns the keys of the record sets whose registry records in zone on srv
// name owner and resource ("DNSEndpoint/apps/gone"), sorted.
func registeredFor(t *testing.T, srv pdnstest.Server, zone, owner, resource string) []string {
	t.Helper()
	var out []string
	for k, e := range registryOf(t, srv, zone, owner) {
		if e.Resource == resource {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestDNSEndpoint_DeletedWhileNoManagerRanIsSwept: DNSEndpoints carry no finalizer. One deleted
// while the manager runs is released from its delete event (its last status.zones); one deleted
// while no manager runs has no event to see, and the manager's sweep after its first pass finds
// it by the registry records that name it, confirms it is gone from the API server, and
// releases its records. A DNSEndpoint that still exists, and another owner's records in the same
// zone, are left as they are.
func TestDNSEndpoint_DeletedWhileNoManagerRanIsSwept(t *testing.T) {
	srv := pdnstest.Start(t)
	_, zoneID := sharedZone(t, srv, "sweep.test")
	a := startCluster(t, "cluster-a", time.Minute, 10*time.Minute)
	b := startCluster(t, "cluster-b", time.Minute, 10*time.Minute)
	a.adopt(srv, "sweep.test", zoneID)
	b.adopt(srv, "sweep.test", zoneID)

	ep := func(name, ip string) *dnsv1.DNSEndpoint {
		return endpointObj("apps", name, dnsv1.Endpoint{DNSName: name + ".sweep.test", RecordType: "A", Targets: dnsv1.Targets{ip}})
	}
	live, early, late := ep("live", "192.0.2.1"), ep("early", "192.0.2.2"), ep("late", "192.0.2.3")
	other := ep("late", "192.0.2.9") // cluster-b's object of the same namespace and name
	other.Spec.Endpoints[0].DNSName = "other.sweep.test"
	a.create(live, early, late)
	b.create(other)
	for _, o := range []*dnsv1.DNSEndpoint{live, early, late} {
		a.waitCondition(o, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
	}
	b.waitCondition(other, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
	var cur dnsv1.DNSEndpoint
	if err := a.client.Get(a.ctx(), client.ObjectKeyFromObject(live), &cur); err != nil {
		t.Fatal(err)
	}
	if len(cur.Finalizers) != 0 {
		t.Fatalf("a published DNSEndpoint has finalizers %v, want none", cur.Finalizers)
	}

	servedAs := func(name string, want ...string) func() error {
		return func() error {
			if got := served(t, srv.DNSAddr, name); strings.Join(got, ",") != strings.Join(want, ",") {
				return fmt.Errorf("%s served %v, want %v", name, got, want)
			}
			return nil
		}
	}
	noRegistry := func(resource string) func() error {
		return func() error {
			if got := registeredFor(t, srv, "sweep.test", "cluster-a", resource); len(got) != 0 {
				return fmt.Errorf("registry records of %s are left for %v", resource, got)
			}
			return nil
		}
	}

	// Deleted while the manager runs: gone at once (no finalizer), released from the delete event.
	if err := a.client.Delete(a.ctx(), early); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "early's A set removed", servedAs("early.sweep.test"))
	eventually(t, 10*time.Second, "early's registry record removed", noRegistry("DNSEndpoint/apps/early"))

	// Deleted while no manager runs: found by the sweep at the next start.
	a.stopManager()
	direct, err := client.New(a.cfg, client.Options{Scheme: a.scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := direct.Delete(a.ctx(), late); err != nil {
		t.Fatal(err)
	}
	if err := servedAs("late.sweep.test", "192.0.2.3")(); err != nil {
		t.Fatalf("before the restart: %v", err)
	}
	a.startManager()
	eventually(t, 30*time.Second, "late's A set removed by the sweep", servedAs("late.sweep.test"))
	eventually(t, 10*time.Second, "late's registry record removed", noRegistry("DNSEndpoint/apps/late"))

	// What still exists stays: cluster-a's live object, and cluster-b's object that has the
	// name of the one cluster-a deleted.
	if err := servedAs("live.sweep.test", "192.0.2.1")(); err != nil {
		t.Error(err)
	}
	if err := servedAs("other.sweep.test", "192.0.2.9")(); err != nil {
		t.Error(err)
	}
	if got := registeredFor(t, srv, "sweep.test", "cluster-b", "DNSEndpoint/apps/late"); len(got) != 1 {
		t.Errorf("cluster-b's registry records of its own apps/late: %v, want one", got)
	}
	a.waitCondition(live, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
}
