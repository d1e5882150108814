package dnszone

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// unsignOnDelete turns the DNSSEC of a DNSZone being deleted off child last before the
// deletion goes on (docs/dnssec.md, "Turning it off"): a zone whose key Secret holds a usable
// key set not yet turned off, on a provider that signs online (or one that does not resolve),
// has its DS taken out of the parent link (the link deleted, or, when the zone is kept
// (keep: preserveOnDelete or an adopted zone), rewritten without its DS endpoint), then takes
// the turn-off's steps (unsignStep), each at its poll, with the Secure condition written to the
// status as it goes. It returns how soon to look again, 0 once the zone's keys sign nothing any
// more: the key Secret's finalizer is off, and every replica's signer serves the zone unsigned
// once the DNSZone is gone.
func (r *Reconciler) unsignOnDelete(ctx context.Context, z *dnsv1.DNSZone, keep bool) (time.Duration, error) {
	key := client.ObjectKey{Namespace: z.Namespace, Name: z.Name + KeySecretSuffix}
	var sec corev1.Secret
	if err := r.Client.Get(ctx, key, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("read key Secret %s: %w", key.Name, err)
	}
	ks, err := usableKeySet(z.Spec.Zone, sec.Data[dnssec.SecretKey])
	if err != nil || !keysNeeded(ks) || !r.mayServeSigned(ctx, z) {
		return 0, r.releaseKeys(ctx, &sec)
	}
	if err := r.dropLinkDS(ctx, z, keep); err != nil {
		return 0, err
	}
	base := z.DeepCopy()
	wake, err := r.unsignStep(ctx, z, &sec, ks)
	if err != nil {
		return 0, err
	}
	if err := r.Client.Status().Patch(ctx, z, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		log.FromContext(ctx).V(1).Info("status of a zone being deleted not written; the next step writes it", "error", err.Error())
	}
	return wake, nil
}

// mayServeSigned says whether the embedded server may serve z signed: its provider signs
// online, or does not resolve (then nothing says it does not).
func (r *Reconciler) mayServeSigned(ctx context.Context, z *dnsv1.DNSZone) bool {
	resolved, err := r.Providers.Resolve(ctx, z.Namespace, z.Spec.ProviderRef.Name)
	return err != nil || resolved.Provider.Capabilities().SignsOnline
}

// dropLinkDS takes the zone's DS out of its parent link: the link is deleted (its finalizer
// holds it until its records have left the parent), or, for a zone that is kept, rewritten
// without its DS endpoint, so that the NS set stays.
func (r *Reconciler) dropLinkDS(ctx context.Context, z *dnsv1.DNSZone, keep bool) error {
	if !keep {
		_, err := r.deleteParentLink(ctx, z)
		return err
	}
	link := &dnsv1.DNSEndpoint{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: z.Namespace, Name: z.Name + ParentLinkSuffix}, link)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read parent link: %w", err)
	}
	isDS := func(e dnsv1.Endpoint) bool { return e.RecordType == "DS" }
	if !slices.ContainsFunc(link.Spec.Endpoints, isDS) {
		return nil
	}
	link.Spec.Endpoints = slices.DeleteFunc(link.Spec.Endpoints, isDS)
	if err := r.Client.Update(ctx, link); err != nil {
		return fmt.Errorf("drop the DS set from parent link %s: %w", link.Name, err)
	}
	return nil
}
