package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DNSSEC says whether and how a zone is signed (docs/dnssec.md). enabled: true with every
// other field defaulted signs the zone with one ECDSAP256SHA256 CSK and NSEC.
//
// +kubebuilder:validation:XValidation:rule="!has(self.signatureRefreshSeconds) || !has(self.signatureValiditySeconds) || self.signatureRefreshSeconds * 2 <= self.signatureValiditySeconds",message="signatureRefreshSeconds must be at most half of signatureValiditySeconds"
// +kubebuilder:validation:XValidation:rule="!oldSelf.enabled || (has(self.algorithm) ? self.algorithm : 'ECDSAP256SHA256') == (has(oldSelf.algorithm) ? oldSelf.algorithm : 'ECDSAP256SHA256')",message="algorithm may change only while enabled is false: turn DNSSEC off, wait for the Secure reason Unsigned, change the algorithm, turn it on (docs/dnssec.md)"
type DNSSEC struct {
	// Enabled signs the zone where its provider signs (Secure condition); false leaves it
	// unsigned (Secure=False, reason Unsigned).
	Enabled bool `json:"enabled"`

	// Algorithm of every key: ECDSAP256SHA256 (13, the default), ED25519 (15) or RSASHA256
	// (8, 2048-bit keys). It may change only while enabled is false (no algorithm rollover):
	// turn DNSSEC off, wait for the Secure reason Unsigned, change it, turn DNSSEC on.
	// +optional
	// +kubebuilder:default=ECDSAP256SHA256
	Algorithm DNSSECAlgorithm `json:"algorithm,omitempty"`

	// Keys is the key scheme and the keys' lifetimes. Default: one CSK.
	// +optional
	// +kubebuilder:default={scheme: CSK}
	Keys DNSSECKeys `json:"keys,omitzero"`

	// Denial is how the zone proves that a name or type does not exist. Default: NSEC.
	// +optional
	// +kubebuilder:default={type: NSEC}
	Denial DNSSECDenial `json:"denial,omitzero"`

	// SignatureValiditySeconds is how long an RRSIG is valid from its inception: from 3600
	// (one hour) to 7776000 (90 days). Default: 1209600 (14 days).
	// +optional
	// +kubebuilder:default=1209600
	// +kubebuilder:validation:Minimum=3600
	// +kubebuilder:validation:Maximum=7776000
	SignatureValiditySeconds int64 `json:"signatureValiditySeconds,omitempty"`

	// SignatureRefreshSeconds: an RRSIG is replaced by a new one once less than this is left
	// of its validity (BIND's signatures-refresh): every RRSIG served has at least this left.
	// At most half of signatureValiditySeconds, at least 600. Default: 604800 (7 days).
	// +optional
	// +kubebuilder:default=604800
	// +kubebuilder:validation:Minimum=600
	// +kubebuilder:validation:Maximum=7776000
	SignatureRefreshSeconds int64 `json:"signatureRefreshSeconds,omitempty"`
}

// DNSSECAlgorithm is a DNSSEC signing algorithm by its IANA mnemonic.
// +kubebuilder:validation:Enum=ECDSAP256SHA256;ED25519;RSASHA256
type DNSSECAlgorithm string

// The DNSSEC algorithms.
const (
	AlgorithmECDSAP256SHA256 DNSSECAlgorithm = "ECDSAP256SHA256"
	AlgorithmED25519         DNSSECAlgorithm = "ED25519"
	AlgorithmRSASHA256       DNSSECAlgorithm = "RSASHA256"
)

