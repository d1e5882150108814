// Package local is the dnsplane.io/local provider: provider.Provider on top
// of the embedded server's zone store (zonedb.Store), so that zones written through it
// are served at once by the manager's own DNS server.
//
// What it owns:
//   - the mapping between provider types and the store: zone IDs (the
//     canonical zone name, see ZoneID), caller references and tags in the
//     zone metadata, ProviderSpecific in the per-set labels;
//   - conditional, all-or-nothing batches: ApplyChanges checks every
//     Change's Before against the current data under the store's write lock;
//   - fault injection (Options.FaultHook) at named points, so that controller
//     tests can simulate a crash, for example between zone creation and the
//     status update, without sleeps.
//
// What it must not do:
//   - know about Kubernetes (Secrets are read by the caller);
//   - serve DNS or bind sockets: that is dnsserver.Server's job;
//   - keep state of its own beyond the store: two Providers over one Store
//     behave as one.
package local
