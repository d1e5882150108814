package controllers_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	dnsprovider "github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// warningFor returns the message of a Warning Event with reason on the object kind/name of
// namespace ns (core or events.k8s.io Events), read without the cache.
func warningFor(t *testing.T, ns, kind, name, reason string) (string, error) {
	t.Helper()
	direct, err := client.New(restCfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		return "", err
	}
	var core corev1.EventList
	if err := direct.List(ctxT(t), &core, client.InNamespace(ns)); err != nil {
		return "", err
	}
	for _, e := range core.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			return e.Message, nil
		}
	}
	var evs eventsv1.EventList
	if err := direct.List(ctxT(t), &evs, client.InNamespace(ns)); err != nil {
		return "", err
	}
	for _, e := range evs.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			return e.Note, nil
		}
	}
	return "", fmt.Errorf("no Warning %s Event on %s %s/%s", reason, kind, ns, name)
}

// TestDNSEndpoint_DeleteBesideUnreadableClaimReleasesItsOwnRecords: a
// DNSEndpoint holds api; a registry record for api that this manager cannot read appears beside
// its own (a newer dnsplane's, v=2, from another cluster). Deleting the DNSEndpoint removes its
// own registry record all the same, so no later claimant is told api is held by an object that
// no longer exists; the A set, which the unreadable record may claim, stays, and is named in a
// Warning Event RecordsKept and a log line.
func TestDNSEndpoint_DeleteBesideUnreadableClaimReleasesItsOwnRecords(t *testing.T) {
	ns := namespace(t, "release-kept")
	const zone = "kept.test"
	z := zoneObj(ns, "z", zone, nil)
	create(t, z)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	ep := endpointObj(ns, "api", dnsv1.Endpoint{DNSName: "api." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.44"}})
	create(t, ep)
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	self := registry.Contributor{OwnerID: ownerID, Resource: registry.Resource("DNSEndpoint", ns, "api")}
	zoneID := local.ZoneID(zone)
	ours := func() (own, foreignLeft, setLeft bool, _ error) {
		sets, err := provider.ListRecordSets(ctxT(t), zoneID)
		if err != nil {
			return false, false, false, err
		}
		for _, s := range sets {
			switch {
			case s.Name == "api."+zone && s.Type == "A":
				setLeft = true
			case registry.IsRegistryName(s.Name) && s.Type == "TXT":
				for _, v := range s.Targets {
					e, err := registry.Parse(v)
					own = own || (err == nil && e.Contributor() == self)
					foreignLeft = foreignLeft || strings.Contains(v, "v=2")
				}
			}
		}
		return own, foreignLeft, setLeft, nil
	}
	if own, _, set, err := ours(); err != nil || !own || !set {
		t.Fatalf("before: own registry record %t, api A %t, %v", own, set, err)
	}

	// The unreadable claim, written at the provider behind the manager's back.
	stranger := registry.Contributor{OwnerID: "newer-cluster", Resource: registry.Resource("DNSEndpoint", "other", "api")}
	claim := registry.RecordSet(zone, registry.Entry{OwnerID: stranger.OwnerID, Resource: stranger.Resource,
		Name: "api." + zone, Type: "A", TTL: 300, Targets: []string{"192.0.2.44"}})
	claim.Targets[0] = strings.Replace(claim.Targets[0], "v=1", "v=2", 1)
	if err := provider.ApplyChanges(ctxT(t), zoneID, []dnsprovider.Change{{Action: dnsprovider.ActionCreate, After: &claim}}); err != nil {
		t.Fatal(err)
	}
	// The zone writer's view predates the claim (the suite never re-reads on age): fail the
	// release's first write once, so that the writer re-reads the zone and the retry sees it.
	faults.failNext(local.FaultBeforeApplyChanges, zone)
	read := logs.start(t)
	deleteGone(t, ep)
	// The object carries no finalizer: its release follows its deletion, and the Event comes
	// once the release is applied.
	msg := waitRecordsKept(t, ns, "api")

	own, foreignLeft, setLeft, err := ours()
	if err != nil {
		t.Fatal(err)
	}
	if own {
		t.Errorf("the deleted DNSEndpoint's own registry record for api is still in the zone")
	}
	if !foreignLeft || !setLeft {
		t.Errorf("the unreadable claim (%t) and the api A set it may claim (%t) must stay", foreignLeft, setLeft)
	}
	t.Logf("Warning %s: %s", dnsv1.ReasonRecordsKept, msg)
	if !strings.Contains(msg, "api."+zone+"/A") || !strings.Contains(msg, "v=2") && !strings.Contains(msg, "version") {
		t.Errorf("Event message %q must name api.%s/A and why it was kept", msg, zone)
	}
	eventually(t, 10*time.Second, "a log line naming the kept set", func() error {
		for _, line := range strings.Split(read(), "\n") {
			if strings.Contains(line, dnsv1.ReasonRecordsKept) && strings.Contains(line, "api."+zone+"/A") {
				return nil
			}
		}
		return errors.New("none yet")
	})
}

// TestDNSEndpoint_DeletedBeforeItsFinalizerItsWritesAreReleased (asynchronous
// submission): a reconcile submits an object's writes and returns; the finalizer is added by the
// reconcile that follows the writers' answers. An object deleted while its write is still in
// flight therefore goes at once, with no finalizer; once the write lands, the manager finds the
// object gone and removes what it wrote, registry record included, instead of leaving it behind.
func TestDNSEndpoint_DeletedBeforeItsFinalizerItsWritesAreReleased(t *testing.T) {
	ns := namespace(t, "release-early")
	const zone = "early-delete.test"
	z := zoneObj(ns, "z", zone, nil)
	create(t, z)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)

	held, release := faults.holdAt(local.FaultAfterApplyChanges, local.ZoneID(zone))
	t.Cleanup(release)
	ep := endpointObj(ns, "early", dnsv1.Endpoint{DNSName: "early." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.61"}})
	create(t, ep)
	select {
	case <-held: // the write is in the store; its answer is held
	case <-time.After(30 * time.Second):
		t.Fatal("the DNSEndpoint's write never reached the provider")
	}
	if got := answersA(t, "early."+zone); got != "192.0.2.61" {
		t.Fatalf("while the answer is held the store serves %q, want the write", got)
	}
	var cur dnsv1.DNSEndpoint
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(ep), &cur); err != nil {
		t.Fatal(err)
	}
	if len(cur.Finalizers) != 0 {
		t.Fatalf("finalizers %v before the write was answered, want none", cur.Finalizers)
	}
	if err := k8s.Delete(ctxT(t), ep); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ep)
	release()

	self := registry.Contributor{OwnerID: ownerID, Resource: registry.Resource("DNSEndpoint", ns, "early")}
	eventually(t, 30*time.Second, "the deleted object's record and registry record removed", func() error {
		if got := answersA(t, "early."+zone); got != "" {
			return fmt.Errorf("early.%s still answers %s", zone, got)
		}
		sets, err := provider.ListRecordSets(ctxT(t), local.ZoneID(zone))
		if err != nil {
			return err
		}
		for _, s := range sets {
			if !registry.IsRegistryName(s.Name) || s.Type != "TXT" {
				continue
			}
			for _, v := range s.Targets {
				if e, err := registry.Parse(v); err == nil && e.Contributor() == self {
					return fmt.Errorf("its registry record %s is still in the zone", s.Name)
				}
			}
		}
		return nil
	})
}

// deleteGone deletes obj and waits until it is gone.
func deleteGone(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Delete(ctxT(t), obj); err != nil {
		t.Fatal(err)
	}
	waitGone(t, obj)
}

// waitRecordsKept waits up to 10s for the Warning RecordsKept Event of DNSEndpoint ns/name and
// returns its message.
func waitRecordsKept(t *testing.T, ns, name string) string {
	t.Helper()
	var msg string
	eventually(t, 10*time.Second, "a Warning RecordsKept Event", func() error {
		var err error
		msg, err = warningFor(t, ns, "DNSEndpoint", name, dnsv1.ReasonRecordsKept)
		return err
	})
	return msg
}
