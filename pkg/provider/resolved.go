package provider

import "errors"

// ErrProviderNotFound: a provider Secret is missing, or its type names no provider of this build
// (docs/api.md, "Provider credentials"; reason ProviderNotFound). The resolver of the composition
// root (pkg/provider/factory) wraps it; the controllers test it with errors.Is, without
// importing that resolver or any provider implementation.
var ErrProviderNotFound = errors.New("provider not found")

// Resolved is a provider ready for use, as the composition root's resolver (pkg/provider/factory)
// builds it from a DNSZone's provider Secret.
type Resolved struct {
	// Provider talks to the DNS API.
	Provider Provider
	// Account identifies the provider account for zone writers: "<namespace>/<secret name>".
	Account string
	// DNSAddress is host:port for SOA and NS queries of this provider's zones; empty means the
	// zones' own name servers on port 53.
	DNSAddress string
	// ServedBy are host:port of the name servers the Served check asks for a zone's SOA serial,
	// the primary first (the one whose serial after a write carries it), then its secondaries;
	// empty when the provider's serials say nothing of what it serves (a cloud provider, or a
	// Secret without DNS_ADDRESS), so that the check is not made (docs/served.md).
	ServedBy []string
	// ChangeSync, when set, is the provider itself where its API says when a write is served
	// everywhere (Route 53's GetChange): the Served check asks it instead of name servers.
	ChangeSync ChangeSync
	// Signer, when set, is the provider's ManagedSigner where it signs zones with keys it holds
	// (Route 53, Cloud DNS, Azure DNS), behind the same guard and counting as Provider
	// (ManagedSignerOf).
	Signer ManagedSigner
	// KeySigner, when set, is the provider's KeySigner where it signs zones with keys dnsplane
	// holds (PowerDNS's cryptokeys), behind the same guard and counting as Provider
	// (KeySignerOf): the DNSZone controller makes the keys and hands each rollover step's key
	// set to it (docs/dnssec.md, "PowerDNS").
	KeySigner KeySigner
	// KSKRoller, when set, is the provider's KSKRoller where the DNSZone controller rolls the
	// key-signing keys the provider holds (Route 53), behind the same guard and counting as
	// Provider (KSKRollerOf).
	KSKRoller KSKRoller
	// SerialMayStay: a write that changes records may leave the zone's SOA serial where it was
	// (PowerDNS, whose zone's SOA-EDIT-API may be empty), so the Served check compares the
	// serial after a write with one read just before it. False where every change moves the
	// serial and only a write that changes nothing keeps it (the embedded server, RFC 2136
	// §3.7).
	SerialMayStay bool
	// SignedByServer: the zones of this provider may be signed by their own server (RFC 2136 to
	// BIND with dnssec-policy, a webhook provider's backend); the DNSZone controller reads such
	// a zone's DNSKEY set over DNS and publishes its DS (docs/dnssec.md).
	SignedByServer bool
	// Backend identifies the DNS account the Secret reaches, without credentials
	// (pkg/provider/factory.Backend): a zone ID names one hosted zone within it, whichever
	// Secret reaches it.
	Backend string
}
