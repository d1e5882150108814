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
//   - the store: copy-on-write snapshots (Snapshot) that readers take without a lock, one
//     writer at a time (Update, CreateZone, DeleteZone, Install) through one publish point,
//     which journals the change (RFC 1995 deltas, bounded) and calls the OnChange hooks;
//   - SOA serials: the clock's Unix seconds or the old serial + 1, compared in RFC 1982 serial
//     arithmetic (SerialNewer);
//   - persistence: one RFC 1035 master file and one JSON sidecar per zone, written atomically
//     under a directory (see Store), or a Backend fed the sharded encoding (EncodeShards,
//     DecodeShards), whose readers install versions with Store.Install.
//
// What it must not do:
//   - open sockets or answer DNS: no listener, no query, no transfer, no NOTIFY;
//   - know about Kubernetes or the provider interface;
//   - keep package-level mutable state: the data belongs to a Store.
package zonedb
