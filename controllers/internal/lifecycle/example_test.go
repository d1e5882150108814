package lifecycle_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/lifecycle"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
)

// A controller states its phases; the lifecycle reads the object, holds it with the finalizer
// while Normal publishes, commits the status Normal set, and releases it after Delete.
func ExampleLifecycle_Reconcile() {
	s := runtime.NewScheme()
	_ = dnsv1.AddToScheme(s)
	z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "example", Generation: 1}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(z).WithStatusSubresource(z).Build()
	l := &lifecycle.Lifecycle[*dnsv1.DNSZone]{
		Client: c, Recorder: record.NewFakeRecorder(10),
		New:       func() *dnsv1.DNSZone { return &dnsv1.DNSZone{} },
		Finalizer: "dnsplane.io/example", FinalizerWrite: lifecycle.ByPatch,
		Status: func(z *dnsv1.DNSZone) (any, *int64) { return &z.Status, &z.Status.ObservedGeneration },
		Events: []string{dnsv1.ConditionZoneAvailable},
		Normal: func(_ context.Context, z *dnsv1.DNSZone, _ func(context.Context) error) (lifecycle.Result, error) {
			fmt.Println("normal: publish", z.Name)
			status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionZoneAvailable, true, dnsv1.ReasonZoneAvailable, "served")
			return lifecycle.Result{}, nil
		},
		Delete: func(_ context.Context, z *dnsv1.DNSZone) (ctrl.Result, error) {
			fmt.Println("delete: release", z.Name)
			return ctrl.Result{}, nil
		},
	}
	ctx, req := context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(z)}

	_, err := l.Reconcile(ctx, req)
	var got dnsv1.DNSZone
	_ = c.Get(ctx, req.NamespacedName, &got)
	cond := meta.FindStatusCondition(got.Status.Conditions, dnsv1.ConditionZoneAvailable)
	fmt.Println(err, got.Finalizers, got.Status.ObservedGeneration, cond.Reason)

	_ = c.Delete(ctx, &got)
	_, err = l.Reconcile(ctx, req)
	fmt.Println(err, c.Get(ctx, req.NamespacedName, &got) != nil)
	// Output:
	// normal: publish example
	// <nil> [dnsplane.io/example] 1 ZoneAvailable
	// delete: release example
	// <nil> true
}
