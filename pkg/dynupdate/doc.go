// Package dynupdate is the pure core of RFC 2136 dynamic updates on the embedded DNS server's
// address (docs/design.md, "Dynamic updates").
//
// What it owns:
//   - the TSIG key of a dnsplane.io/tsig Secret (ParseKey) and the key set every replica
//     verifies UPDATEs against (Keyring, Binding);
//   - a binding's policy: which owner names and types a key may change in a zone (Policy);
//   - reading an UPDATE message into its zone, prerequisites and changes (Parse, RFC 2136 §2,
//     §3.1, §3.4.1), evaluating prerequisites (CheckPrereqs, §2.4, §3.2), applying changes to
//     the record sets written through dynamic updates (Apply, §3.4.2), and converting those
//     record sets to and from DNSEndpoint endpoints (Endpoints, FromEndpoints).
//
// What it must not do:
//   - perform I/O, read a clock or hold package-level mutable state: messages, Secrets' data
//     and record sets come in, rcodes, changes and endpoints go out;
//   - decide where the records go: writing the DNSEndpoint and waiting for the provider is the
//     applier's job (controllers/dynupdate), answering on the wire the server's (pkg/dnsserver).
package dynupdate
