package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/miekg/dns"
)

// KeySigner is the optional interface of a provider that signs a zone online with keys dnsplane
// holds: the DNSZone controller makes the keys in the zone's key Secret, runs their rollovers,
// and hands each step's key set to SetKeys (docs/dnssec.md, "PowerDNS"). The composition root
// sets provider.Resolved.KeySigner for such a provider, behind its guard (KeySignerOf).
type KeySigner interface {
	// SetKeys has zone zoneID signed with exactly keys and denial: a key the provider holds for
	// the zone and that keys does not name (by its public key, algorithm and flags) is removed, a
	// key it lacks is imported, and each key's Published and Active are set; keys that are
	// neither are not imported. Keys are added and activated before others are deactivated or
	// removed, so that each moment between two key sets signs with an Active key of one of them.
	// An empty keys leaves the zone unsigned. A call that finds everything in place writes
	// nothing. Its errors never carry key material.
	SetKeys(ctx context.Context, zoneID string, keys []SigningKey, denial Denial) (SignedZone, error)
}

// SigningKey is one key of a zone as a KeySigner takes it.
type SigningKey struct {
	// DNSKEY is the key's public half, as the DNSKEY RRset holds it: flags 257 (SEP) for a KSK
	// or a CSK, 256 for a ZSK.
	DNSKEY *dns.DNSKEY
	// Role is KSK, ZSK or CSK: a KSK signs the DNSKEY RRset, a ZSK every other, a CSK both.
	Role string
	// PrivateKey is the private half in BIND's Private-key-format v1.3, as the key Secret's
	// keyset.json holds it. It is never logged or quoted (String leaves it out).
	PrivateKey string
	// Published: the key is in the DNSKEY RRset. Active: it signs what its Role signs.
	Published, Active bool
}

// String names the key by role, tag and flags, never by its private half.
func (k SigningKey) String() string {
	tag := uint16(0)
	if k.DNSKEY != nil {
		tag = k.DNSKEY.KeyTag()
	}
	return fmt.Sprintf("%s %d (published %t, active %t)", k.Role, tag, k.Published, k.Active)
}

// GoString is String, so that %#v leaves the private half out too.
func (k SigningKey) GoString() string { return k.String() }

// Denial is a signed zone's authenticated denial of existence: NSEC when NSEC3 is nil.
type Denial struct {
	NSEC3 *NSEC3Param
}

// NSEC3Param are the zone's NSEC3 parameters (RFC 5155 §4): SHA-1, no opt-out.
type NSEC3Param struct {
	// Iterations are the extra hash iterations (RFC 9276: 0).
	Iterations uint16
	// Salt in hexadecimal, "" for none.
	Salt string
}

// SignedZone is what a KeySigner serves a signed zone with, where the rollover machine must
// wait for it.
type SignedZone struct {
	// DNSKEYTTL is the TTL of the DNSKEY RRset the provider serves (PowerDNS: the SOA's
	// MINIMUM); a rollover waits at least this long for a DNSKEY RRset to leave resolvers'
	// caches. 0: not known.
	DNSKEYTTL time.Duration
}
