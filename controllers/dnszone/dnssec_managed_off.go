package dnszone

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// AnnotationManagedUnsigning is the marker of a provider-signed zone's turn-off: the
// generation of the DNSZone and the time (RFC 3339) from which every parent name server was
// found answering no DS, "<generation>/<time>". It records only when the wait started; a marker
// lost, unreadable or of another generation starts the wait again, never skips it.
const AnnotationManagedUnsigning = "dnsplane.io/managed-unsigning"

// managedOff turns the signing of a provider-signed zone off child last (docs/dnssec.md,
// "Route 53, Cloud DNS and Azure"): while the provider signs, status.dnssec holds no DS, so the
// parent link drops it; the provider is asked to stop signing (DisableSigning) only once the
// link's write without the DS has landed, every parent name server answers no DS (parentDropped)
// and the DS and DNSKEY TTLs have passed since (the marker). The provider's state and the
// parent's answers are read at each look; a zone Unsigned at its generation costs no request.
// It returns how soon to look again.
func (r *Reconciler) managedOff(ctx context.Context, z *dnsv1.DNSZone, s provider.ManagedSigner) (time.Duration, error) {
	c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure)
	_, marked := z.Annotations[AnnotationManagedUnsigning]
	done := c != nil && c.Reason == dnsv1.ReasonUnsigned && c.ObservedGeneration == z.Generation && !marked
	z.Status.DNSSEC = nil // no DS: the parent link drops it
	if done || z.Status.ZoneID == "" {
		r.setSecure(z, dnsv1.ReasonUnsigned, "spec.dnssec.enabled is false: signing is off at the provider and the zone is served unsigned")
		return 0, nil
	}
	st, err := s.SigningState(ctx, z.Status.ZoneID)
	if err != nil {
		return 0, fmt.Errorf("signing state of %s: %w", z.Spec.Zone, err)
	}
	if st.Phase == provider.SigningOff {
		return 0, r.managedUnsigned(ctx, z)
	}
	if c == nil || c.Reason != dnsv1.ReasonUnsigning {
		r.Recorder.Event(z, corev1.EventTypeNormal, dnsv1.ReasonUnsigning, fmt.Sprintf(
			"DNSSEC is turned off: the DS set of %s leaves the parent link first; the provider signs the zone until every parent "+
				"name server answers no DS and the DS and DNSKEY TTLs (%s) have passed", z.Spec.Zone, r.unsignWait()))
	}
	gone, _, why := r.parentDropped(ctx, z, dnssec.Unsigning{})
	if !gone {
		return r.managedWaitParent(ctx, z, why)
	}
	return r.managedWaitTTL(ctx, z, s, why)
}

// managedWaitParent reports the wait for the parent to drop the DS (why: what it waits for), and
// removes a marker: the wait for the TTLs starts again once no parent name server answers a DS.
func (r *Reconciler) managedWaitParent(ctx context.Context, z *dnsv1.DNSZone, why error) (time.Duration, error) {
	if _, ok := z.Annotations[AnnotationManagedUnsigning]; ok {
		if err := r.patchAnnotation(ctx, z, AnnotationManagedUnsigning, ""); err != nil {
			return 0, err
		}
	}
	r.setSecure(z, dnsv1.ReasonUnsigning, fmt.Sprintf("DNSSEC is turned off; the provider signs the zone until every parent "+
		"name server answers no DS, then the DS and DNSKEY TTLs (%s); the DS set has left the parent link: waiting for %v",
		r.unsignWait(), why))
	return r.managedPoll(), nil
}

// managedWaitTTL waits for the DS and DNSKEY TTLs after no parent name server answered a DS (the
// marker, written when first seen), then turns signing off at the provider. note: why the
// parent counts as dropped without asking it (a parent outside dnsplane), or nil.
func (r *Reconciler) managedWaitTTL(ctx context.Context, z *dnsv1.DNSZone, s provider.ManagedSigner, note error) (time.Duration, error) {
	now, ttl := r.now().Truncate(time.Second), r.unsignWait()
	since, ok := parseManagedMarker(z.Annotations[AnnotationManagedUnsigning], z.Generation)
	if !ok {
		since = now
		if err := r.patchAnnotation(ctx, z, AnnotationManagedUnsigning, managedMarker(z.Generation, now)); err != nil {
			return 0, err
		}
		r.Recorder.Event(z, corev1.EventTypeNormal, dnsv1.ReasonUnsigning, fmt.Sprintf(
			"every parent name server answers no DS for %s (or the parent is not a DNSZone dnsplane links); the provider signs "+
				"the zone until %s (the DS and DNSKEY TTLs, %s)", z.Spec.Zone, since.Add(ttl).UTC().Format(time.RFC3339), ttl))
	}
	if until := since.Add(ttl); now.Before(until) {
		msg := fmt.Sprintf("DNSSEC is turned off; the provider signs the zone until %s: the DS and DNSKEY TTLs (%s) after no "+
			"parent name server answered a DS (%s)", until.UTC().Format(time.RFC3339), ttl, since.UTC().Format(time.RFC3339))
		if note != nil {
			msg += fmt.Sprintf(" (%v)", note)
		}
		r.setSecure(z, dnsv1.ReasonUnsigning, msg)
		return min(max(until.Sub(now), time.Second), maxRolloverWake), nil
	}
	if err := s.DisableSigning(ctx, z.Status.ZoneID); err != nil {
		return 0, fmt.Errorf("turn signing of %s off: %w", z.Spec.Zone, err)
	}
	r.Recorder.Event(z, corev1.EventTypeNormal, dnsv1.ReasonUnsigning, fmt.Sprintf(
		"the DS and DNSKEY TTLs (%s) have passed since no parent name server answered a DS for %s (%s): signing is off at the provider",
		ttl, z.Spec.Zone, since.UTC().Format(time.RFC3339)))
	return 0, r.managedUnsigned(ctx, z)
}

// managedUnsigned reports a provider-signed zone whose provider no longer signs it: Unsigned,
// the marker removed.
func (r *Reconciler) managedUnsigned(ctx context.Context, z *dnsv1.DNSZone) error {
	if _, ok := z.Annotations[AnnotationManagedUnsigning]; ok {
		if err := r.patchAnnotation(ctx, z, AnnotationManagedUnsigning, ""); err != nil {
			return err
		}
	}
	r.setSecure(z, dnsv1.ReasonUnsigned, "spec.dnssec.enabled is false: signing is off at the provider and the zone is served unsigned")
	return nil
}

// managedMarker is AnnotationManagedUnsigning's value for generation gen and time t. Pure.
func managedMarker(gen int64, t time.Time) string {
	return strconv.FormatInt(gen, 10) + "/" + t.UTC().Format(time.RFC3339)
}

// parseManagedMarker reads AnnotationManagedUnsigning's value; ok only for a well-formed marker
// of generation gen. Pure.
func parseManagedMarker(v string, gen int64) (time.Time, bool) {
	g, ts, found := strings.Cut(v, "/")
	if !found || g != strconv.FormatInt(gen, 10) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}
