package factory

import (
	"context"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// KSKRoller implements provider.SignerSource: the wrapped provider's KSKRoller, its errors named
// as every call's, or nil.
func (p namedCredentials) KSKRoller() provider.KSKRoller {
	inner := provider.KSKRollerOf(p.inner)
	if inner == nil {
		return nil
	}
	return namedKSKRoller{p: p, inner: inner}
}

type namedKSKRoller struct {
	p     namedCredentials
	inner provider.KSKRoller
}

func (s namedKSKRoller) KSKRolloverSupported() error { return s.inner.KSKRolloverSupported() }

func (s namedKSKRoller) KSKs(ctx context.Context, zoneID string) ([]provider.KSK, error) {
	out, err := s.inner.KSKs(ctx, zoneID)
	return out, s.p.wrap(err)
}

func (s namedKSKRoller) CreateKSK(ctx context.Context, zoneID, name string) error {
	return s.p.wrap(s.inner.CreateKSK(ctx, zoneID, name))
}

func (s namedKSKRoller) ActivateKSK(ctx context.Context, zoneID, name string) error {
	return s.p.wrap(s.inner.ActivateKSK(ctx, zoneID, name))
}

func (s namedKSKRoller) DeactivateKSK(ctx context.Context, zoneID, name string) error {
	return s.p.wrap(s.inner.DeactivateKSK(ctx, zoneID, name))
}

func (s namedKSKRoller) DeleteKSK(ctx context.Context, zoneID, name string) error {
	return s.p.wrap(s.inner.DeleteKSK(ctx, zoneID, name))
}
