package provider

import (
	"context"
	"time"

	"github.com/miekg/dns"
)

// KSKRoller is the optional interface of a ManagedSigner whose key-signing keys the DNSZone
// controller rolls over (Route 53): the provider holds the keys, the controller decides when a
// second one is made, activated, and when the old one is deactivated and deleted, from what the
// provider lists and what the parent's name servers answer (docs/dnssec.md, "Route 53, Cloud DNS
// and Azure"). Refusals only the provider's owner can lift wrap ErrSigningRefused.
type KSKRoller interface {
	// KSKRolloverSupported says, without I/O, whether the provider can make a second key-signing
	// key for a zone: nil, or an error wrapping ErrNotCapable that says what it lacks.
	KSKRolloverSupported() error
	// KSKs lists the zone's key-signing keys. Unknown zone: ErrZoneNotFound.
	KSKs(ctx context.Context, zoneID string) ([]KSK, error)
	// CreateKSK makes the INACTIVE key-signing key name; a key of that name that exists is no
	// error.
	CreateKSK(ctx context.Context, zoneID, name string) error
	// ActivateKSK has the key sign the DNSKEY set; idempotent.
	ActivateKSK(ctx context.Context, zoneID, name string) error
	// DeactivateKSK has the key sign nothing; idempotent.
	DeactivateKSK(ctx context.Context, zoneID, name string) error
	// DeleteKSK deletes an inactive key; a key that is gone is no error.
	DeleteKSK(ctx context.Context, zoneID, name string) error
}

// KSKState is where a key-signing key stands at its provider.
type KSKState string

// The key-signing key states.
const (
	// KSKActive: the key is in the DNSKEY set and signs it.
	KSKActive KSKState = "Active"
	// KSKInactive: the key signs nothing and is not in the DNSKEY set.
	KSKInactive KSKState = "Inactive"
	// KSKOther: any other state (the provider's own, such as ACTION_NEEDED).
	KSKOther KSKState = "Other"
)

// KSK is one key-signing key as its provider lists it.
type KSK struct {
	// Name is the key's name at the provider.
	Name string
	// State is where it stands; Status the provider's own word for it.
	State  KSKState
	Status string
	// DS is the key's DS (SHA-256), owner the zone, TTL 0.
	DS *dns.DS
	// Created is when the provider made it.
	Created time.Time
}
