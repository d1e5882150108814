package dnsrecord_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnsrecord"
	"github.com/dnsplane/dnsplane/pkg/heartbeat"
)

// heartbeats is a fake of the heartbeat reporter as the controller uses it
// (dnsrecord.Heartbeats): it records the calls.
type heartbeats struct{ calls []string }

func (h *heartbeats) Set(t heartbeat.Target) error {
	h.calls = append(h.calls, "Set "+t.Key)
	return nil
}

func (h *heartbeats) Remove(key string) { h.calls = append(h.calls, "Remove "+key) }

// TestReconcile_GoneOrDisabledRecordStopsItsHeartbeat (phases tested with
// fakes of the small interfaces, no envtest): a DNSRecord that is gone, or whose strategy is
// Disabled, is removed from the heartbeat reporter by its key, and the Disabled one is
// Ready=False, Disabled, with no provider asked (the Reconciler has none).
func TestReconcile_GoneOrDisabledRecordStopsItsHeartbeat(t *testing.T) {
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	off := &dnsv1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "off", Generation: 1, Finalizers: []string{dnsv1.FinalizerRecords}}}
	off.Spec.Strategy = dnsv1.StrategyDisabled
	off.Spec.RootHost = "app.example.test"
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(off).WithStatusSubresource(&dnsv1.DNSRecord{}).Build()
	hb := &heartbeats{}
	r := &dnsrecord.Reconciler{Client: c, Heartbeats: hb, OwnerID: "cluster-a"}
	for _, name := range []string{"gone", "off"} {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "apps", Name: name}}); err != nil {
			t.Fatalf("Reconcile(%s): %v", name, err)
		}
	}
	if got := fmt.Sprint(hb.calls); got != "[Remove apps/gone Remove apps/off]" {
		t.Errorf("heartbeat reporter calls %s, want [Remove apps/gone Remove apps/off]", got)
	}
	var got dnsv1.DNSRecord
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(off), &got); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, dnsv1.ConditionReady); c == nil || c.Reason != dnsv1.ReasonDisabled {
		t.Errorf("Ready = %+v, want Disabled", c)
	}
}
