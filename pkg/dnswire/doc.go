// Package dnswire holds the DNS rules that dnsplane's server, zone store, zone-transfer unit and
// providers share, so that each is written once: canonical names (lower case, trailing dot,
// RFC 4034 §6.1 order), the check that a record goes on the wire (CheckWire), and TSIG keys and
// their algorithm table (RFC 8945).
//
// What it owns:
//   - Canonical, Parent and CanonicalKey: the name forms the zone store keys and orders by;
//   - CanonicalName and LookupName: a name in the one presentation form a name read off the wire
//     has (escapes of ordinary characters resolved, lower case), the zone store's key for owner
//     names and the server's for the targets it follows; IsSubDomain on names in that form,
//     without allocating;
//   - CheckWire: whether miekg/dns can pack a record and read it back;
//   - TSIGProvider and HMAC: signing and verifying with keys that change while a server runs
//     (the dynamic-update keys, docs/design.md "Dynamic updates");
//   - TSIGKey, NewTSIGKey, TSIGAlgorithm, TSIGFudge: the key shared with secondaries (the
//     embedded server) or with a primary (the rfc2136 provider), and the HMAC algorithms
//     accepted by name.
//
// What it must not do: hold state, do I/O (no sockets, no files), or know about zones, the
// provider interface or Kubernetes. It imports miekg/dns and the standard library only.
package dnswire
