package dnsendpoint

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPublished_CountsEndpoints(t *testing.T) {
	for n, want := range map[int]string{0: "0 endpoints published", 1: "1 endpoint published", 3: "3 endpoints published"} {
		if got := published(n); got != want {
			t.Fatalf("published(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestWaiters_ConflictedObjectsOfTheReleasedZones reads through controller-runtime's fake
// client: a release in a zone concerns the DNSEndpoints that hold records there and whose Ready
// says another owner holds some of their names (OwnershipConflict, DoubleClaim), but the
// released object itself; other zones, other reasons and objects never judged are left out.
func TestWaiters_ConflictedObjectsOfTheReleasedZones(t *testing.T) {
	ep := func(ns, name, reason string, zones ...string) *dnsv1.DNSEndpoint {
		e := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		e.Status.Zones = zones
		if reason != "" {
			e.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason}}
		}
		return e
	}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).
		WithIndex(&dnsv1.DNSEndpoint{}, indexHeld, func(o client.Object) []string { return o.(*dnsv1.DNSEndpoint).Status.Zones }).
		WithObjects(
			ep("a", "conflict", dnsv1.ReasonOwnershipConflict, "a/z"), ep("b", "double", dnsv1.ReasonDoubleClaim, "a/z", "b/y"),
			ep("b", "both", dnsv1.ReasonOwnershipConflict, "a/z", "b/y"), ep("a", "released", dnsv1.ReasonOwnershipConflict, "a/z"),
			ep("a", "elsewhere", dnsv1.ReasonOwnershipConflict, "c/x"), ep("a", "other", dnsv1.ReasonProviderError, "a/z"),
			ep("a", "fresh", "", "a/z")).Build()
	got := (&Reconciler{Client: c}).waiters(context.Background(), types.NamespacedName{Namespace: "a", Name: "released"}, []string{"a/z", "b/y"})
	var names []string
	for _, k := range got {
		names = append(names, k.String())
	}
	slices.Sort(names)
	if want := []string{"a/conflict", "b/both", "b/double"}; !slices.Equal(names, want) {
		t.Fatalf("waiters = %v, want %v", names, want)
	}
}

// TestReconcile_GoneOrUnfinalizedDeletionIsANoOp: a DNSEndpoint that is gone, or being deleted
// without this controller's finalizer, needs no provider (the Reconciler has none here).
func TestReconcile_GoneOrUnfinalizedDeletionIsANoOp(t *testing.T) {
	now := metav1.Now()
	dying := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "dying", DeletionTimestamp: &now, Finalizers: []string{"example.test/other"}}}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(dying).Build()
	r := &Reconciler{Client: c}
	for _, name := range []string{"gone", "dying"} {
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "a", Name: name}})
		if err != nil || res != (ctrl.Result{}) {
			t.Fatalf("Reconcile(%s) = %+v, %v; want a no-op", name, res, err)
		}
	}
}

// TestEndpointsUnder_FindsNamesAtOrBelowTheZone: a zone event concerns the namespace's
// DNSEndpoints with a name at or below the zone (whole labels, any case, trailing dot or not),
// but those already found by zoneRef or held records; other namespaces and look-alike names are
// left out.
func TestEndpointsUnder_FindsNamesAtOrBelowTheZone(t *testing.T) {
	ep := func(ns, name string, names ...string) *dnsv1.DNSEndpoint {
		e := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		for _, n := range names {
			e.Spec.Endpoints = append(e.Spec.Endpoints, dnsv1.Endpoint{DNSName: n, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}})
		}
		return e
	}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(
		ep("a", "apex", "example.test"),
		ep("a", "below", "other.test", "www.Example.Test."),
		ep("a", "deep", "x.y.example.test"),
		ep("a", "lookalike", "badexample.test"),
		ep("a", "parent", "test"),
		ep("a", "found", "api.example.test"),
		ep("b", "elsewhere", "www.example.test"),
	).Build()
	r := &Reconciler{Client: c}
	skip := []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: "a", Name: "found"}}}
	var got []string
	for _, req := range r.endpointsUnder(context.Background(), "a", "Example.Test.", skip) {
		got = append(got, req.Name)
	}
	slices.Sort(got)
	if want := []string{"apex", "below", "deep"}; !slices.Equal(got, want) {
		t.Fatalf("endpointsUnder = %v, want %v", got, want)
	}
	if got := r.endpointsUnder(context.Background(), "a", "", nil); got != nil {
		t.Fatalf("the root zone matched %v; want none (no DNSZone is the root)", got)
	}
}
