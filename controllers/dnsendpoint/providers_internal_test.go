package dnsendpoint

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/testclient"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// TestReconcile_MissingProviderSecretIsZoneNotFound (phases tested with fakes
// of the small interfaces, no envtest): a DNSEndpoint whose available DNSZone names a provider
// Secret that cannot be resolved asks for that Secret (the zone's, in the zone's namespace),
// writes nothing, and is Ready=False, ZoneNotFound, polled again in a minute.
func TestReconcile_MissingProviderSecretIsZoneNotFound(t *testing.T) {
	zone := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "example", Generation: 1},
		Spec: dnsv1.DNSZoneSpec{Zone: "example.test", ProviderRef: dnsv1.SecretReference{Name: "creds"}}}
	zone.Status.ZoneID = "example.test"
	zone.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: metav1.ConditionTrue,
		Reason: dnsv1.ReasonZoneAvailable, LastTransitionTime: metav1.Now()}}
	ep := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web", Generation: 1}}
	ep.Spec.Endpoints = []dnsv1.Endpoint{{DNSName: "www.example.test", RecordType: "A", Targets: []string{"192.0.2.1"}}}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(zone, ep).
		WithStatusSubresource(&dnsv1.DNSEndpoint{}, &dnsv1.DNSZone{}).Build()
	providers := &testclient.Providers{Err: fmt.Errorf("secret a/creds does not exist: %w", provider.ErrProviderNotFound)}
	r := &Reconciler{Client: c, Providers: providers, Writers: testclient.NoWriters{T: t}, OwnerID: "cluster-a"}
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ep)})
	if err != nil {
		t.Fatalf("Reconcile: %v, want the missing Secret in status", err)
	}
	if res.RequeueAfter == 0 {
		t.Errorf("Reconcile = %+v, want a poll for the Secret", res)
	}
	if got := fmt.Sprint(providers.Asked()); got != "[a/creds]" {
		t.Errorf("Secrets asked %s, want [a/creds]", got)
	}
	var got dnsv1.DNSEndpoint
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(ep), &got); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, dnsv1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != dnsv1.ReasonZoneNotFound {
		t.Errorf("Ready = %+v, want False, ZoneNotFound", c)
	}
}
