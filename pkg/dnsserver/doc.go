// Package dnsserver is dnsplane's embedded authoritative DNS server: a Store
// of zones, persisted under a directory, and a Server answering UDP and TCP
// queries from it with miekg/dns.
//
// What it owns:
//   - the zone data model: origin, SOA, record sets keyed by (owner, type,
//     set identifier), and the metadata a master file cannot hold (zone ID,
//     caller reference, tags, creation time, set identifiers, weights and
//     opaque per-set labels);
//   - persistence: one RFC 1035 master file and one JSON sidecar per zone,
//     written atomically (see Store), or a Backend (pkg/zonestore: Kubernetes
//     objects) fed the sharded encoding (EncodeShards, DecodeShards), whose
//     readers install versions with Store.Install, through the store's one
//     publish point;
//   - answering queries: authoritative answers, NXDOMAIN/NODATA with the SOA
//     (RFC 2308), CNAME chasing within a zone, wildcards (RFC 4592),
//     referrals with glue, EDNS0 (RFC 6891) and truncation by RRset (TC only
//     for required data, RFC 2181 §9, RFC 9471), FORMERR for malformed
//     requests that miekg/dns would read leniently, AXFR to loopback
//     clients, rotation of multi-record answers and weighted choice among
//     record sets that carry a weight;
//   - secondaries: AXFR and IXFR (RFC 1995, from a bounded per-zone journal
//     kept at Store.publish) to loopback and the allowed networks, NOTIFY
//     (RFC 1996) sent after each change (Notifier) and acknowledged when
//     received.
//
// What it must not do:
//   - know about Kubernetes or about the provider interface: the local
//     provider (pkg/provider/local) adapts a Store to provider.Provider;
//   - recurse or forward: names outside every served zone get REFUSED;
//   - keep package-level mutable state: the rotation counter and the random
//     source belong to a Server, the data to a Store;
//   - register metrics globally: NewMetrics registers them with the
//     prometheus.Registerer it is given.
package dnsserver
