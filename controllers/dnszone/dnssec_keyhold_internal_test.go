package dnszone

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// TestSetKeyHold: a key Secret is held while its key set may sign (no finalizer is added to one
// being deleted), and released once its turn-off is done.
func TestSetKeyHold(t *testing.T) {
	signing, done := dnssec.KeySet{}, dnssec.KeySet{Unsigning: &dnssec.Unsigning{Done: true}}
	sec := &corev1.Secret{}
	if !setKeyHold(sec, signing) || !holdsKeys(sec) || setKeyHold(sec, signing) {
		t.Fatalf("a signing key set: finalizers %v", sec.Finalizers)
	}
	turning := dnssec.KeySet{Unsigning: &dnssec.Unsigning{Since: time.Unix(1, 0)}}
	if setKeyHold(sec, turning) || !holdsKeys(sec) {
		t.Fatalf("a turn-off under way: finalizers %v", sec.Finalizers)
	}
	if !setKeyHold(sec, done) || holdsKeys(sec) {
		t.Fatalf("a turn-off done: finalizers %v", sec.Finalizers)
	}
	deleting := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{Time: time.Unix(1, 0)}}}
	if setKeyHold(deleting, signing) || holdsKeys(deleting) {
		t.Fatalf("a Secret being deleted got a finalizer: %v", deleting.Finalizers)
	}
}

// TestLanded: a link's write has landed only when it is Ready at its current generation.
func TestLanded(t *testing.T) {
	ep := func(gen, observed, readyGen int64, ready bool) *dnsv1.DNSEndpoint {
		e := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		e.Status.ObservedGeneration = observed
		status.Set(&e.Status.Conditions, readyGen, dnsv1.ConditionReady, ready, dnsv1.ReasonPublished, "")
		return e
	}
	for _, c := range []struct {
		name string
		ep   *dnsv1.DNSEndpoint
		want bool
	}{
		{"ready at its generation", ep(3, 3, 3, true), true},
		{"ready at the generation before", ep(3, 3, 2, true), false},
		{"not observed yet", ep(3, 2, 3, true), false},
		{"not ready", ep(3, 3, 3, false), false},
		{"no condition", &dnsv1.DNSEndpoint{}, false},
	} {
		if got := landed(c.ep); got != c.want {
			t.Errorf("%s: landed %v, want %v", c.name, got, c.want)
		}
	}
}
