// Package zonedb is the zone database of dnsplane's embedded DNS server: the zones, their
// record sets and metadata, the SOA serial rule, the IXFR journal of each zone, and their
// persistence. It is data only: pkg/dnsserver answers queries from it, pkg/xfr transfers and
// announces its zones, pkg/provider/local adapts it to provider.Provider, and pkg/zonestore is
// a Backend of it (Kubernetes ConfigMaps).
//
// What it owns:
//   - the zone data model: origin, SOA, record sets keyed by (owner, type, set identifier), and
//     the metadata a master file cannot hold (zone ID, caller reference, tags, creation time,
//     set identifiers, weights and opaque per-set labels); the rules a zone must keep (Tx.Put,
//     one CNAME per owner, ...);
//   - one key per owner name: every way into the store (Tx.Put, Get and Delete, Load,
//     DecodeShards) keys owners by dnswire.CanonicalName, so a name written with escapes of
//     ordinary characters or in another case ("esc\097ped", "Escaped") is the name "escaped";
//   - holding only what the server applies: every way in refuses the types whose meaning is
//     processing pkg/dnsserver does not do (unapplied: DNAME, RFC 6672; RRSIG, NSEC and NSEC3,
//     RFC 4035) or that servers do not agree on (NS at a wildcard owner, RFC 4592 §4.2):
//     Tx.Put with ErrInvalidRRSet, Load and DecodeShards by not serving the zone
//     (ErrCorruptZone naming the record), so no zone is served with answers that differ from
//     its data's;
//   - the store: copy-on-write snapshots (Snapshot) that readers take without a lock, one
//     writer at a time (Update, CreateZone, DeleteZone, Install) through one publish point,
//     which journals the change (RFC 1995 deltas, bounded) and calls the OnChange hooks;
//   - SOA serials: the clock's Unix seconds or the old serial + 1, compared in RFC 1982 serial
//     arithmetic (SerialNewer); a renewal (Renew) serves a zone again, unchanged and not
//     persisted, at a newer serial at the start of a signing period;
//   - persistence: one RFC 1035 master file and one JSON sidecar per zone, written atomically
//     under a directory (see Store), or a Backend fed the sharded encoding (EncodeShards,
//     DecodeShards), whose readers install versions with Store.Install.
//
// What it must not do:
//   - open sockets or answer DNS: no listener, no query, no transfer, no NOTIFY;
//   - know about Kubernetes or the provider interface;
//   - keep package-level mutable state: the data belongs to a Store.
package zonedb
