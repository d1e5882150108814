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

// TestConflictedPeers_EnqueuesOnlyOwnershipConflicts reads through controller-runtime's fake
// client: a released name concerns only the DNSEndpoints whose Ready says OwnershipConflict.
func TestConflictedPeers_EnqueuesOnlyOwnershipConflicts(t *testing.T) {
	ep := func(ns, name, reason string) *dnsv1.DNSEndpoint {
		e := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if reason != "" {
			e.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason}}
		}
		return e
	}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(
		ep("a", "conflict", dnsv1.ReasonOwnershipConflict), ep("b", "conflict", dnsv1.ReasonOwnershipConflict),
		ep("a", "other", dnsv1.ReasonProviderError), ep("a", "fresh", "")).Build()
	got := (&Reconciler{Client: c}).conflictedPeers(context.Background(), nil)
	want := map[types.NamespacedName]bool{{Namespace: "a", Name: "conflict"}: true, {Namespace: "b", Name: "conflict"}: true}
	if len(got) != len(want) {
		t.Fatalf("conflictedPeers = %v, want %v", got, want)
	}
	for _, r := range got {
		if !want[r.NamespacedName] {
			t.Fatalf("conflictedPeers = %v, want %v", got, want)
		}
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
