// Package pdns implements provider.Provider over the HTTP API of PowerDNS
// Authoritative (4.7 and later): http://<root>/api/v1/servers/<id>, with the
// X-API-Key header. It is the provider behind Secrets of type
// dnsplane.io/pdns (PDNS_API_URL, PDNS_API_KEY, PDNS_SERVER_ID,
// PDNS_NAMESERVERS); reading the Secret is the factory's job, not this
// package's.
//
// What it owns:
//   - the translation between dnsplane's canonical RecordSets (names without
//     trailing dot, TXT as one logical value) and PowerDNS rrsets (absolute
//     names with trailing dots, TXT as quoted character-strings);
//   - zone identity: a zone's ID is the PowerDNS zone id ("c1.example.test.");
//   - EnsureZone's idempotency. PowerDNS has no tags, so the caller reference
//     is written atomically with the zone into its "account" field and
//     mirrored, with the tags, into zone metadata of kinds
//     X-DNSPLANE-CALLER-REFERENCE and X-DNSPLANE-TAG ("key=value" items).
//     A zone of the same name whose caller reference differs, or that has
//     none, is a provider.ErrZoneConflict;
//   - the SOA of the zones it creates: MNAME the zone's first name server,
//     RNAME hostmaster.<zone> (RFC 1035 §3.3.13), never PowerDNS'
//     default-soa-content placeholder;
//   - the mapping of HTTP status codes onto provider's typed errors
//     (401/403 ErrInvalidCredentials, 404 ErrZoneNotFound, 422
//     ErrInvalidChange with PowerDNS' own message, 429 and every 5xx
//     ThrottledError: 500 "database is locked" is a busy sqlite backend);
//   - Capabilities().MaxWritesInFlight, one PATCH at a time by default
//     (Config.MaxWritesInFlight, the Secret key PDNS_MAX_WRITES_IN_FLIGHT).
//   - the keys a DNSSEC zone is signed with (SetKeys, provider.KeySigner):
//     the zone's cryptokeys made exactly the keys handed over, matched by
//     DNSKEY, imported with their private keys, activated and published
//     before others are lowered or deleted; the zone's NSEC3PARAM; a rectify
//     after a change (docs/dnssec.md, "PowerDNS").
//
// What it must not do:
//   - log, return or wrap the API key anywhere (errors carry method, path,
//     status and PowerDNS' message only);
//   - issue a request without a deadline: every call runs under
//     Config.Timeout (default 30 s) on top of the caller's context;
//   - pretend to have conditional writes or weighted routing: PowerDNS has
//     neither, so Capabilities says so and weighted sets are ErrNotCapable.
//     Without conditional writes, ApplyChanges reads the shared sets it
//     changes (provider.Change.Shared: DNSRecord sets) just before its PATCH
//     and applies each change as a delta of targets onto them
//     (read-merge-write), so a target another writer added meanwhile is
//     kept, and reads them again after the PATCH to fail the write with
//     provider.ErrConflict when another writer's PATCH dropped a target it
//     added; single-owner sets (DNSEndpoint), registry records and
//     single-valued types (CNAME, DNAME) are replaced as they come, with no
//     read. A Create of a record set (a new claim) is checked by that same
//     read before the PATCH: a set another owner created since the caller's
//     read (external-dns) fails the write with provider.ErrConflict instead
//     of being overwritten (see ApplyChanges);
//   - know about Kubernetes.
//
// ProviderSpecific options are not stored (PowerDNS has nowhere to keep
// them per rrset); ListRecordSets returns them nil.
package pdns
