package dnszone

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// KeySecretSuffix names a zone's DNSSEC key Secret: <dnszone>-dnssec, in the DNSZone's
// namespace, holding the key set under dnssec.SecretKey.
const KeySecretSuffix = "-dnssec"

// LabelZone labels a key Secret with the name of its DNSZone.
const LabelZone = "dnsplane.io/zone"

// dsTTL is the TTL of the DS records in status.dnssec.ds.
const dsTTL = 3600

// errKeysInvalid: the key Secret exists but holds no usable key set of the zone.
var errKeysInvalid = errors.New("keys invalid")

// reconcileDNSSEC sets the Secure condition and status.dnssec (docs/dnssec.md): a provider that
// signs with the keys it is handed goes through reconcileKeySigner, one that holds its keys
// through managedDNSSEC; otherwise, without spec.dnssec or when it is disabled, the turn-off
// (turnOff: Unsigning, then nothing or Unsigned), NotSupported where the provider does not sign,
// else the rollover machine drives the zone's keys in its key Secret (driveKeys) and its keys,
// DS set and rollover phase are reported. The provider is resolved once, and not at all for a
// zone that was never signed. It returns how soon to look again (0: at the usual polls). A
// provider Secret that cannot be resolved leaves Secure as it is: ZoneAvailable says why.
func (r *Reconciler) reconcileDNSSEC(ctx context.Context, z *dnsv1.DNSZone) (time.Duration, error) {
	d := z.Spec.DNSSEC
	if d == nil && !mayBeSigned(z) && meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure) == nil {
		return 0, nil
	}
	resolved, err := r.Providers.Resolve(ctx, z.Namespace, z.Spec.ProviderRef.Name)
	if err != nil {
		if (d == nil || !d.Enabled) && !mayBeSigned(z) {
			r.unsignedNow(z)
		}
		return 0, nil // ZoneAvailable reports the provider Secret's error
	}
	if wake, handled, err := r.gslbKeys(ctx, z, resolved); handled { // keys shared with other clusters (Gslb zones)
		return wake, err
	}
	if done, wake, err := r.reconcileKeySigner(ctx, z, resolved); done {
		return wake, err
	}
	if wake, handled, err := r.rolloverProviderKSK(ctx, z, resolved); handled { // dnssec_r53ksk_reconcile.go
		return wake, err
	}
	if d != nil {
		if wake, handled, err := r.managedDNSSEC(ctx, z, resolved); handled { // a provider that holds the keys
			return wake, err
		}
	}
	if d == nil || !d.Enabled {
		return r.turnOff(ctx, z, resolved) // child last: the DS leaves the parent before the signatures go
	}
	if !resolved.Provider.Capabilities().SignsOnline {
		if resolved.SignedByServer {
			return r.serverSigned(ctx, z, resolved) // the zone's own server signs it
		}
		r.setSecure(z, dnsv1.ReasonNotSupported, fmt.Sprintf("the provider of Secret %q does not sign zones; "+
			"the embedded server (dnsplane.io/local) and PowerDNS (dnsplane.io/pdns) do (docs/dnssec.md)", z.Spec.ProviderRef.Name))
		z.Status.DNSSEC = nil
		return 0, nil
	}
	return r.driveKeys(ctx, z, resolved.ServedBy, nil)
}

// driveKeys runs the rollover machine for a signed zone (keyStep) with what the zone's name
// servers (host:port) are seen answering, consumes the rollover annotation, emits the step's
// Event and reports the keys in status.dnssec and the Secure condition. push, when not nil,
// hands the key set to the provider that signs with it (keyStep).
func (r *Reconciler) driveKeys(ctx context.Context, z *dnsv1.DNSZone, servers []string, push keyPush) (time.Duration, error) {
	trigger, asked := manualTrigger(z)
	now := r.now().Truncate(time.Second)
	step, created, seen, err := r.keyStep(ctx, z, servers, dnssec.Observation{Now: now, Trigger: trigger}, push)
	if err != nil {
		return r.keysFailed(z, err)
	}
	if step.Event != "" && !created { // the first keys' Event is Signing's
		r.Recorder.Event(z, corev1.EventTypeNormal, dnsv1.ReasonRolloverInProgress, step.Event)
	}
	if asked {
		if err := r.consumeTrigger(ctx, z); err != nil {
			return 0, err
		}
	}
	ks := step.Keys
	z.Status.DNSSEC = keyStatus(ks, step.DS, z.Spec.DNSSEC.Keys)
	if ks.Rollover != nil {
		z.Status.DNSSEC.RolloverPhase = string(ks.Rollover.Role) + " " + string(ks.Rollover.Phase)
	}
	r.setKeysSecure(z, step, created, seen)
	r.noteAlgorithmChange(z, ks)
	wake := r.rolloverWake(step, now)
	if created || seen.notServed != nil || (seen.linked && !secureNow(z)) { // asked again at the SOA poll
		wake = minWake(wake, cmp.Or(r.SOAPollInterval, maxRolloverWake))
	}
	return wake, nil
}

