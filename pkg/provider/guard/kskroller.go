package guard

import (
	"context"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// KSKRoller implements provider.SignerSource: the wrapped provider's KSKRoller
// (provider.KSKRollerOf) with the protections of every call (each call is idempotent, as the
// interface says, so a retried one is safe), or nil when it has none. KSKRolloverSupported makes
// no request and takes no token.
func (p *Provider) KSKRoller() provider.KSKRoller {
	inner := provider.KSKRollerOf(p.inner)
	if inner == nil {
		return nil
	}
	return kskRoller{p: p, inner: inner}
}

type kskRoller struct {
	p     *Provider
	inner provider.KSKRoller
}

func (s kskRoller) KSKRolloverSupported() error { return s.inner.KSKRolloverSupported() }

func (s kskRoller) KSKs(ctx context.Context, zoneID string) ([]provider.KSK, error) {
	var out []provider.KSK
	err := s.p.do(ctx, func(ctx context.Context) (err error) {
		out, err = s.inner.KSKs(ctx, zoneID)
		return err
	})
	return out, err
}

func (s kskRoller) CreateKSK(ctx context.Context, zoneID, name string) error {
	return s.p.do(ctx, func(ctx context.Context) error { return s.inner.CreateKSK(ctx, zoneID, name) })
}

func (s kskRoller) ActivateKSK(ctx context.Context, zoneID, name string) error {
	return s.p.do(ctx, func(ctx context.Context) error { return s.inner.ActivateKSK(ctx, zoneID, name) })
}

func (s kskRoller) DeactivateKSK(ctx context.Context, zoneID, name string) error {
	return s.p.do(ctx, func(ctx context.Context) error { return s.inner.DeactivateKSK(ctx, zoneID, name) })
}

func (s kskRoller) DeleteKSK(ctx context.Context, zoneID, name string) error {
	return s.p.do(ctx, func(ctx context.Context) error { return s.inner.DeleteKSK(ctx, zoneID, name) })
}