// DNSSECKeys is the key scheme and the lifetimes of its keys. A lifetime of 0 means the key
// is never rolled by lifetime (only by hand); otherwise it is at least 3600 seconds. A
// lifetime that is absent takes its default: 31536000 (365 days) for a CSK or a KSK, 2592000
// (30 days) for a ZSK (DNSSECKeys.Lifetime).
//
// +kubebuilder:validation:XValidation:rule="!has(self.cskLifetimeSeconds) || !has(self.scheme) || self.scheme == 'CSK'",message="cskLifetimeSeconds applies only to scheme CSK"
// +kubebuilder:validation:XValidation:rule="(!has(self.kskLifetimeSeconds) && !has(self.zskLifetimeSeconds)) || (has(self.scheme) && self.scheme == 'KSKZSK')",message="kskLifetimeSeconds and zskLifetimeSeconds apply only to scheme KSKZSK"
// +kubebuilder:validation:XValidation:rule="!has(self.source) || self.source == 'Generated' || (!has(self.cskLifetimeSeconds) && !has(self.kskLifetimeSeconds) && !has(self.zskLifetimeSeconds))",message="key lifetimes apply only to source Generated: copied keys roll over where they are generated"
type DNSSECKeys struct {
	// Source is where the zone's keys come from. Generated (the default): this cluster's
	// controller makes them in the key Secret <dnszone>-dnssec and runs their rollovers.
	// Copied: the key Secret is copied in by the admin from the cluster that generates the
	// keys of the same zone (a Gslb zone, which every cluster's server answers); the
	// controller never makes, rolls or writes keys, and the zone is signed with the key set
	// as copied (docs/dnssec.md, "Gslb zones").
	// +optional
	// +kubebuilder:default=Generated
	Source DNSSECKeySource `json:"source,omitempty"`

	// Scheme is CSK (one combined signing key, the default) or KSKZSK (a key-signing key for
	// the DNSKEY RRset and a zone-signing key for the rest).
	// +optional
	// +kubebuilder:default=CSK
	Scheme DNSSECKeyScheme `json:"scheme,omitempty"`

	// CSKLifetimeSeconds is the CSK's lifetime (scheme CSK). Default: 31536000 (365 days).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == 0 || self >= 3600",message="a key lifetime is 0 (no rollover by lifetime) or at least 3600 seconds"
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=315360000
	CSKLifetimeSeconds *int64 `json:"cskLifetimeSeconds,omitempty"`

	// KSKLifetimeSeconds is the KSK's lifetime (scheme KSKZSK). Default: 31536000 (365 days).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == 0 || self >= 3600",message="a key lifetime is 0 (no rollover by lifetime) or at least 3600 seconds"
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=315360000
	KSKLifetimeSeconds *int64 `json:"kskLifetimeSeconds,omitempty"`

	// ZSKLifetimeSeconds is the ZSK's lifetime (scheme KSKZSK). Default: 2592000 (30 days).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == 0 || self >= 3600",message="a key lifetime is 0 (no rollover by lifetime) or at least 3600 seconds"
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=315360000
	ZSKLifetimeSeconds *int64 `json:"zskLifetimeSeconds,omitempty"`
}

// DNSSECKeySource is Generated or Copied.
// +kubebuilder:validation:Enum=Generated;Copied
type DNSSECKeySource string

// The key sources.
const (
	KeySourceGenerated DNSSECKeySource = "Generated"
	KeySourceCopied    DNSSECKeySource = "Copied"
)

// DNSSECKeyScheme is CSK or KSKZSK.
// +kubebuilder:validation:Enum=CSK;KSKZSK
type DNSSECKeyScheme string

// The key schemes.
const (
	KeySchemeCSK    DNSSECKeyScheme = "CSK"
	KeySchemeKSKZSK DNSSECKeyScheme = "KSKZSK"
)

// DNSSECDenial is the zone's authenticated denial of existence.
//
// +kubebuilder:validation:XValidation:rule="!has(self.nsec3) || (has(self.type) && self.type == 'NSEC3')",message="nsec3 applies only to denial type NSEC3"
type DNSSECDenial struct {
	// Type is NSEC (RFC 4034, the default), NSEC3 (RFC 5155, hashed names) or Compact
	// (compact denial of existence, RFC 9824: one NSEC per answer, made at query time). Compact
	// needs a signer that answers online (the embedded server); other providers report
	// Secure=False, reason NotSupported.
	// +optional
	// +kubebuilder:default=NSEC
	Type DenialType `json:"type,omitempty"`

	// NSEC3 are the NSEC3 parameters (type NSEC3 only). Default: 0 extra iterations and no
	// salt, as RFC 9276 recommends.
	// +optional
	NSEC3 *NSEC3Parameters `json:"nsec3,omitempty"`
}