// keysFailed reports a key Secret that holds no usable key set (errKeysInvalid: KeysInvalid, no
// status.dnssec, read again after CredentialRetry) and returns any other error as it is.
func (r *Reconciler) keysFailed(z *dnsv1.DNSZone, err error) (time.Duration, error) {
	if !errors.Is(err, errKeysInvalid) {
		return 0, err
	}
	r.setSecure(z, dnsv1.ReasonKeysInvalid, err.Error())
	z.Status.DNSSEC = nil
	return CredentialRetry, nil
}

// minWake is the sooner of two wake intervals, 0 meaning none.
func minWake(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// setKeysSecure sets the Secure condition of a signed zone from its keys' step and what was
// seen of its servers and its parent's (docs/dnssec.md, "The Secure condition").
// created: the key Secret was made in this reconcile. The zone is Signing until every name
// server answers the key set signed.
func (r *Reconciler) setKeysSecure(z *dnsv1.DNSZone, step dnssec.Step, created bool, seen keysSeen) {
	ks := step.Keys
	switch {
	case created:
		r.setSecure(z, dnsv1.ReasonSigning, fmt.Sprintf("keys %s created in Secret %s; the zone's server signs with them",
			keyList(ks), z.Name+KeySecretSuffix))
	case !meta.IsStatusConditionTrue(z.Status.Conditions, dnsv1.ConditionZoneAvailable):
		r.setSecure(z, dnsv1.ReasonSigning, fmt.Sprintf("keys %s; the zone's server signs with them once the zone is available", keyList(ks)))
	case seen.notServed != nil:
		r.setSecure(z, dnsv1.ReasonSigning, fmt.Sprintf("keys %s; waiting for every name server to answer the DNSKEY set signed: %v",
			keyList(ks), seen.notServed))
	case !seen.linked:
		r.setSecure(z, dnsv1.ReasonDSPending, withKeyNotes(z, step, fmt.Sprintf("the zone is signed with keys %s; its parent is not a DNSZone "+
			"dnsplane links: give the parent's registrar or operator the DS set %s (status.dnssec.ds; the zone publishes it as "+
			"CDS and CDNSKEY, RFC 7344)", keyList(ks), dsList(step))))
	case errors.Is(seen.chain, errChainBroken):
		r.setSecure(z, dnsv1.ReasonChainBroken, seen.chain.Error())
	case ks.Rollover != nil && seen.chain == nil:
		r.setSecure(z, dnsv1.ReasonRolloverInProgress, withKeyNotes(z, step, fmt.Sprintf("the chain from the parent's DS verifies; keys %s", keyList(ks))))
	case seen.notAtParent != nil:
		r.setSecure(z, dnsv1.ReasonDSPending, withKeyNotes(z, step, fmt.Sprintf("the zone is signed with keys %s; waiting for every parent name server "+
			"to answer the DS set %s: %v", keyList(ks), dsList(step), seen.notAtParent)))
	case seen.chain != nil:
		r.setSecure(z, dnsv1.ReasonDSPending, withKeyNotes(z, step, fmt.Sprintf("the zone is signed with keys %s; the chain from the parent's DS does not verify yet: %v",
			keyList(ks), seen.chain)))
	default:
		r.setSecure(z, dnsv1.ReasonSecure, withKeyNotes(z, step, fmt.Sprintf("every name server answers keys %s signed, every parent name server "+
			"the DS set %s, and the chain from it to the SOA verifies", keyList(ks), dsList(step))))
	}
}

// withKeyNotes appends to msg the rollover under way and what wait it is in, and how the keys
// differ from spec.dnssec.
func withKeyNotes(z *dnsv1.DNSZone, step dnssec.Step, msg string) string {
	if ro := step.Keys.Rollover; ro != nil {
		msg += fmt.Sprintf("; %s rollover in phase %s: waiting for %s", ro.Role, ro.Phase, step.Wait)
	}
	if diff := keysDiffer(step.Keys, z.Spec.DNSSEC); diff != "" {
		msg += "; " + diff
	}
	return msg
}

// dsList is the step's DS set as "<tag> <alg> <digest type> <digest>" records, joined.
func dsList(step dnssec.Step) string {
	return strings.Join(dsKeys(step.DS), ", ")
}

// secureNow says whether the zone's Secure condition is True.
func secureNow(z *dnsv1.DNSZone) bool {
	return meta.IsStatusConditionTrue(z.Status.Conditions, dnsv1.ConditionSecure)
}

func (r *Reconciler) setSecure(z *dnsv1.DNSZone, reason, msg string) {
	ok := reason == dnsv1.ReasonSecure || reason == dnsv1.ReasonRolloverInProgress
	status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionSecure, ok, reason, msg)
}

