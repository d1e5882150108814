package publish

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// TestAssignmentUnjudged: an object defers (Options.DeferUnjudged) only while a zone that should
// receive some of its endpoints has no ZoneAvailable condition at all; a zone judged False, a
// zone that receives nothing and a zone being deleted do not defer it.
func TestAssignmentUnjudged(t *testing.T) {
	now := metav1.Now()
	cond := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: s, Reason: "X"}}
	}
	k := client.ObjectKey{Namespace: "ns", Name: "z"}
	sets := []provider.RecordSet{{Name: "a.z.test", Type: "A", Targets: []string{"192.0.2.1"}}}
	for _, tc := range []struct {
		name    string
		zone    dnsv1.DNSZone
		desired []provider.RecordSet
		want    bool
	}{
		{"never reconciled", dnsv1.DNSZone{}, sets, true},
		{"available", dnsv1.DNSZone{Status: dnsv1.DNSZoneStatus{Conditions: cond(metav1.ConditionTrue)}}, sets, false},
		{"judged unavailable", dnsv1.DNSZone{Status: dnsv1.DNSZoneStatus{Conditions: cond(metav1.ConditionFalse)}}, sets, false},
		{"receives nothing (held only)", dnsv1.DNSZone{}, nil, false},
		{"being deleted", dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now, Finalizers: []string{"x"}}}, sets, false},
	} {
		z := tc.zone
		a := &Assignment{Zones: map[client.ObjectKey]*dnsv1.DNSZone{k: &z}, ByZone: map[client.ObjectKey][]provider.RecordSet{k: tc.desired}}
		if got := a.unjudged(); got != tc.want {
			t.Errorf("%s: unjudged = %v, want %v", tc.name, got, tc.want)
		}
	}
}
