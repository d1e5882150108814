package gslb

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// TestReconcileNormal_NoGeoTagHasItsOwnReason: a manager without --geo-tag
// is a configuration error of the manager, not a provider failure: Ready says NoGeoTag and names
// the flag.
func TestReconcileNormal_NoGeoTagHasItsOwnReason(t *testing.T) {
	g := &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app", Generation: 1}}
	if err := (&Reconciler{}).reconcileNormal(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(g.Status.Conditions, dnsv1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != dnsv1.ReasonNoGeoTag {
		t.Fatalf("Ready = %+v, want False NoGeoTag", c)
	}
	if want := "--geo-tag"; !strings.Contains(c.Message, want) {
		t.Fatalf("message %q does not name %s", c.Message, want)
	}
}
