// Package rfc2136 implements provider.Provider over RFC 2136 dynamic updates
// and AXFR zone transfers, both signed with TSIG (RFC 8945), against any
// authoritative server that speaks them (BIND, Knot). It is the provider
// behind Secrets of type dnsplane.io/rfc2136 (RFC2136_HOST, RFC2136_PORT,
// RFC2136_TSIG_KEYNAME, RFC2136_TSIG_SECRET, RFC2136_TSIG_ALGORITHM); reading
// the Secret is the factory's job, not this package's.
//
// What it owns:
//   - zone identity: a zone's ID is its canonical name ("c1.example.test").
//     RFC 2136 cannot create zones, so DNSZones on it adopt an existing zone
//     (spec.zoneID): EnsureZone and DeleteZone return provider.ErrNotCapable
//     (an adopted zone is never deleted by dnsplane), ListZones returns
//     provider.ErrNotCapable (the protocol cannot enumerate zones), and
//     GetZone checks the zone by an SOA query;
//   - reading a zone: ListRecordSets is one TSIG-signed AXFR, grouped with
//     provider.GroupRRs (the apex SOA included, once);
//   - writing: ApplyChanges sends one UPDATE message over TCP; pkg/provider/guard
//     splits larger writes by Capabilities so that each fits one 64 KiB TCP
//     DNS message (RFC 1035 §4.2.2). Each UPDATE is atomic and conditional (RFC 2136 §2.4 prerequisites):
//     a Create requires "RRset does not exist", an Update or Delete requires
//     "RRset exists (value dependent)" with Before's records, so a stale
//     Before fails the whole message with NXRRSET and nothing of it applies;
//   - the mapping of DNS errors onto provider's typed errors: NXRRSET and
//     YXRRSET are provider.ErrConflict; TSIG failures (BADKEY, BADSIG,
//     BADTIME, an unverifiable answer) are provider.ErrInvalidCredentials;
//     NOTAUTH and REFUSED are provider.ErrZoneNotFound when the server does
//     not serve the zone, else provider.ErrInvalidCredentials.
//
// What it must not do:
//   - log, return or wrap the TSIG secret;
//   - exchange a message without a deadline: every query, transfer and
//     update runs under Config.Timeout (default 30 s) on top of the caller's
//     context;
//   - pretend to have weighted routing (weighted sets are
//     provider.ErrNotCapable) or to manage the SOA (SOA changes are
//     provider.ErrInvalidChange; the server owns the serial);
//   - know about Kubernetes.
//
// Known gap: RFC 2136 prerequisites compare record data, never TTLs. A
// Before whose TTL alone is stale is detected by an AXFR read just before the
// UPDATE, which is not atomic with it (a concurrent TTL-only change in
// between is overwritten). ProviderSpecific options are not stored.
package rfc2136
