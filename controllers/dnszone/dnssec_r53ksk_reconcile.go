package dnszone

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// rolloverProviderKSK drives the KSK rollover of a zone whose provider holds its keys and lets
// them be rolled (provider.KSKRoller: Route 53; docs/dnssec.md, "Route 53, Cloud DNS and
// Azure"). handled is false, and nothing is done, when no rollover is under way or asked for,
// or the provider does not sign the zone: managedDNSSEC reports the zone then. Otherwise each
// look makes at most one provider call (nextKSK's), persists the marker after it succeeded and
// before the step's DS set is reported (status.dnssec.ds, which the parent link carries), and
// reports the phase. A call that fails keeps the phase, the marker and status.dnssec.
func (r *Reconciler) rolloverProviderKSK(ctx context.Context, z *dnsv1.DNSZone, resolved provider.Resolved) (wake time.Duration, handled bool, err error) {
	roller, signer := kskRoller(z, resolved)
	if roller == nil {
		return 0, false, nil
	}
	id := z.Status.ZoneID
	f, err := r.kskFacts(ctx, z, roller)
	if err != nil {
		return 0, true, err
	}
	if len(f.KSKs) < 2 && !f.Trigger { // no rollover: one provider read
		return 0, false, r.kskIdle(ctx, z, f.Marker)
	}
	if st, err := signer.SigningState(ctx, id); err != nil || st.Phase != provider.SigningOn {
		return 0, false, nil // managedDNSSEC reports it
	}
	step, ok := nextKSK(f)
	if !ok {
		return 0, false, r.kskIdle(ctx, z, f.Marker)
	}
	if err := kskCall(ctx, roller, id, step); err != nil {
		return r.kskRefused(z, step, err)
	}
	if err := r.persistKSKMarker(ctx, z, f.Marker, step); err != nil {
		return 0, true, err
	}
	if role, asked := manualTrigger(z); asked && role == dnssec.RoleKSK && step.Op == opCreate {
		if err := r.consumeTrigger(ctx, z); err != nil {
			return 0, true, err
		}
	}
	r.reportKSKStep(z, f, step)
	if step.Marker != f.Marker { // a call made or a phase moved on: the next step at once
		return time.Second, true, nil
	}
	return kskWake(step, f.Now, r.managedPoll()), true, nil
}

// kskRoller is the zone's provider as a KSKRoller and a ManagedSigner, when it is both and the
// zone is signed there (spec.dnssec enabled, a zone ID).
func kskRoller(z *dnsv1.DNSZone, resolved provider.Resolved) (provider.KSKRoller, provider.ManagedSigner) {
	if d := z.Spec.DNSSEC; d == nil || !d.Enabled || z.Status.ZoneID == "" {
		return nil, nil
	}
	if resolved.KSKRoller == nil || resolved.Signer == nil {
		return nil, nil
	}
	return resolved.KSKRoller, resolved.Signer
}

// kskFacts reads what a step is decided from: the provider's keys, each parent name server's
// DS answer, the marker and the trigger (kskTrigger).
func (r *Reconciler) kskFacts(ctx context.Context, z *dnsv1.DNSZone, roller provider.KSKRoller) (kskFacts, error) {
	ksks, err := roller.KSKs(ctx, z.Status.ZoneID)
	if err != nil {
		return kskFacts{}, fmt.Errorf("key-signing keys of %s: %w", z.Spec.Zone, err)
	}
	parents, linked := r.parentServers(ctx, z)
	f := kskFacts{Now: r.now().Truncate(time.Second), KSKs: ksks, Linked: linked,
		Marker:    parseKSKMarker(z.Annotations[AnnotationKSKRollover]),
		DNSKEYTTL: cmp.Or(r.RolloverTTLs.DNSKEY, providerDNSKEYTTL), DSTTL: cmp.Or(r.RolloverTTLs.ParentDS, dsTTL*time.Second)}
	if f.Trigger, err = r.kskTrigger(ctx, z, roller, f); err != nil || (len(ksks) < 2 && !f.Trigger) {
		return f, err // no rollover: the parent is not asked
	}
	for _, s := range parents {
		f.Parent = append(f.Parent, parentDSAnswer(ctx, s, z.Spec.Zone))
	}
	return f, nil
}

