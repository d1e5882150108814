// Package registry is dnsplane's TXT ownership registry: who contributed
// what to which record set of a zone (dnsplane API contract, "Ownership: the
// TXT registry").
//
// What it owns:
//   - the registry value format (Entry, Encode, Parse): one URL-query-style
//     TXT string per contributor per managed record set, for every kind;
//   - the registry record names (Name, IsRegistryName): deterministic, never
//     at or below a zone cut, distinct per contributor, valid for wildcards
//     and never equal to a managed name (so never beside a CNAME);
//   - reading a zone's registry (NewIndex): every contributor's entries per
//     managed record set, the malformed registry records (whose names are
//     then foreign) and, best effort, external-dns' registry records, so that
//     a conflict can name their owner.
//
// What it must not do:
//   - perform I/O or read a clock: record sets come in, values and record
//     sets go out, and heartbeat times are passed in by the caller;
//   - decide what to write: comparing desired and current state is
//     pkg/plan's job; this package only says who holds what;
//   - hold package-level mutable state, or panic on any input a zone can
//     hold (Parse is fuzzed).
package registry
