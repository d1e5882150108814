package dnszone

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/api/meta"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// managedDNSSEC drives the DNSSEC of a zone whose provider signs with keys it holds itself
// (provider.ManagedSigner: Route 53, Cloud DNS, Azure DNS; docs/dnssec.md, "Route 53, Cloud DNS
// and Azure"). handled is false, and nothing is done, for any other provider. Otherwise: enabled
// false turns signing off at the provider child last (managedOff); parameters the provider cannot sign with are NotSupported; signing is turned on
// when the provider reports it off, and the Secure condition follows the provider's state
// (managedSecure). A zone whose last look, less than the SOA poll interval ago, found it Secure
// (or DSPending for a parent outside dnsplane) is not looked at again: no provider request, no
// DS query. It returns how soon to look again.
func (r *Reconciler) managedDNSSEC(ctx context.Context, z *dnsv1.DNSZone, resolved provider.Resolved) (wake time.Duration, handled bool, err error) {
	if resolved.Signer == nil {
		return 0, false, nil
	}
	s, id := resolved.Signer, z.Status.ZoneID
	if !z.Spec.DNSSEC.Enabled {
		wake, err := r.managedOff(ctx, z, s) // child last: dnssec_managed_off.go
		return wake, true, err
	}
	p := signingParams(z.Spec.DNSSEC)
	if err := s.SigningSupported(p); err != nil {
		r.setSecure(z, dnsv1.ReasonNotSupported, fmt.Sprintf("the provider of Secret %q cannot sign as spec.dnssec asks: %v",
			z.Spec.ProviderRef.Name, err))
		return 0, true, nil
	}
	if id == "" {
		r.setSecure(z, dnsv1.ReasonSigning, "the provider signs the zone once it holds it (ZoneAvailable)")
		return 0, true, nil
	}
	if r.settledLook(z, lookManaged) && managedSettled(z) {
		return 0, true, nil // nothing waits: the status stands until the SOA poll interval has passed
	}
	st, err := s.SigningState(ctx, id)
	if err != nil {
		return 0, true, fmt.Errorf("signing state of %s: %w", z.Spec.Zone, err)
	}
	if st.Phase == provider.SigningOff {
		if err := s.EnableSigning(ctx, id, p); err != nil {
			return r.managedRefused(z, err)
		}
		if st, err = s.SigningState(ctx, id); err != nil {
			return 0, true, fmt.Errorf("signing state of %s: %w", z.Spec.Zone, err)
		}
	}
	wake = r.managedSecure(ctx, z, st)
	r.settle(z, lookManaged, st.Phase == provider.SigningOn && wake == 0)
	return wake, true, nil
}

// lookManaged is the kind of look at a provider-signed zone (settle).
const lookManaged = "managed"

// managedSettled says whether z's Secure condition is of its generation and waits for nothing:
// Secure, or DSPending for a parent outside dnsplane.
func managedSettled(z *dnsv1.DNSZone) bool {
	c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure)
	return c != nil && c.ObservedGeneration == z.Generation && z.Status.DNSSEC != nil &&
		(c.Reason == dnsv1.ReasonSecure || c.Reason == dnsv1.ReasonDSPending)
}

// managedRefused reports an EnableSigning error: what the provider cannot do is NotSupported,
// what only its owner can fix ProviderActionNeeded (looked at again at the SOA poll interval);
// other errors are returned.
func (r *Reconciler) managedRefused(z *dnsv1.DNSZone, err error) (time.Duration, bool, error) {
	switch {
	case errors.Is(err, provider.ErrNotCapable):
		r.setSecure(z, dnsv1.ReasonNotSupported, fmt.Sprintf("the provider of Secret %q: %v", z.Spec.ProviderRef.Name, err))
		return 0, true, nil
	case errors.Is(err, provider.ErrSigningRefused):
		r.setSecure(z, dnsv1.ReasonProviderActionNeeded, fmt.Sprintf("the provider refuses to sign: %v", err))
		return r.managedPoll(), true, nil
	}
	return 0, true, fmt.Errorf("turn signing of %s on: %w", z.Spec.Zone, err)
}

