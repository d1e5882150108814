// Package providertest is the conformance suite every provider.Provider
// must pass: Run(t, Harness) creates zones and record sets through the
// provider and checks, through the provider's own listing and (when the
// harness gives a DNS address) through real DNS queries, that what was
// written is what is served.
//
// What it owns: the observable contract of provider.Provider (idempotent zone
// creation by caller reference, zone conflicts, exact round trips of every
// record type including long and quoted TXT values, large writes within the
// provider's declared limits, conditional writes, typed errors). It runs each
// provider as pkg/provider/factory builds it, guard over counting (Guarded):
// the guard is the only splitter, so a provider whose Capabilities do not
// describe the one request its ApplyChanges sends fails.
//
// What it must not do:
//   - know any provider: differences are read from Capabilities, never from
//     a provider's name or type;
//   - use mocks: the harness hands it a real backend (the embedded server,
//     a PowerDNS container, an HTTP fake speaking a cloud's API);
//   - leave zones behind: every zone it creates is deleted in t.Cleanup.
package providertest
