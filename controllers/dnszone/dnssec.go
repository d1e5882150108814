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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// reconcileDNSSEC sets the Secure condition and status.dnssec (docs/dnssec.md): nothing
// without spec.dnssec, Unsigned when it is disabled, NotSupported where the provider does not
// sign, else the zone's key Secret is created once (an existing one is never written) and
// its keys and DS set are reported. It returns how soon to look again (0: at the usual
// polls). A provider Secret that cannot be resolved leaves Secure as it is: ZoneAvailable
// says why.
func (r *Reconciler) reconcileDNSSEC(ctx context.Context, z *dnsv1.DNSZone) (time.Duration, error) {
	d := z.Spec.DNSSEC
	if d == nil {
		meta.RemoveStatusCondition(&z.Status.Conditions, dnsv1.ConditionSecure)
		z.Status.DNSSEC = nil
		return 0, nil
	}
	if !d.Enabled {
		r.setSecure(z, dnsv1.ReasonUnsigned, "spec.dnssec.enabled is false: the zone is served unsigned")
		z.Status.DNSSEC = nil
		return 0, nil
	}
	resolved, err := r.Providers.Resolve(ctx, z.Namespace, z.Spec.ProviderRef.Name)
	if err != nil {
		return 0, nil // ZoneAvailable reports the provider Secret's error
	}
	if !resolved.Provider.Capabilities().SignsOnline {
		r.setSecure(z, dnsv1.ReasonNotSupported, fmt.Sprintf("the provider of Secret %q does not sign zones; "+
			"the embedded server (dnsplane.io/local) does (docs/dnssec.md)", z.Spec.ProviderRef.Name))
		z.Status.DNSSEC = nil
		return 0, nil
	}
	ks, created, err := r.ensureKeySet(ctx, z)
	if errors.Is(err, errKeysInvalid) {
		r.setSecure(z, dnsv1.ReasonKeysInvalid, err.Error())
		z.Status.DNSSEC = nil
		return CredentialRetry, nil
	}
	if err != nil {
		return 0, err
	}
	z.Status.DNSSEC = keyStatus(ks, d.Keys)
	if created {
		r.setSecure(z, dnsv1.ReasonSigning, fmt.Sprintf("keys %s created in Secret %s; the zone's server signs with them",
			keyList(ks), z.Name+KeySecretSuffix))
		return r.SOAPollInterval, nil
	}
	if !meta.IsStatusConditionTrue(z.Status.Conditions, dnsv1.ConditionZoneAvailable) {
		r.setSecure(z, dnsv1.ReasonSigning, fmt.Sprintf("keys %s; the zone's server signs with them once the zone is available", keyList(ks)))
		return 0, nil
	}
	msg := fmt.Sprintf("the zone is signed with keys %s; its DS set (status.dnssec.ds) is to be published in the parent zone", keyList(ks))
	if diff := keysDiffer(ks, d); diff != "" {
		msg += "; " + diff
	}
	r.setSecure(z, dnsv1.ReasonDSPending, msg)
	return 0, nil
}

func (r *Reconciler) setSecure(z *dnsv1.DNSZone, reason, msg string) {
	ok := reason == dnsv1.ReasonSecure || reason == dnsv1.ReasonRolloverInProgress
	status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionSecure, ok, reason, msg)
}

// ensureKeySet reads the zone's key Secret, or creates it with new keys when there is none
// (created). An existing Secret is never written: one that holds no usable key set of this
// zone gives errKeysInvalid, naming the Secret and why, never its contents.
func (r *Reconciler) ensureKeySet(ctx context.Context, z *dnsv1.DNSZone) (ks dnssec.KeySet, created bool, err error) {
	key := client.ObjectKey{Namespace: z.Namespace, Name: z.Name + KeySecretSuffix}
	var sec corev1.Secret
	err = r.Client.Get(ctx, key, &sec)
	switch {
	case err == nil:
		ks, err = usableKeySet(z.Spec.Zone, sec.Data[dnssec.SecretKey])
		if err != nil {
			return dnssec.KeySet{}, false, fmt.Errorf("%w: Secret %s holds no usable key set of %s (%v); it is left untouched: fix or delete it",
				errKeysInvalid, key.Name, z.Spec.Zone, err)
		}
		return ks, false, nil
	case !apierrors.IsNotFound(err):
		return dnssec.KeySet{}, false, fmt.Errorf("read key Secret %s: %w", key.Name, err)
	}
	ks, err = newKeySet(z, r.now())
	if err != nil {
		return dnssec.KeySet{}, false, err
	}
	raw, err := ks.Marshal()
	if err != nil {
		return dnssec.KeySet{}, false, fmt.Errorf("encode the keys of %s: %w", z.Spec.Zone, err)
	}
	sec = corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: z.Namespace, Name: key.Name, Labels: map[string]string{LabelZone: z.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(z, dnsv1.GroupVersion.WithKind("DNSZone"))}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{dnssec.SecretKey: raw},
	}
	if err := r.Client.Create(ctx, &sec); err != nil {
		// AlreadyExists: made since the read; the next reconcile reads it, never overwrites it.
		return dnssec.KeySet{}, false, fmt.Errorf("create key Secret %s: %w", key.Name, err)
	}
	return ks, true, nil
}

// usableKeySet parses a key Secret's key set and checks that it is zone's, with a key that
// signs the DNSKEY set and one that signs the rest. Its errors never quote the data.
func usableKeySet(zone string, raw []byte) (dnssec.KeySet, error) {
	if len(raw) == 0 {
		return dnssec.KeySet{}, fmt.Errorf("no data key %s", dnssec.SecretKey)
	}
	ks, err := dnssec.ParseKeySet(raw)
	if err != nil {
		return dnssec.KeySet{}, errors.New("the key set does not parse")
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

// newKeySet makes a zone's first keys: one active CSK, or an active KSK and ZSK.
func newKeySet(z *dnsv1.DNSZone, now time.Time) (dnssec.KeySet, error) {
	alg, err := dnssec.Algorithm(string(cmp.Or(z.Spec.DNSSEC.Algorithm, dnsv1.AlgorithmECDSAP256SHA256)))
	if err != nil {
		return dnssec.KeySet{}, err
	}
	roles := []dnssec.Role{dnssec.RoleCSK}
	if z.Spec.DNSSEC.Keys.Scheme == dnsv1.KeySchemeKSKZSK {
		roles = []dnssec.Role{dnssec.RoleKSK, dnssec.RoleZSK}
	}
	ks := dnssec.KeySet{Zone: dnswire.Fqdn(z.Spec.Zone)}
	for _, role := range roles {
		k, err := dnssec.Generate(z.Spec.Zone, alg, role, dnssec.Active, now.Truncate(time.Second))
		if err != nil {
			return dnssec.KeySet{}, err
		}
		ks.Keys = append(ks.Keys, k)
	}
	return ks, nil
}

// keyStatus is status.dnssec of a key set: each key by tag, the DS set of the key-signing
// keys that are published or active, and when the first active key's lifetime ends.
func keyStatus(ks dnssec.KeySet, lifetimes dnsv1.DNSSECKeys) *dnsv1.DNSSECStatus {
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
	for _, rr := range ks.DS(dsTTL, dnssec.Published, dnssec.Active) {
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
