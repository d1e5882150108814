package guard

import (
	"context"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

var _ provider.SignerSource = (*Provider)(nil)

// KeySigner implements provider.SignerSource: the wrapped provider's KeySigner
// (provider.KeySignerOf) with the protections of every call (one token, retries on throttling
// and on failures to reach the provider: SetKeys converges on the key set it is given, so a
// repeated call is safe), or nil when it has none.
func (p *Provider) KeySigner() provider.KeySigner {
	inner := provider.KeySignerOf(p.inner)
	if inner == nil {
		return nil
	}
	return keySigner{p: p, inner: inner}
}

// ManagedSigner implements provider.SignerSource: the wrapped provider's ManagedSigner
// (provider.ManagedSignerOf) with the protections of every call on EnableSigning,
// DisableSigning and SigningState (idempotent, as the interface says), or nil when it has none.
// SigningSupported makes no request and takes no token.
func (p *Provider) ManagedSigner() provider.ManagedSigner {
	inner := provider.ManagedSignerOf(p.inner)
	if inner == nil {
		return nil
	}
	return managedSigner{p: p, inner: inner}
}

type keySigner struct {
	p     *Provider
	inner provider.KeySigner
}

func (s keySigner) SetKeys(ctx context.Context, zoneID string, keys []provider.SigningKey, denial provider.Denial) (provider.SignedZone, error) {
	var out provider.SignedZone
	err := s.p.do(ctx, func(ctx context.Context) (err error) {
		out, err = s.inner.SetKeys(ctx, zoneID, keys, denial)
		return err
	})
	return out, err
}

type managedSigner struct {
	p     *Provider
	inner provider.ManagedSigner
}

func (s managedSigner) SigningSupported(sp provider.SigningParams) error {
	return s.inner.SigningSupported(sp)
}

func (s managedSigner) EnableSigning(ctx context.Context, zoneID string, sp provider.SigningParams) error {
	return s.p.do(ctx, func(ctx context.Context) error { return s.inner.EnableSigning(ctx, zoneID, sp) })
}

func (s managedSigner) DisableSigning(ctx context.Context, zoneID string) error {
	return s.p.do(ctx, func(ctx context.Context) error { return s.inner.DisableSigning(ctx, zoneID) })
}

func (s managedSigner) SigningState(ctx context.Context, zoneID string) (provider.SigningState, error) {
	var out provider.SigningState
	err := s.p.do(ctx, func(ctx context.Context) (err error) {
		out, err = s.inner.SigningState(ctx, zoneID)
		return err
	})
	return out, err
}
