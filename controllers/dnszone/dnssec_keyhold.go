package dnszone

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// FinalizerKeys holds a zone's key Secret while its keys may sign the zone: from the Secret's
// creation until the zone's turn-off is done (dnssec.Unsigning.Done), child last. A key Secret
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

// holdKeys puts FinalizerKeys on a key Secret that lacks it while its keys are needed (a Secret
// made before the finalizer, or by hand), with one update locked on its resourceVersion; sec
// takes the stored version.
func (r *Reconciler) holdKeys(ctx context.Context, sec *corev1.Secret, ks dnssec.KeySet) error {
	if !keysNeeded(ks) || !setKeyHold(sec, ks) {
		return nil
	}
	if err := r.Client.Update(ctx, sec); err != nil {
		return fmt.Errorf("hold key Secret %s: %w", sec.Name, err)
	}
	return nil
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
