// Package provider defines the contract between dnsplane's controllers and
// one DNS hosting API: the Provider interface, its value types (Zone,
// RecordSet, Change), the Capabilities a provider declares, the typed errors
// callers branch on, and pure helpers every provider shares (name validation,
// target canonicalisation, TXT chunking, conversion to and from miekg/dns records,
// ValidateChanges and SplitBatches).
//
// What it owns:
//   - the canonical forms of names and targets: names in dnswire's dotless
//     form (dnswire.Dotless, checked by ValidateName), targets as
//     CanonicalTarget gives them; every Provider accepts and returns only
//     those;
//   - the rule every change obeys by its Action (ValidateChanges), which each
//     provider completes with its own SideCheck;
//   - the batch arithmetic of SplitBatches (ChangeCost, ValueBytes, and the
//     optional RequestSizer a provider implements where only it can count
//     exactly), so that no provider re-implements its cloud's request
//     limits. Its one caller is pkg/provider/guard: a Provider's ApplyChanges
//     is one request, and each Capabilities describes that request; so are
//     the deletions of a ZoneDrainer before DeleteZone.
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