// managedSecure sets the Secure condition and status.dnssec from the provider's signing state:
// ActionNeeded and Failed are ProviderActionNeeded with the provider's message (status.dnssec,
// and so the DS in the parent link, kept as they were); Off and Pending are Signing; Signing
// reports the provider's keys and DS set, DSPending until every name server of the parent
// DNSZone answers exactly that DS set (dsServed), then Secure. It returns the SOA poll interval
// while the zone is not Secure and is linked (or waits for the provider), else 0.
func (r *Reconciler) managedSecure(ctx context.Context, z *dnsv1.DNSZone, st provider.SigningState) time.Duration {
	switch st.Phase {
	case provider.SigningActionNeeded, provider.SigningFailed:
		r.setSecure(z, dnsv1.ReasonProviderActionNeeded, fmt.Sprintf("the provider reports signing %s: %s", st.Phase,
			cmp.Or(st.Message, "no status message")))
		return r.managedPoll()
	case provider.SigningOn:
	default:
		r.setSecure(z, dnsv1.ReasonSigning, strings.TrimSuffix(fmt.Sprintf("the provider turns signing on (%s): %s", st.Phase, st.Message), ": "))
		return r.managedPoll()
	}
	ds := make([]dns.RR, 0, len(st.DS))
	for _, d := range st.DS {
		c := dns.Copy(d).(*dns.DS)
		c.Hdr.Ttl = dsTTL
		ds = append(ds, c)
	}
	z.Status.DNSSEC = managedStatus(st, ds)
	list := strings.Join(dsKeys(ds), ", ")
	parents, linked := r.parentServers(ctx, z)
	if !linked {
		r.setSecure(z, dnsv1.ReasonDSPending, fmt.Sprintf("the provider signs the zone; its parent is not a DNSZone dnsplane links: "+
			"give the parent's registrar or operator the DS set %s (status.dnssec.ds)", list))
		return 0
	}
	if err := dsServed(ctx, parents, z.Spec.Zone, ds); err != nil {
		r.setSecure(z, dnsv1.ReasonDSPending, fmt.Sprintf("the provider signs the zone; waiting for every parent name server "+
			"to answer the DS set %s: %v", list, err))
		return r.managedPoll()
	}
	r.setSecure(z, dnsv1.ReasonSecure, fmt.Sprintf("the provider signs the zone and every parent name server answers its DS set %s", list))
	return 0
}

// managedPoll is how soon a zone waiting on its provider or its parent is looked at again.
func (r *Reconciler) managedPoll() time.Duration {
	return cmp.Or(r.SOAPollInterval, maxRolloverWake)
}

// managedStatus is status.dnssec of a provider-signed zone: its keys as the provider reports
// them (role KSK for a key with the SEP flag, else ZSK; all Active) and the DS set ds.
func managedStatus(st provider.SigningState, ds []dns.RR) *dnsv1.DNSSECStatus {
	out := &dnsv1.DNSSECStatus{}
	for _, k := range st.DNSKEYs {
		role := "ZSK"
		if k.Flags&dns.SEP != 0 {
			role = "KSK"
		}
		out.Keys = append(out.Keys, dnsv1.DNSSECKeyStatus{Tag: int32(k.KeyTag()), Algorithm: dns.AlgorithmToString[k.Algorithm],
			Role: role, State: "Active"})
	}
	for _, rr := range ds {
		out.DS = append(out.DS, rr.String())
	}
	return out
}

// signingParams is spec.dnssec in the provider's terms, with the API's defaults.
func signingParams(d *dnsv1.DNSSEC) provider.SigningParams {
	p := provider.SigningParams{
		Algorithm: string(cmp.Or(d.Algorithm, dnsv1.AlgorithmECDSAP256SHA256)),
		Scheme:    string(cmp.Or(d.Keys.Scheme, dnsv1.KeySchemeCSK)),
		Denial:    string(cmp.Or(d.Denial.Type, dnsv1.DenialNSEC)),
	}
	if n := d.Denial.NSEC3; n != nil {
		p.NSEC3Iterations, p.NSEC3Salt = n.Iterations, n.Salt
	}
	return p
}
