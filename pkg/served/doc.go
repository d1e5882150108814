// Package served answers the question an SRE asks after a write: does every authoritative name
// server of the zone answer it yet? It owns the check behind the Served condition of
// DNSEndpoint and DNSRecord (docs/served.md): the serial that carries a change (the primary's
// SOA serial read after the write), one SOA query per name server to see whether it has reached
// that serial (RFC 1982 serial arithmetic), the verdict (Served, Propagating, Stale,
// Unreachable), and the write-to-served metrics.
//
// For a provider whose serial says nothing but whose API reports when a change is served
// everywhere (Route 53's GetChange, provider.ChangeSync), the same tracker asks that instead
// (ChangeZone), with seconds of acknowledgement as the serials.
//
// It checks by zone, not by record: however many objects a zone's batch carried, a check asks
// each server one SOA query, and only the servers still behind are asked again. A zone without
// a change waiting to be served within its stale deadline is never queried (0 queries in steady
// state). Where a write may keep the serial (PowerDNS), the primary is read just before the
// write too (Baseline), and a write that did not move it is served only once the serial moves;
// a secondary ahead of its primary does not count as serving a change. The guarantee and its
// corollaries are docs/served.md's invariants; a property test holds the tracker to them.
//
// For a signed zone (Zone.Keys: its keys that sign the SOA), each server is asked the SOA with
// the DO bit set, and serves a serial only when its answer carries an RRSIG over the SOA by the
// zone with one of those keys, valid at the time (Unsigned says why not): a server that answers
// the zone unsigned does not serve its changes.
//
// It must not write to a provider, read a zone's records from a provider, nor import the API
// types or controller-runtime: the
// controllers map a Verdict to their conditions and adapt its notices to their work queues.
package served
