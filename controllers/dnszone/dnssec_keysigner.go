package dnszone

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// keySignerTimeout bounds one hand-over of a key set to the provider (SetKeys: a few requests).
const keySignerTimeout = time.Minute

// errKeysPush: the provider that signs the zone with dnsplane's keys did not take them.
var errKeysPush = errors.New("the provider did not take the keys")

// keyPush hands a zone's key set to the provider that signs with it and returns the TTL the
// provider serves the DNSKEY RRset with (0: not known).
type keyPush func(ctx context.Context, ks dnssec.KeySet) (time.Duration, error)

// pushed runs push over ks (nothing when push is nil) and returns pol with a DNSKEY TTL of at
// least the one the provider serves, so that a rollover waits out what resolvers may cache.
func pushed(ctx context.Context, push keyPush, ks dnssec.KeySet, pol dnssec.KeyPolicy) (dnssec.KeyPolicy, error) {
	if push == nil {
		return pol, nil
	}
	ttl, err := push(ctx, ks)
	if err != nil {
		return pol, err
	}
	pol.DNSKEYTTL = max(pol.DNSKEYTTL, ttl)
	return pol, nil
}

// reconcileKeySigner runs the DNSSEC of a zone whose provider signs with keys dnsplane holds
// (resolved.KeySigner, PowerDNS; docs/dnssec.md, "PowerDNS"), and says whether it did
// (done). Signed: the keys are driven as the embedded server's (driveKeys), each key set
// handed to the provider before it is observed and after it is written; a hand-over the
// provider refuses gives Secure=False, reason ProviderActionNeeded, leaves the rollover in its
// phase and is tried again at the SOA poll interval. Disabled or without spec.dnssec (a zone
// that had a Secure condition): the turn-off goes child last (keySignerOff), the provider's
// keys of the zone are removed once it is done, and the usual path reports Unsigned or removes
// the condition (not done).
func (r *Reconciler) reconcileKeySigner(ctx context.Context, z *dnsv1.DNSZone, resolved provider.Resolved) (bool, time.Duration, error) {
	d := z.Spec.DNSSEC
	if d == nil && meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure) == nil {
		return false, 0, nil
	}
	if resolved.KeySigner == nil || resolved.Provider.Capabilities().SignsOnline {
		return false, 0, nil
	}
	push := r.keySignerPush(z, resolved.KeySigner)
	if d == nil || !d.Enabled {
		return r.keySignerOff(ctx, z, push) // child last: the provider keeps the keys until the turn-off is done
	}
	wake, err := r.driveKeys(ctx, z, resolved.ServedBy, push)
	if errors.Is(err, errKeysPush) {
		r.setSecure(z, dnsv1.ReasonProviderActionNeeded, fmt.Sprintf("%v; the keys and the rollover stay where they are, "+
			"and they are handed over again every %s", err, r.keySignerRetry()))
		return true, r.keySignerRetry(), nil
	}
	return true, wake, err
}

// keySignerRetry is how soon a refused hand-over is tried again: the SOA poll interval, at most
// maxRolloverWake.
func (r *Reconciler) keySignerRetry() time.Duration {
	return min(cmp.Or(r.SOAPollInterval, maxRolloverWake), maxRolloverWake)
}

// keySignerPush hands a key set of z to signer: SetKeys on the zone's provider ID with the
// keys (Generated keys neither published nor active) and spec.dnssec's denial. Its error wraps
// errKeysPush and names the keys by role and tag.
func (r *Reconciler) keySignerPush(z *dnsv1.DNSZone, signer provider.KeySigner) keyPush {
	return func(ctx context.Context, ks dnssec.KeySet) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(ctx, keySignerTimeout)
		defer cancel()
		signed, err := signer.SetKeys(ctx, z.Status.ZoneID, signingKeys(ks), keyDenial(z.Spec.DNSSEC))
		if err != nil {
			return 0, fmt.Errorf("%w: the provider of Secret %q refused keys [%s] of Secret %s: %w",
				errKeysPush, z.Spec.ProviderRef.Name, keyList(ks), z.Name+KeySecretSuffix, err)
		}
		return signed.DNSKEYTTL, nil
	}
}

// signingKeys are the keys of ks as a KeySigner takes them: a Published, Active or Retired key
// is published, an Active one signs, a Generated one is neither.
func signingKeys(ks dnssec.KeySet) []provider.SigningKey {
	out := make([]provider.SigningKey, 0, len(ks.Keys))
	for _, k := range ks.Keys {
		out = append(out, provider.SigningKey{DNSKEY: k.DNSKEY, Role: string(k.Role),
			PrivateKey: k.DNSKEY.PrivateKeyString(k.Private),
			Published:  k.State != dnssec.Generated, Active: k.State == dnssec.Active})
	}
	return out
}

// keyDenial is spec.dnssec's denial as a KeySigner takes it: NSEC3 with its parameters, else
// NSEC (Compact too: PowerDNS has no compact denial). nil: NSEC.
func keyDenial(d *dnsv1.DNSSEC) provider.Denial {
	if d == nil || d.Denial.Type != dnsv1.DenialNSEC3 {
		return provider.Denial{}
	}
	p := &provider.NSEC3Param{}
	if n := d.Denial.NSEC3; n != nil {
		p.Iterations, p.Salt = uint16(n.Iterations), n.Salt
	}
	return provider.Denial{NSEC3: p}
}
