package publish

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// AddFinalizer returns the Options.Prepare that adds finalizer to a copy of o, taken now, with
// one c.Update, and nil when o has the finalizer already. Run calls it while it plans and
// writes, and touches only o; stored, called once Run has returned, gives the copy as the
// Update stored it (its metadata, and the resource version a status patch locks on; its status
// is o's as it was read), and false when no Update succeeded. Errors wrap the API error.
func AddFinalizer[T client.Object](c client.Writer, o T, finalizer string) (prepare func(context.Context) error, stored func() (T, bool)) {
	var zero T
	if controllerutil.ContainsFinalizer(o, finalizer) {
		return nil, func() (T, bool) { return zero, false }
	}
	cp, ok := o.DeepCopyObject().(T)
	if !ok {
		return func(context.Context) error { return fmt.Errorf("add finalizer: cannot copy a %T", o) },
			func() (T, bool) { return zero, false }
	}
	controllerutil.AddFinalizer(cp, finalizer)
	done := false
	prepare = func(ctx context.Context) error {
		if err := c.Update(ctx, cp); err != nil {
			return fmt.Errorf("add finalizer: %w", err)
		}
		done = true
		return nil
	}
	return prepare, func() (T, bool) { return cp, done }
}
