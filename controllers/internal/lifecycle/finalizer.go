package lifecycle

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// removeFinalizer removes the finalizer from o: by patch ByPatch, by Update WithFirstWrite.
// Errors are the API server's.
func (l *Lifecycle[T]) removeFinalizer(ctx context.Context, o T) error {
	if l.FinalizerWrite == ByPatch {
		return l.patchFinalizer(ctx, o, controllerutil.RemoveFinalizer)
	}
	controllerutil.RemoveFinalizer(o, l.Finalizer)
	return l.Client.Update(ctx, o)
}

// patchFinalizer adds or removes (change: controllerutil.AddFinalizer or RemoveFinalizer) the
// finalizer with a merge patch of metadata.finalizers under o's resourceVersion, when that
// changes anything (ByPatch says why a patch). Errors are the API server's.
func (l *Lifecycle[T]) patchFinalizer(ctx context.Context, o T, change func(client.Object, string) bool) error {
	base, err := deepCopy(o)
	if err != nil {
		return err
	}
	if !change(o, l.Finalizer) {
		return nil
	}
	return l.Client.Patch(ctx, o, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// addFinalizerLater returns the addFinalizer that Normal gets WithFirstWrite: it adds finalizer
// to a copy of o, taken now, with one c.Update; nil when o has the finalizer already. Normal
// calls it while it plans and writes (publish.Options.Prepare runs it concurrently), so it
// touches only the copy; stored, called once Normal has returned, gives the copy as the Update
// stored it (its metadata, and the resource version a status patch locks on; its status is o's
// as it was read), and false when no Update succeeded. Errors wrap the API error.
func addFinalizerLater[T client.Object](c client.Writer, o T, finalizer string) (add func(context.Context) error, stored func() (T, bool)) {
	var zero T
	if controllerutil.ContainsFinalizer(o, finalizer) {
		return nil, func() (T, bool) { return zero, false }
	}
	cp, err := deepCopy(o)
	if err != nil {
		return func(context.Context) error { return fmt.Errorf("add finalizer: %w", err) },
			func() (T, bool) { return zero, false }
	}
	controllerutil.AddFinalizer(cp, finalizer)
	done := false
	add = func(ctx context.Context) error {
		if err := c.Update(ctx, cp); err != nil {
			return fmt.Errorf("add finalizer: %w", err)
		}
		done = true
		return nil
	}
	return add, func() (T, bool) { return cp, done }
}