// parentDSAnswer is the DS set server answers for zone (dsKeys form), nil when it answers none
// or fails.
func parentDSAnswer(ctx context.Context, server, zone string) []string {
	answer, err := ask(ctx, server, zone, dns.TypeDS)
	if err != nil {
		return nil
	}
	return dsKeys(answer)
}

// kskTrigger says whether a rollover is asked for: the rollover annotation KSK, or the active
// key's lifetime (spec.dnssec.keys, KSK) over since the provider made it. An annotation that
// starts nothing (another role, a provider without a second key store, a zone not linked to a
// parent DNSZone, a rollover under way) is removed with a Warning Event saying why.
func (r *Reconciler) kskTrigger(ctx context.Context, z *dnsv1.DNSZone, roller provider.KSKRoller, f kskFacts) (bool, error) {
	role, asked := manualTrigger(z)
	why := ""
	switch supported := roller.KSKRolloverSupported(); {
	case asked && role != dnssec.RoleKSK:
		why = fmt.Sprintf("the provider rolls its zone-signing key itself; dnsplane rolls the KSK only (rollover %q)", z.Annotations[AnnotationRollover])
	case supported != nil:
		why = supported.Error()
	case !f.Linked:
		why = "a KSK rollover at the provider needs the zone linked to a parent DNSZone, whose name servers show the DS set"
	case len(f.KSKs) != 1:
		why = "a KSK rollover is under way, or the provider lists no single active key-signing key"
	case asked:
		return true, nil
	default:
		life := time.Duration(z.Spec.DNSSEC.Keys.Lifetime(string(dnssec.RoleKSK))) * time.Second
		k := f.KSKs[0]
		return life > 0 && !k.Created.IsZero() && !f.Now.Before(k.Created.Add(life)), nil
	}
	if !asked {
		return false, nil
	}
	r.Recorder.Event(z, corev1.EventTypeWarning, dnsv1.ReasonRolloverInProgress, "no KSK rollover started: "+why)
	return false, r.consumeTrigger(ctx, z)
}

// kskCall makes the step's provider call.
func kskCall(ctx context.Context, roller provider.KSKRoller, id string, step kskStep) error {
	switch step.Op {
	case opCreate:
		return roller.CreateKSK(ctx, id, step.Name)
	case opActivate:
		return roller.ActivateKSK(ctx, id, step.Name)
	case opDeactivate:
		return roller.DeactivateKSK(ctx, id, step.Name)
	case opDelete:
		return roller.DeleteKSK(ctx, id, step.Name)
	}
	return nil
}

// kskRefused reports a provider call that failed: a refusal is ProviderActionNeeded with the
// provider's answer, looked at again at the SOA poll interval; other errors are returned. The
// phase, the marker and status.dnssec stay.
func (r *Reconciler) kskRefused(z *dnsv1.DNSZone, step kskStep, err error) (time.Duration, bool, error) {
	if errors.Is(err, provider.ErrSigningRefused) || errors.Is(err, provider.ErrNotCapable) {
		r.setSecure(z, dnsv1.ReasonProviderActionNeeded, fmt.Sprintf("KSK rollover stays in phase %s: %s %s: %v", step.Phase, step.Op, step.Name, err))
		return r.managedPoll(), true, nil
	}
	return 0, true, fmt.Errorf("KSK rollover of %s, phase %s: %s %s: %w", z.Spec.Zone, step.Phase, step.Op, step.Name, err)
}

// persistKSKMarker writes the step's marker into the DNSZone's annotation when it changed, and
// emits a Normal Event, reason RolloverInProgress, when the phase changed.
func (r *Reconciler) persistKSKMarker(ctx context.Context, z *dnsv1.DNSZone, was kskMarker, step kskStep) error {
	v := step.Marker.String()
	if z.Annotations[AnnotationKSKRollover] == v {
		return nil
	}
	if err := r.patchAnnotation(ctx, z, AnnotationKSKRollover, v); err != nil {
		return err
	}
	if was.New != step.Marker.New || was.Phase != step.Marker.Phase {
		r.Recorder.Event(z, corev1.EventTypeNormal, dnsv1.ReasonRolloverInProgress,
			fmt.Sprintf("KSK rollover to %s: phase %s, waiting for %s", step.Marker.New, step.Marker.Phase, step.Wait))
	}
	return nil
}