// usableKeySet parses a key Secret's key set and checks that it is zone's, with a key that
// signs the DNSKEY set and one that signs the rest. Its errors never quote the data.
func usableKeySet(zone string, raw []byte) (dnssec.KeySet, error) {
	if len(raw) == 0 {
		return dnssec.KeySet{}, fmt.Errorf("no data key %s", dnssec.SecretKey)
	}
	ks, err := dnssec.ParseKeySet(raw)
	if err != nil {
		return dnssec.KeySet{}, fmt.Errorf("the key set is not usable: %w", err) // names keys by tag, never quotes the text
	}
	if !strings.EqualFold(ks.Zone, dnswire.Fqdn(zone)) {
		return dnssec.KeySet{}, fmt.Errorf("its keys are of zone %s", ks.Zone)
	}
	var signsKeys, signsZone bool
	for _, k := range ks.Keys {
		signsKeys = signsKeys || k.SignsKeys()
		signsZone = signsZone || k.SignsZone()
	}
	if !signsKeys || !signsZone {
		return dnssec.KeySet{}, errors.New("no active key signs the DNSKEY set, or none the other RRsets")
	}
	return ks, nil
}

// keyStatus is status.dnssec of a key set: each key by tag, the DS set ds the parent must hold
// (the step's), and when the first active key's lifetime ends.
func keyStatus(ks dnssec.KeySet, ds []dns.RR, lifetimes dnsv1.DNSSECKeys) *dnsv1.DNSSECStatus {
	st := &dnsv1.DNSSECStatus{}
	var next time.Time
	for _, k := range ks.Keys {
		since := metav1.NewTime(k.Since.Truncate(time.Second))
		st.Keys = append(st.Keys, dnsv1.DNSSECKeyStatus{Tag: int32(k.Tag()), Algorithm: dns.AlgorithmToString[k.DNSKEY.Algorithm],
			Role: string(k.Role), State: string(k.State), Since: &since})
		life := lifetimes.Lifetime(string(k.Role))
		if k.State != dnssec.Active || life == 0 {
			continue
		}
		if end := since.Add(time.Duration(life) * time.Second); next.IsZero() || end.Before(next) {
			next = end
		}
	}
	for _, rr := range ds {
		st.DS = append(st.DS, rr.String())
	}
	if !next.IsZero() {
		t := metav1.NewTime(next)
		st.NextRollover = &t
	}
	return st
}

// keyList names a key set's keys by role and tag, such as "CSK 12345".
func keyList(ks dnssec.KeySet) string {
	names := make([]string, 0, len(ks.Keys))
	for _, k := range ks.Keys {
		names = append(names, fmt.Sprintf("%s %d", k.Role, k.Tag()))
	}
	return strings.Join(names, ", ")
}

// keysDiffer says how the active keys differ from spec.dnssec's algorithm and scheme, or ""
// when they follow it. Keys are never replaced to follow the spec: that is a rollover.
func keysDiffer(ks dnssec.KeySet, d *dnsv1.DNSSEC) string {
	alg := cmp.Or(d.Algorithm, dnsv1.AlgorithmECDSAP256SHA256)
	scheme := cmp.Or(d.Keys.Scheme, dnsv1.KeySchemeCSK)
	var algs []string
	have := dnsv1.KeySchemeKSKZSK
	for _, k := range ks.Keys {
		if k.State != dnssec.Active {
			continue
		}
		if a := dns.AlgorithmToString[k.DNSKEY.Algorithm]; a != string(alg) && !slices.Contains(algs, a) {
			algs = append(algs, a)
		}
		if k.Role == dnssec.RoleCSK {
			have = dnsv1.KeySchemeCSK
		}
	}
	var out []string
	if len(algs) > 0 {
		out = append(out, fmt.Sprintf("algorithm %s, not %s", strings.Join(algs, ", "), alg))
	}
	if have != scheme {
		out = append(out, fmt.Sprintf("scheme %s, not %s", have, scheme))
	}
	if len(out) == 0 {
		return ""
	}
	return "the active keys have " + strings.Join(out, " and ") + " as spec.dnssec asks; keys are replaced only by a rollover"
}
