package dnszone

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// TestNeedsSync: when a reconcile syncs the hosted zone with the provider. An SOA poll of a
// zone synced for its generation (AwaitingSOA) asks DNS only.
func TestNeedsSync(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{ResyncInterval: 2 * time.Hour, Clock: testclock.NewFakePassiveClock(now)}
	zone := func(gen, syncGen int64, zoneID, adopted string, synced time.Duration, ok bool, reason string) *dnsv1.DNSZone {
		z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Spec: dnsv1.DNSZoneSpec{ZoneID: adopted}}
		z.Status.ZoneID, z.Status.LastSyncGeneration = zoneID, syncGen
		if synced >= 0 {
			ts := metav1.NewTime(now.Add(-synced))
			z.Status.LastSyncTimestamp = &ts
		}
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		if reason != "" {
			z.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: s, Reason: reason}}
		}
		return z
	}
	for _, tc := range []struct {
		name string
		z    *dnsv1.DNSZone
		want bool
	}{
		{"available, synced a minute ago", zone(1, 1, "z", "", time.Minute, true, dnsv1.ReasonZoneAvailable), false},
		{"available, resync interval passed", zone(1, 1, "z", "", 2*time.Hour, true, dnsv1.ReasonZoneAvailable), true},
		{"generation changed", zone(2, 1, "z", "", time.Minute, true, dnsv1.ReasonZoneAvailable), true},
		{"no zone ID yet", zone(1, 1, "", "", time.Minute, false, dnsv1.ReasonAwaitingSOA), true},
		{"never synced", zone(1, 1, "z", "", -1, false, dnsv1.ReasonAwaitingSOA), true},
		{"no condition yet", zone(1, 1, "z", "", time.Minute, false, ""), true},
		{"awaiting SOA: DNS only", zone(1, 1, "z", "", time.Minute, false, dnsv1.ReasonAwaitingSOA), false},
		{"awaiting SOA, resync interval passed", zone(1, 1, "z", "", 3*time.Hour, false, dnsv1.ReasonAwaitingSOA), true},
		{"last sync failed", zone(1, 1, "z", "", time.Minute, false, dnsv1.ReasonProviderError), true},
		{"credentials rejected", zone(1, 1, "z", "", time.Minute, false, dnsv1.ReasonInvalidCredentials), true},
		{"re-created after deletion at the provider", zone(1, 1, "z", "", time.Minute, false, dnsv1.ReasonZoneDeletedAtProvider), false},
		{"adopted zone deleted at the provider", zone(1, 1, "z", "z", time.Minute, false, dnsv1.ReasonZoneDeletedAtProvider), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.needsSync(tc.z); got != tc.want {
				t.Fatalf("needsSync = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestSummarise_ReadyNamesTheNameServersOrSaysThereAreNone: Ready's message lists the zone's
// name servers, and says so plainly when its provider lists none (a webhook zone without an
// apex NS set) instead of ending on "served by ".
func TestSummarise_ReadyNamesTheNameServersOrSaysThereAreNone(t *testing.T) {
	for _, c := range []struct {
		ns   []string
		want string
	}{
		{[]string{"ns1.example.test.", "ns2.example.test."}, "zone a.example.test is served by ns1.example.test., ns2.example.test."},
		{nil, "zone a.example.test is available at its provider, which lists no name servers for it (no NS set at its apex)"},
	} {
		z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: dnsv1.DNSZoneSpec{Zone: "a.example.test"}}
		z.Status.NameServers = c.ns
		z.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: metav1.ConditionTrue, Reason: dnsv1.ReasonReady}}
		(&Reconciler{}).summarise(z)
		got := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionReady)
		if got == nil || got.Status != metav1.ConditionTrue || got.Message != c.want {
			t.Errorf("Ready = %+v, want True with %q", got, c.want)
		}
	}
}
