// Package plan turns one contributor's desired record sets, a zone's current
// record sets and the zone's TXT registry into the changes that make the
// zone match, without ever touching what someone else holds (dnsplane API
// contract, "Ownership: the TXT registry").
//
// What it owns:
//   - the ownership rules at write time: names held by no registry record,
//     by a foreign (external-dns) or malformed one, or (for single-owner
//     DNSEndpoints) by another contributor are conflicts, never writes;
//   - the merge of shared (DNSRecord) record sets: the union of every
//     contributor's registry targets, the smallest TTL, deletion only when
//     the last contributor leaves;
//   - the order of changes (registry claims first, registry releases last,
//     deletions before creations) and their Before sets, which make the
//     writes conditional;
//   - plan IDs (ID), the hash a DryRun approval names;
//   - external-dns' --policy (Policy) and the takeover of an external-dns
//     owner's record sets (ExternalDNS), ordered so that a set is never
//     absent nor holds a value neither side wanted.
//
// What it must not do:
//   - perform I/O or read a clock: Compute is a pure function of its Input,
//     and the same Input always gives the same Result;
//   - decide heartbeats: it never adds, changes or removes a heartbeat, it
//     only preserves the one it finds (the heartbeat reporter writes them);
//   - know Kubernetes or a provider's name: the caller maps objects to
//     record sets and Results to conditions, and the zone writer applies
//     the changes;
//   - hold package-level mutable state.
package plan
