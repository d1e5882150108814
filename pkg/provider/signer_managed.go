package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/dns"
)

// ManagedSigner is a provider that signs a zone with keys it holds itself (Route 53 with a
// key-signing key in a customer managed KMS key, Cloud DNS): dnsplane never sees a private key;
// it turns signing on and off, reads the provider's signing state and its DS set, and hands that
// DS set to the parent (docs/dnssec.md, "Route 53, Cloud DNS and Azure"). The factory sets
// Resolved.Signer to the provider's, behind its guard (ManagedSignerOf).
type ManagedSigner interface {
	// SigningSupported says, without I/O, whether the provider can sign as p asks: nil, or an
	// error wrapping ErrNotCapable whose text names the field and what the provider can do.
	SigningSupported(p SigningParams) error
	// EnableSigning turns signing of the zone (its provider ID) on as p asks; it is idempotent
	// and completes a half-done earlier call. A refusal only the provider's owner can lift (a
	// key or a permission of theirs) wraps ErrSigningRefused; what the provider cannot do wraps
	// ErrNotCapable.
	EnableSigning(ctx context.Context, zoneID string, p SigningParams) error
	// DisableSigning turns signing of the zone off; idempotent.
	DisableSigning(ctx context.Context, zoneID string) error
	// SigningState reads the zone's signing state. Unknown zone: ErrZoneNotFound.
	SigningState(ctx context.Context, zoneID string) (SigningState, error)
}

// NotCapable is a SigningSupported answer: nil without reasons, else an error wrapping
// ErrNotCapable that gives every reason, "; "-joined.
func NotCapable(why []string) error {
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrNotCapable, strings.Join(why, "; "))
}

// ErrSigningRefused: the provider refused to sign for a reason only its owner can fix (a KMS key
// that is not usable, a missing permission); the error's text is the provider's.
var ErrSigningRefused = errors.New("signing refused by provider")

// SigningParams is how a zone is to be signed, in spec.dnssec's terms.
type SigningParams struct {
	// Algorithm is the DNSSEC algorithm mnemonic: ECDSAP256SHA256, ED25519 or RSASHA256.
	Algorithm string
	// Scheme is CSK or KSKZSK.
	Scheme string
	// Denial is NSEC, NSEC3 or Compact.
	Denial string
	// NSEC3Iterations and NSEC3Salt (hex) are the NSEC3 parameters (denial NSEC3).
	NSEC3Iterations int32
	NSEC3Salt       string
}

// SigningPhase is where a zone's signing stands at its provider.
type SigningPhase string

// The signing phases.
const (
	// SigningOff: the zone is not signed, and no signing is under way.
	SigningOff SigningPhase = "Off"
	// SigningPending: signing was asked for and the provider has not finished turning it on
	// (or off).
	SigningPending SigningPhase = "Pending"
	// SigningOn: the provider signs the zone; the state's DS set is the one its parent is to
	// hold.
	SigningOn SigningPhase = "Signing"
	// SigningActionNeeded: the provider cannot sign until its owner acts (a KMS key disabled or
	// deleted, a permission withdrawn); Message says what.
	SigningActionNeeded SigningPhase = "ActionNeeded"
	// SigningFailed: the provider reports an internal failure of signing; Message is its text.
	SigningFailed SigningPhase = "Failed"
)

// SigningState is a zone's signing as its provider reports it.
type SigningState struct {
	// Phase is where signing stands.
	Phase SigningPhase
	// Message is the provider's own status text (never a credential); empty when it gave none.
	Message string
	// DS is the DS set of the zone's key-signing keys the parent is to hold (SigningOn), owner
	// the zone, TTL 0: the caller sets the parent's TTL.
	DS []*dns.DS
	// DNSKEYs are the zone's public keys as the provider reports them.
	DNSKEYs []*dns.DNSKEY
}
