package controllers_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
)

// TestDNSSEC_Route53TurnOffChildLast: a Secure Route 53 zone (the fake) linked to a parent
// DNSZone of the embedded server, turned off with enabled: false while the parent's write is
// held. Route 53 keeps signing (no DisableHostedZoneDNSSEC) while any parent name server answers
// a DS for the zone, and for the DS and DNSKEY TTLs (4 s here) after it answers none; then it
// stops signing and the zone is Unsigned (docs/dnssec.md, "Turning it off").
func TestDNSSEC_Route53TurnOffChildLast(t *testing.T) {
	e := startR53KSK(t, "r53off")
	_, release := e.gate.holdAt(local.FaultBeforeApplyChanges, local.ZoneID(e.pzone))
	defer release()
	eventually(t, 20*time.Second, "set dnssec.enabled=false", func() error {
		if err := e.c.client.Get(e.c.ctx(), client.ObjectKeyFromObject(e.child), e.child); err != nil {
			return err
		}
		e.child.Spec.DNSSEC.Enabled = false
		return e.c.client.Update(e.c.ctx(), e.child)
	})
	watchManagedOff(t, e, time.Now().Add(3*time.Second), 0)
	e.c.waitCondition(e.child, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigning, 30*time.Second)
	release()
	wait := 4*time.Second - 1500*time.Millisecond // the TTLs, less the controller's truncation to the second
	watchManagedOff(t, e, time.Now().Add(time.Minute), wait)
	e.c.waitCondition(e.child, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigned, 30*time.Second)
}

// watchManagedOff samples the parent's DS answer and Route 53's signing until end (or, with
// wait > 0, until Route 53 stops signing) and fails when Route 53 stops signing while the
// parent answers a DS, or less than wait after the parent first answered none.
func watchManagedOff(t *testing.T, e *r53KSK, end time.Time, wait time.Duration) {
	t.Helper()
	var goneAt time.Time
	for time.Now().Before(end) {
		ds, err := parentDS(e.c.dnsAddr, e.czone)
		serve, _ := e.fake.Signing(e.child.Status.ZoneID)
		now := time.Now()
		if err == nil && len(ds) == 0 && goneAt.IsZero() {
			goneAt = now
		}
		switch {
		case serve == route53fake.ServeSigning:
		case err != nil || len(ds) > 0:
			t.Fatalf("Route 53 serves the zone %s while the parent answers DS %v (%v)", serve, ds, err)
		case now.Sub(goneAt) < wait:
			t.Fatalf("Route 53 serves the zone %s %s after the parent answered no DS, before the TTLs (%s)",
				serve, now.Sub(goneAt), wait)
		default:
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	if wait > 0 {
		t.Fatalf("Route 53 still signs the zone at the end of the watch")
	}
}
