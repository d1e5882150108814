package dnssec

import (
	"crypto"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/miekg/dns"
)

// Signing defaults: signatures valid for DefaultValidity from the start of the refresh period
// they are made in, which lasts DefaultRefresh; inceptions lie Skew before that start.
const (
	DefaultValidity = 14 * 24 * time.Hour
	DefaultRefresh  = 24 * time.Hour
	Skew            = time.Hour
)

// NSEC3Params are a zone's NSEC3 parameters (RFC 5155 §4): SHA-1, the given iterations and
// salt (hex, "" for none), opt-out off. RFC 9276 §3.1 recommends 0 iterations and no salt.
type NSEC3Params struct {
	Iterations uint16
	Salt       string
}

// Policy is how a zone is signed: its keys, its denial (NSEC, NSEC3 when NSEC3 is set, or
// compact denial when Compact is) and its signatures' validity.
type Policy struct {
	Keys  KeySet
	NSEC3 *NSEC3Params
	// Compact is compact denial of existence (RFC 9824: CompactNXDomain, CompactNoData), for
	// online signers; a zone transfer still carries the NSEC chain (Chain). Not with NSEC3.
	Compact bool
	// Validity is how long a signature is valid from the start of the refresh period it is made
	// in; default DefaultValidity.
	Validity time.Duration
	// Refresh is the least validity a signature served has left (BIND's signatures-refresh):
	// signatures are made anew per signing period of Refresh, or of Validity-Refresh when that
	// is shorter, so a signature served is valid for at least Refresh more (and for at least
	// Validity-Refresh more); default min(DefaultRefresh, Validity/2), and so when it is not
	// below Validity.
	Refresh time.Duration
}

// Window returns the inception and expiration of the signatures made at now, and the end of
// the signing period they belong to (when they are made anew): the period is the shorter of
// Refresh and Validity-Refresh, so that every signature served has at least Refresh left.
func (p Policy) Window(now time.Time) (inception, expiration, renew time.Time) {
	validity, refresh := p.Validity, p.Refresh
	if validity <= 0 {
		validity = DefaultValidity
	}
	if refresh <= 0 || refresh >= validity {
		refresh = min(DefaultRefresh, validity/2)
	}
	period := min(refresh, validity-refresh)
	start := now.UTC().Truncate(period)
	return start.Add(-Skew), start.Add(validity), start.Add(period)
}

// signsKeySet says whether RRsets of type t are signed by the key-signing keys: DNSKEY, CDS
// and CDNSKEY (RFC 7344 §4.1).
func signsKeySet(t uint16) bool {
	return t == dns.TypeDNSKEY || t == dns.TypeCDS || t == dns.TypeCDNSKEY
}

// Sign returns the RRSIGs of rrset (one owner, type and class; a wildcard owner "*.x" gives
// signatures that validate answers synthesised from it, RFC 4035 §5.3.2), one per Active key
// of the right role, made at now: the DNSKEY, CDS and CDNSKEY RRsets by the key-signing keys,
// every other by the zone-signing keys. Their TTL is the RRset's. No key of that role: nil.
func (p Policy) Sign(rrset []dns.RR, now time.Time) ([]dns.RR, error) {
	if len(rrset) == 0 {
		return nil, nil
	}
	h := rrset[0].Header()
	inception, expiration, _ := p.Window(now)
	var out []dns.RR
	for _, k := range p.Keys.Keys {
		if signsKeySet(h.Rrtype) && !k.SignsKeys() || !signsKeySet(h.Rrtype) && !k.SignsZone() {
			continue
		}
		signer, ok := k.Private.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("dnssec: key %d (%s) of %s cannot sign", k.Tag(), k.Role, p.Keys.Zone)
		}
		sig := &dns.RRSIG{
			Hdr:        dns.RR_Header{Ttl: h.Ttl},
			Algorithm:  k.DNSKEY.Algorithm,
			OrigTtl:    h.Ttl,
			Expiration: uint32(expiration.Unix()),
			Inception:  uint32(inception.Unix()),
			KeyTag:     k.Tag(),
			SignerName: p.Keys.Zone,
		}
		if err := sig.Sign(signer, rrset); err != nil {
			return nil, fmt.Errorf("dnssec: signing %s/%s with key %d (%s): %w", h.Name, dns.TypeToString[h.Rrtype], k.Tag(), k.Role, err)
		}
		out = append(out, sig)
	}
	return out, nil
}

// SignAs signs rrset as if its owner were owner (the wildcard an answer was synthesised from)
// and returns the RRSIGs with the RRset's own owner, as an answer carries them.
func (p Policy) SignAs(rrset []dns.RR, owner string, now time.Time) ([]dns.RR, error) {
	if len(rrset) == 0 || owner == "" || owner == rrset[0].Header().Name {
		return p.Sign(rrset, now)
	}
	as := make([]dns.RR, len(rrset))
	for i, rr := range rrset {
		as[i] = dns.Copy(rr)
		as[i].Header().Name = owner
	}
	sigs, err := p.Sign(as, now)
	for _, s := range sigs {
		s.Header().Name = rrset[0].Header().Name
	}
	return sigs, err
}

// ErrNoSigningKey is returned by Check for a key set that signs nothing.
var ErrNoSigningKey = errors.New("dnssec: no Active key signs the zone")

// Check reports whether the policy can sign its zone: an Active key for the DNSKEY RRset and
// one for the others, each with a private key that signs, keys a validator takes (checkKeys:
// protocol 3, the Zone Key flag, the private key the DNSKEY's own, one key per tag, every
// algorithm signing every RRset), and NSEC3 parameters with a salt of whole hex octets (and no
// compact denial beside them).
func (p Policy) Check() error {
	var keys, zone bool
	for _, k := range p.Keys.Keys {
		if _, ok := k.Private.(crypto.Signer); !ok && k.State == Active {
			return fmt.Errorf("dnssec: key %d (%s) of %s cannot sign", k.Tag(), k.Role, p.Keys.Zone)
		}
		keys = keys || k.SignsKeys()
		zone = zone || k.SignsZone()
	}
	if err := checkKeys(p.Keys); err != nil {
		return fmt.Errorf("dnssec: %w", err)
	}
	if p.NSEC3 != nil && p.Compact {
		return fmt.Errorf("dnssec: %s has both NSEC3 and compact denial", p.Keys.Zone)
	}
	if p.NSEC3 != nil {
		if _, err := hex.DecodeString(p.NSEC3.Salt); err != nil || len(p.NSEC3.Salt) > 2*255 {
			return fmt.Errorf("dnssec: NSEC3 salt of %s is not up to 255 hex octets", p.Keys.Zone)
		}
	}
	if !keys || !zone {
		return fmt.Errorf("%w: %s", ErrNoSigningKey, p.Keys.Zone)
	}
	return nil
}
