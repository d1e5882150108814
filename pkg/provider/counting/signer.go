package counting

import (
	"context"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Operations of the signer interfaces, counted only when the wrapped provider is one. One
// SetKeys, EnableSigning or DisableSigning call may send the backend several requests (a
// listing, then the writes it needs); it counts as one.
const (
	OpSetKeys        = "SetKeys"
	OpEnableSigning  = "EnableSigning"
	OpDisableSigning = "DisableSigning"
	OpSigningState   = "SigningState"
)

var _ provider.SignerSource = (*Provider)(nil)

// KeySigner implements provider.SignerSource: the wrapped provider's KeySigner
// (provider.KeySignerOf), each call counted, or nil when it has none.
func (p *Provider) KeySigner() provider.KeySigner {
	inner := provider.KeySignerOf(p.inner)
	if inner == nil {
		return nil
	}
	return keySigner{p: p, inner: inner}
}

// ManagedSigner implements provider.SignerSource: the wrapped provider's ManagedSigner
// (provider.ManagedSignerOf), each call counted but SigningSupported (no I/O), or nil when it
// has none.
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
	out, err := s.inner.SetKeys(ctx, zoneID, keys, denial)
	s.p.countZone(OpSetKeys, zoneID, err)
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
	err := s.inner.EnableSigning(ctx, zoneID, sp)
	s.p.countZone(OpEnableSigning, zoneID, err)
	return err
}

func (s managedSigner) DisableSigning(ctx context.Context, zoneID string) error {
	err := s.inner.DisableSigning(ctx, zoneID)
	s.p.countZone(OpDisableSigning, zoneID, err)
	return err
}

func (s managedSigner) SigningState(ctx context.Context, zoneID string) (provider.SigningState, error) {
	out, err := s.inner.SigningState(ctx, zoneID)
	s.p.countZone(OpSigningState, zoneID, err)
	return out, err
}
