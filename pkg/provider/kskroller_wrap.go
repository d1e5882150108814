package provider

import "context"

// The operation names a KSKRoller decorator (WrapKSKRoller) hands its around function.
const (
	OpKSKs          = "KSKs"
	OpCreateKSK     = "CreateKSK"
	OpActivateKSK   = "ActivateKSK"
	OpDeactivateKSK = "DeactivateKSK"
	OpDeleteKSK     = "DeleteKSK"
)

// Around runs call, one provider operation op on zoneID, inside a decorator's protection
// (pkg/provider/guard's rate limit and retries, pkg/provider/counting's counters, the factory's
// credential naming) and returns its error as the decorator sees it.
type Around func(ctx context.Context, op, zoneID string, call func(ctx context.Context) error) error

// WrapKSKRoller is inner with every call that does I/O made through around; KSKRolloverSupported
// (no I/O) goes straight to inner. A nil inner gives nil, so that a decorator's KSKRoller
// (SignerSource) is nil where the provider it wraps has none.
func WrapKSKRoller(inner KSKRoller, around Around) KSKRoller {
	if inner == nil {
		return nil
	}
	return wrappedKSKRoller{inner: inner, around: around}
}

type wrappedKSKRoller struct {
	inner  KSKRoller
	around Around
}

func (w wrappedKSKRoller) KSKRolloverSupported() error { return w.inner.KSKRolloverSupported() }

func (w wrappedKSKRoller) KSKs(ctx context.Context, zoneID string) ([]KSK, error) {
	var out []KSK
	err := w.around(ctx, OpKSKs, zoneID, func(ctx context.Context) (err error) {
		out, err = w.inner.KSKs(ctx, zoneID)
		return err
	})
	return out, err
}

func (w wrappedKSKRoller) CreateKSK(ctx context.Context, zoneID, name string) error {
	return w.around(ctx, OpCreateKSK, zoneID, func(ctx context.Context) error { return w.inner.CreateKSK(ctx, zoneID, name) })
}

func (w wrappedKSKRoller) ActivateKSK(ctx context.Context, zoneID, name string) error {
	return w.around(ctx, OpActivateKSK, zoneID, func(ctx context.Context) error { return w.inner.ActivateKSK(ctx, zoneID, name) })
}

func (w wrappedKSKRoller) DeactivateKSK(ctx context.Context, zoneID, name string) error {
	return w.around(ctx, OpDeactivateKSK, zoneID, func(ctx context.Context) error { return w.inner.DeactivateKSK(ctx, zoneID, name) })
}

func (w wrappedKSKRoller) DeleteKSK(ctx context.Context, zoneID, name string) error {
	return w.around(ctx, OpDeleteKSK, zoneID, func(ctx context.Context) error { return w.inner.DeleteKSK(ctx, zoneID, name) })
}