// DenialType is NSEC, NSEC3 or Compact.
// +kubebuilder:validation:Enum=NSEC;NSEC3;Compact
type DenialType string

// The denial types.
const (
	DenialNSEC    DenialType = "NSEC"
	DenialNSEC3   DenialType = "NSEC3"
	DenialCompact DenialType = "Compact"
)

// NSEC3Parameters are the zone's NSEC3PARAM values.
type NSEC3Parameters struct {
	// Iterations are the extra hash iterations, 0 to 50. Default and RFC 9276's
	// recommendation: 0; validators may treat a zone with more as insecure.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=50
	Iterations int32 `json:"iterations,omitempty"`

	// Salt in hexadecimal, at most 255 octets (510 digits). Default: none, as RFC 9276
	// recommends.
	// +optional
	// +kubebuilder:validation:MaxLength=510
	// +kubebuilder:validation:Pattern=`^([0-9a-fA-F]{2})*$`
	Salt string `json:"salt,omitempty"`
}

// The key lifetimes that apply when DNSSECKeys leaves them out, in seconds.
const (
	DefaultKSKLifetimeSeconds int64 = 365 * 24 * 3600
	DefaultZSKLifetimeSeconds int64 = 30 * 24 * 3600
)

// DNSSECStatus is the zone's signing state as the DNSZone controller last saw it. It never
// holds key material: keys are named by tag.
type DNSSECStatus struct {
	// Keys are the zone's DNSSEC keys, from its key Secret (<dnszone>-dnssec).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Keys []DNSSECKeyStatus `json:"keys,omitempty"`

	// DS is the DS set the parent publishes (or is to publish) for this zone, in presentation
	// format: what to give a registrar when the parent is not a DNSZone dnsplane manages.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	DS []string `json:"ds,omitempty"`

	// RolloverPhase is the step of the key rollover in progress; absent when none is.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	RolloverPhase string `json:"rolloverPhase,omitempty"`

	// NextRollover is when the first active key reaches the end of its lifetime; absent when no
	// key has a lifetime.
	// +optional
	NextRollover *metav1.Time `json:"nextRollover,omitempty"`
}

// DNSSECKeyStatus is one DNSSEC key of the zone, named by its tag; never its key material.
type DNSSECKeyStatus struct {
	// Tag is the key's tag (RFC 4034 Appendix B).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	Tag int32 `json:"tag"`
	// Algorithm is the key's algorithm mnemonic, such as ECDSAP256SHA256.
	// +kubebuilder:validation:MaxLength=32
	Algorithm string `json:"algorithm"`
	// Role is CSK, KSK or ZSK.
	// +kubebuilder:validation:MaxLength=8
	Role string `json:"role"`
	// State is Published (in the DNSKEY set, signing nothing yet), Active (signing) or Retired
	// (in the DNSKEY set, signing nothing any more).
	// +kubebuilder:validation:MaxLength=16
	State string `json:"state"`
	// Since is when the key entered its state.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// Lifetime is the lifetime, in seconds, of a key of role CSK, KSK or ZSK under these
// settings, with the defaults applied; 0 = never rolled by lifetime.
func (k DNSSECKeys) Lifetime(role string) int64 {
	pick := func(p *int64, def int64) int64 {
		if p == nil {
			return def
		}
		return *p
	}
	switch role {
	case "CSK":
		return pick(k.CSKLifetimeSeconds, DefaultKSKLifetimeSeconds)
	case "KSK":
		return pick(k.KSKLifetimeSeconds, DefaultKSKLifetimeSeconds)
	case "ZSK":
		return pick(k.ZSKLifetimeSeconds, DefaultZSKLifetimeSeconds)
	}
	return 0
}
