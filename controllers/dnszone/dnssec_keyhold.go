package dnszone

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// FinalizerKeys holds a zone's key Secret while its keys may sign the zone: from the
// controller's first write of it (its creation with the first keys; for a Secret made by hand,
// the first rollover step or the turn-off's first step) until the zone's turn-off is done
// (dnssec.Unsigning.Done), child last. A Secret is never written only to add it. A key Secret
// deleted meanwhile stays readable (its deletionTimestamp set), and every replica's signer and
// the turn-off go on with it; the controller removes the finalizer with the write that records
// the turn-off done, or at once from a Secret that holds no usable key set and is being
// deleted.
const FinalizerKeys = "dnsplane.io/dnssec-keys"

// keysNeeded says whether a key set may still sign its zone: its turn-off is not done.
func keysNeeded(ks dnssec.KeySet) bool {
	return ks.Unsigning == nil || !ks.Unsigning.Done
}

// holdsKeys says whether sec carries FinalizerKeys.
func holdsKeys(sec *corev1.Secret) bool {
	return sec != nil && controllerutil.ContainsFinalizer(sec, FinalizerKeys)
}

// setKeyHold puts FinalizerKeys on sec when its key set ks is needed (and sec is not being
// deleted: no finalizer is added then), and takes it off when not. It says whether sec changed.
func setKeyHold(sec *corev1.Secret, ks dnssec.KeySet) bool {
	if keysNeeded(ks) {
		return sec.DeletionTimestamp.IsZero() && controllerutil.AddFinalizer(sec, FinalizerKeys)
	}
	return controllerutil.RemoveFinalizer(sec, FinalizerKeys)
}

// releaseKeys takes FinalizerKeys off sec (a key Secret whose keys sign nothing any more).
func (r *Reconciler) releaseKeys(ctx context.Context, sec *corev1.Secret) error {
	if !controllerutil.RemoveFinalizer(sec, FinalizerKeys) {
		return nil
	}
	if err := r.Client.Update(ctx, sec); err != nil {
		return fmt.Errorf("release key Secret %s: %w", sec.Name, err)
	}
	return nil
}
