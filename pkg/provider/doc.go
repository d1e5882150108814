// Package provider defines the contract between dnsplane's controllers and
// one DNS hosting API: the Provider interface, its value types (Zone,
// RecordSet, Change), the Capabilities a provider declares, the typed errors
// callers branch on, and pure helpers every provider shares (name and target
// canonicalisation, TXT chunking, conversion to and from miekg/dns records,
// and SplitBatches).
//
// What it owns:
//   - the canonical forms of names and targets (see CanonicalName and
//     CanonicalTarget): every Provider accepts and returns only those;
//   - the batch arithmetic of SplitBatches, so that no provider re-implements
//     its cloud's request limits differently.
//
// What it must not do:
//   - know anything about Kubernetes (no k8s.io imports, no Secrets, no
//     conditions): providers are configured by their own constructors;
//   - hold package-level mutable state or perform I/O: everything here is
//     pure, and table-tested;
//   - branch on a provider's name. Differences between clouds are expressed
//     as Capabilities, never as special cases in callers.
//
// Every implementation must pass the conformance suite in
// pkg/provider/providertest.
package provider
