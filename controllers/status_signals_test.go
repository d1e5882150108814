package controllers_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/internal/testing/metrictest"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
)

// eventsOf lists the Events of the object named name in ns, by reason.
func eventsOf(t *testing.T, ns, name string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := k8s.List(ctxT(t), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// TestDNSEndpoint_ZoneNotYetAvailableIsAwaitingZoneNotAWarning: an endpoint
// whose DNSZone exists but does not answer SOA yet waits with AwaitingZone and a Normal Event,
// never a Warning (ZoneNotFound or InvalidEndpoint), which would send the user to create a zone
// that exists.
func TestDNSEndpoint_ZoneNotYetAvailableIsAwaitingZoneNotAWarning(t *testing.T) {
	ns := namespace(t, "awaitzone")
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dead"}, Type: factory.TypeLocal,
		StringData: map[string]string{factory.KeyDNSAddress: ports.Dead(t)}})
	z := zoneObj(ns, "slow", "slow.test", func(z *dnsv1.DNSZone) { z.Spec.ProviderRef.Name = "dead" })
	create(t, z)
	// Through the cached client: once it shows AwaitingSOA, the DNSEndpoint controller's cache
	// holds the zone too.
	waitCondition(t, z, dnsv1.ConditionZoneAvailable, metav1.ConditionFalse, dnsv1.ReasonAwaitingSOA)
	ep := endpointObj(ns, "api", dnsv1.Endpoint{DNSName: "api.slow.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.70"}})
	create(t, ep)
	c := waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonAwaitingZone)
	if want := "DNSZone " + ns + "/slow (slow.test)"; !strings.Contains(c.Message, want) {
		t.Fatalf("message %q does not name %s", c.Message, want)
	}
	eventually(t, 20*time.Second, "a Normal AwaitingZone Event", func() error {
		for _, e := range eventsOf(t, ns, "api") {
			if e.Type != corev1.EventTypeNormal || e.Reason != dnsv1.ReasonAwaitingZone {
				return fmt.Errorf("event %s %s: %s", e.Type, e.Reason, e.Message)
			}
			return nil
		}
		return errors.New("no Event yet")
	})
}

// TestStatusCommit_StaleCopyEmitsNothing ("ZoneAvailable (x2 over 2s)"): a
// reconcile that starts from a cached copy older than the previous reconcile's status write sees
// the same transition again. Its status write must be refused (optimistic lock) and it must emit
// no Event; the reconcile of the current copy emits exactly one. A Gslb is used because this
// suite's manager has no --geo-tag: its Gslb controller writes the finalizer and Ready=False
// NoGeoTag once, at creation, and then only every --gslb-interval (30 s). The test starts from
// that first write (starting before it raced it: the test's first commit met a conflict).
func TestStatusCommit_StaleCopyEmitsNothing(t *testing.T) {
	ns := namespace(t, "stalecommit")
	g := &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: dnsv1.GslbSpec{
		ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.stale.test"},
		ZoneRef: dnsv1.ZoneReference{Name: "z"}, Strategy: dnsv1.GslbStrategy{Type: "roundRobin"}}}
	create(t, g)
	ctx := ctxT(t)
	rec := record.NewFakeRecorder(10)
	commit := func(obj *dnsv1.Gslb) error {
		base := obj.DeepCopy()
		status.Set(&obj.Status.Conditions, obj.Generation, dnsv1.ConditionReady, true, dnsv1.ReasonPublished, "1 hosts published")
		return status.Commit(ctx, k8s, rec, status.Update{Obj: obj, Base: base, New: &obj.Status, Old: &base.Status,
			After: obj.Status.Conditions, Before: base.Status.Conditions, Types: []string{dnsv1.ConditionReady}})
	}
	var first, stale dnsv1.Gslb
	eventually(t, 10*time.Second, "the Gslb controller's first status in the cache", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(g), &first); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(first.Status.Conditions, dnsv1.ConditionReady); c == nil || c.Reason != dnsv1.ReasonNoGeoTag {
			return fmt.Errorf("Ready = %+v, want the controller's NoGeoTag", c)
		}
		return nil
	})
	first.DeepCopyInto(&stale) // read before the first write: what a lagging cache returns
	if err := commit(&first); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Events); n != 1 {
		t.Fatalf("the first transition emitted %d Events, want 1", n)
	}
	<-rec.Events
	err := commit(&stale)
	if !errors.Is(err, status.ErrStale) {
		t.Fatalf("commit of a stale copy: %v, want ErrStale", err)
	}
	if n := len(rec.Events); n != 0 {
		t.Fatalf("the stale reconcile emitted %d Events (%q), want none", n, <-rec.Events)
	}
	var now dnsv1.Gslb
	eventually(t, 10*time.Second, "the cache sees the write", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(g), &now); err != nil {
			return err
		}
		if meta.FindStatusCondition(now.Status.Conditions, dnsv1.ConditionReady) == nil {
			return errors.New("no Ready yet")
		}
		return nil
	})
	if err := commit(&now); err != nil || len(rec.Events) != 0 {
		t.Fatalf("a reconcile of the current copy: err %v, %d Events; want none (nothing changed)", err, len(rec.Events))
	}
}

