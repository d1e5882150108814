package counting

import (
	"context"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Operations of provider.KSKRoller, counted only when the wrapped provider is one.
const (
	OpKSKs          = "KSKs"
	OpCreateKSK     = "CreateKSK"
	OpActivateKSK   = "ActivateKSK"
	OpDeactivateKSK = "DeactivateKSK"
	OpDeleteKSK     = "DeleteKSK"
)

// KSKRoller implements provider.SignerSource: the wrapped provider's KSKRoller
// (provider.KSKRollerOf), each call counted but KSKRolloverSupported (no I/O), or nil when it
// has none.
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
	out, err := s.inner.KSKs(ctx, zoneID)
	s.p.countZone(OpKSKs, zoneID, err)
	return out, err
}

func (s kskRoller) CreateKSK(ctx context.Context, zoneID, name string) error {
	err := s.inner.CreateKSK(ctx, zoneID, name)
	s.p.countZone(OpCreateKSK, zoneID, err)
	return err
}

func (s kskRoller) ActivateKSK(ctx context.Context, zoneID, name string) error {
	err := s.inner.ActivateKSK(ctx, zoneID, name)
	s.p.countZone(OpActivateKSK, zoneID, err)
	return err
}

func (s kskRoller) DeactivateKSK(ctx context.Context, zoneID, name string) error {
	err := s.inner.DeactivateKSK(ctx, zoneID, name)
	s.p.countZone(OpDeactivateKSK, zoneID, err)
	return err
}

func (s kskRoller) DeleteKSK(ctx context.Context, zoneID, name string) error {
	err := s.inner.DeleteKSK(ctx, zoneID, name)
	s.p.countZone(OpDeleteKSK, zoneID, err)
	return err
}
