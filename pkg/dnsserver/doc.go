// Package dnsserver is dnsplane's embedded authoritative DNS server: a Server answering UDP and
// TCP queries with miekg/dns from the zones of a zonedb.Store.
//
// What it owns:
//   - listening: UDP sockets sharing a port with SO_REUSEPORT, batched reads and writes on
//     Linux (recvmmsg/sendmmsg), TCP, draining before shutdown;
//   - answering queries: authoritative answers, NXDOMAIN/NODATA with the SOA
//     (RFC 2308), CNAME chasing within a zone, wildcards (RFC 4592),
//     referrals with glue, EDNS0 (RFC 6891) and truncation by RRset (TC only
//     for required data, RFC 2181 §9, RFC 9471), FORMERR for malformed
//     requests that miekg/dns would read leniently, rotation of multi-record
//     answers and weighted choice among record sets that carry a weight;
//   - following names as one name however they are written: the targets of CNAME, NS, MX and
//     SRV records are looked up in their canonical form (dnswire.LookupName), the form the
//     zone store keys owners by (dnswire.CanonicalName), so "esc\097ped" and "Escaped" reach
//     the node "escaped" (RFC 1035 §5.1, RFC 4343);
//   - geo answers: among record sets labelled as geo sets (pkg/geo's labels) of the asked type,
//     the one of the client's geo tag (else the default's, else the first), located by the EDNS Client Subnet option (RFC 7871) or the query's
//     source address, with the option echoed back with the answer's scope; such answers are
//     cached per (scope, geo tag) and database generation, never under the plain key, and the
//     UDP read loop answers the cached ones by the query's ECS option or source address;
//   - online DNSSEC signing of the zones given a dnssec.Policy (Server.SetSigning): answers to
//     requests with the DO bit carry the RRSIGs of their answer and authority RRsets, the
//     DNSKEY RRset at the apex, DS or its denial at referrals, and NSEC or NSEC3 denial
//     (dnssec.go, docs/dnssec.md); the signing lives in pkg/dnssec;
//   - the packed-answer cache of each store snapshot and signing state, and the UDP read loop that answers its
//     hits;
//   - handing AXFR, IXFR and NOTIFY requests to the transfer unit (pkg/xfr, behind the narrow
//     transferHandler interface), with the client's address and TSIG status, which it
//     verifies (RFC 8945) and signs answers with;
//   - verifying UPDATEs (RFC 2136) against the transfer key and the dynamic-update keys, within
//     a time window of at most 300 s, answering TSIG failures with their TSIG error (RFC 8945
//     §5.2), handing each signed UPDATE once to the update unit (controllers/dynupdate, behind
//     UpdateHandler) and its replays inside the window the first answer (replays), and the
//     placeholder SOA of a zone with dynamic updates it does not serve (zoneSOA).
//
// What it must not do:
//   - hold or persist zone data: that is pkg/zonedb's (zones, serials, journal, files);
//   - transfer zones or send NOTIFY: that is pkg/xfr's;
//   - know about Kubernetes or about the provider interface: the local
//     provider (pkg/provider/local) adapts a zonedb.Store to provider.Provider;
//   - recurse or forward: names outside every served zone get REFUSED;
//   - keep package-level mutable state: the rotation counter and the random
//     source belong to a Server;
//   - register metrics globally: NewMetrics registers them with the
//     prometheus.Registerer it is given.
package dnsserver
