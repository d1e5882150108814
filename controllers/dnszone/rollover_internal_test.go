package dnszone

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// TestRolloverWake: a rollover's wait is looked at again within a second and ten minutes,
// never sooner (no hot loop) and never later; a phase waiting on an observation at the SOA
// poll interval; nothing due: no requeue.
func TestRolloverWake(t *testing.T) {
	r := &Reconciler{SOAPollInterval: 5 * time.Second}
	now := time.Unix(1_000_000, 0)
	roll := dnssec.KeySet{Rollover: &dnssec.Rollover{Phase: dnssec.PhasePublish}}
	for _, tc := range []struct {
		name string
		step dnssec.Step
		want time.Duration
	}{
		{"past", dnssec.Step{Wake: now.Add(-time.Hour)}, time.Second},
		{"soon", dnssec.Step{Wake: now.Add(time.Minute)}, time.Minute},
		{"far", dnssec.Step{Wake: now.Add(365 * 24 * time.Hour)}, maxRolloverWake},
		{"observing", dnssec.Step{Keys: roll}, 5 * time.Second},
		{"idle", dnssec.Step{}, 0},
	} {
		if got := r.rolloverWake(tc.step, now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestManualTrigger: the annotation's roles are triggers; another value triggers nothing but is
// consumed all the same.
func TestManualTrigger(t *testing.T) {
	for v, want := range map[string]dnssec.Role{"KSK": dnssec.RoleKSK, "ZSK": dnssec.RoleZSK, "CSK": dnssec.RoleCSK, "zsk": "", "": ""} {
		z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationRollover: v}}}
		if got, asked := manualTrigger(z); got != want || !asked {
			t.Errorf("%q: %q %v, want %q true", v, got, asked, want)
		}
	}
	if got, asked := manualTrigger(&dnsv1.DNSZone{}); got != "" || asked {
		t.Errorf("no annotation: %q %v", got, asked)
	}
}