// TestDNSEndpoint_PlanShowsWhatRemainsAndWhatAnUpdateReplaces: after a
// FullSync apply, status.plan holds nothing (everything was written); under DryRun an Update
// shows the targets and TTL it replaces.
func TestDNSEndpoint_PlanShowsWhatRemainsAndWhatAnUpdateReplaces(t *testing.T) {
	ns := namespace(t, "planrest")
	z := zoneObj(ns, "z", "planrest.test", nil)
	create(t, z)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	ep := endpointObj(ns, "api", dnsv1.Endpoint{DNSName: "api.planrest.test", RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{"192.0.2.90"}})
	create(t, ep)
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	if p := ep.Status.Plan; p == nil || len(p.Changes) != 0 || p.Counts != (dnsv1.PlanCounts{}) {
		t.Fatalf("status.plan after the apply = %+v, want no changes left", p)
	}

	update(t, ep, func() {
		ep.Spec.Strategy = dnsv1.StrategyDryRun
		ep.Spec.Endpoints[0].Targets = dnsv1.Targets{"192.0.2.91", "192.0.2.92"}
		ep.Spec.Endpoints[0].RecordTTL = 120
	})
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonAwaitingApproval)
	p := ep.Status.Plan
	if p == nil || p.Counts.Update != 1 || len(p.Changes) != 1 {
		t.Fatalf("DryRun plan = %+v, want one Update", p)
	}
	c := p.Changes[0]
	if c.Action != "Update" || !slices.Equal(c.Targets, []string{"192.0.2.91", "192.0.2.92"}) || c.TTL != 120 ||
		!slices.Equal(c.OldTargets, []string{"192.0.2.90"}) || c.OldTTL != 60 {
		t.Fatalf("plan change = %+v, want Update 192.0.2.90/60 -> 192.0.2.91,192.0.2.92/120", c)
	}
	update(t, ep, func() { ep.Spec.ApprovedPlan = p.ID })
	eventually(t, 30*time.Second, "the approved plan applied, nothing left", func() error {
		if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(ep), ep); err != nil {
			return err
		}
		if ep.Status.AppliedPlan != p.ID || ep.Status.Plan == nil || len(ep.Status.Plan.Changes) != 0 {
			return fmt.Errorf("appliedPlan %q, plan %+v", ep.Status.AppliedPlan, ep.Status.Plan)
		}
		return nil
	})
}

// reconcileTotal reads controller_runtime_reconcile_total{controller,result} from
// controller-runtime's registry, as /metrics serves it.
func reconcileTotal(t *testing.T, controller, result string) float64 {
	t.Helper()
	return metrictest.Value(t, ctrlmetrics.Registry, "controller_runtime_reconcile_total", map[string]string{"controller": controller, "result": result})
}

// TestReconcileTotal_ResyncedSuccessCountsAsSuccess: a DNSZone reconcile that
// succeeds ends by scheduling its next resync; controller-runtime counts a RequeueAfter result
// as requeue_after, never success. Through the requeue wrapper a successful reconcile is counted
// under result="success", and the zone is still resynced (the wrapper requeues it).
func TestReconcileTotal_ResyncedSuccessCountsAsSuccess(t *testing.T) {
	before := reconcileTotal(t, "dnszone", "success")
	ns := namespace(t, "metricsok")
	z := zoneObj(ns, "z", "metricsok.test", nil)
	create(t, z)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	eventually(t, 20*time.Second, "a dnszone reconcile counted as success", func() error {
		if got := reconcileTotal(t, "dnszone", "success"); got <= before {
			return fmt.Errorf("controller_runtime_reconcile_total{controller=dnszone,result=success} = %v (before: %v; requeue_after: %v)",
				got, before, reconcileTotal(t, "dnszone", "requeue_after"))
		}
		return nil
	})
}