// kskIdle removes the marker of a rollover that is over, with a Normal Event.
func (r *Reconciler) kskIdle(ctx context.Context, z *dnsv1.DNSZone, was kskMarker) error {
	if _, ok := z.Annotations[AnnotationKSKRollover]; !ok {
		return nil
	}
	if err := r.patchAnnotation(ctx, z, AnnotationKSKRollover, ""); err != nil {
		return err
	}
	if was.New != "" {
		r.Recorder.Event(z, corev1.EventTypeNormal, dnsv1.ReasonRolloverInProgress, fmt.Sprintf("KSK rollover to %s done", was.New))
	}
	return nil
}

// patchAnnotation sets (v != "") or removes an annotation of the DNSZone, applied to a copy as
// consumeTrigger does, and mirrors it in z.
func (r *Reconciler) patchAnnotation(ctx context.Context, z *dnsv1.DNSZone, key, v string) error {
	cp := z.DeepCopy()
	base := cp.DeepCopy()
	if v == "" {
		delete(cp.Annotations, key)
	} else {
		if cp.Annotations == nil {
			cp.Annotations = map[string]string{}
		}
		cp.Annotations[key] = v
	}
	if err := r.Client.Patch(ctx, cp, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("write annotation %s: %w", key, err)
	}
	z.Annotations = cp.Annotations
	return nil
}

// reportKSKStep sets status.dnssec (the provider's key-signing keys, the step's DS set, the
// phase) and the Secure condition: RolloverInProgress while every parent name server answers a
// DS of an active key, else DSPending.
func (r *Reconciler) reportKSKStep(z *dnsv1.DNSZone, f kskFacts, step kskStep) {
	st := &dnsv1.DNSSECStatus{RolloverPhase: "KSK " + string(step.Phase)}
	for _, k := range f.KSKs {
		if k.DS == nil {
			continue
		}
		st.Keys = append(st.Keys, dnsv1.DNSSECKeyStatus{Tag: int32(k.DS.KeyTag), Algorithm: dns.AlgorithmToString[k.DS.Algorithm],
			Role: string(dnssec.RoleKSK), State: string(k.State)})
	}
	for _, d := range step.DS {
		c := dns.Copy(d).(*dns.DS)
		c.Hdr.Ttl = dsTTL
		st.DS = append(st.DS, c.String())
	}
	z.Status.DNSSEC = st
	msg := fmt.Sprintf("KSK rollover to %s in phase %s: waiting for %s", step.Marker.New, step.Phase, step.Wait)
	if !step.Wake.IsZero() {
		msg += " (until " + step.Wake.UTC().Format(time.RFC3339) + ")"
	}
	if bad := parentWithoutActive(f); bad != "" {
		r.setSecure(z, dnsv1.ReasonDSPending, msg+"; "+bad)
		return
	}
	r.setSecure(z, dnsv1.ReasonRolloverInProgress, msg+"; every parent name server answers a DS of an active key-signing key")
}

// parentWithoutActive names the first parent name server whose DS answer holds no DS of an
// active key-signing key, or "".
func parentWithoutActive(f kskFacts) string {
	if len(f.Parent) == 0 {
		return "no parent name server answers"
	}
	for i, s := range f.Parent {
		ok := false
		for _, k := range f.KSKs {
			ok = ok || (k.State == provider.KSKActive && strings.Contains(strings.Join(s, "\n"), dsKey(k.DS)))
		}
		if !ok {
			return fmt.Sprintf("parent name server %d answers DS %v, of no active key-signing key", i+1, s)
		}
	}
	return ""
}

// kskWake is how soon to look again: a second after a call, at the wait's end, else at the
// poll interval.
func kskWake(step kskStep, now time.Time, poll time.Duration) time.Duration {
	switch {
	case step.Op != opNone:
		return time.Second
	case !step.Wake.IsZero():
		return min(max(step.Wake.Sub(now), time.Second), poll)
	}
	return min(poll, maxRolloverWake)
}
