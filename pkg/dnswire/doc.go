// Package dnswire holds the DNS rules that dnsplane's server, zone store, zone-transfer unit,
// providers and controllers share, so that each is written once: the two canonical forms of a
// name and the relations between names, canonical order (RFC 4034 §6.1), the check that a record
// goes on the wire (CheckWire), and TSIG keys and their algorithm table (RFC 8945).
//
// A name has two canonical forms, both lower case without surrounding white space; each layer
// uses one:
//   - the dotted form, Fqdn ("www.example.test.", the root "."): names on the wire. The server,
//     the zone store (zonedb), zone transfers and NOTIFY (xfr), dynamic updates and TSIG key
//     names use it, as miekg/dns does;
//   - the dotless form, Dotless ("www.example.test", the root ""): names in the API, in status,
//     in the provider interface (provider.RecordSet and zone names, which provider.ValidateName
//     checks), in plans, in the ownership registry and in Gslb. A provider that speaks the dotted
//     form to its backend converts with Fqdn at its edge.
//
// Fqdn and Dotless turn either form into either; IsSubdomain, IsStrictSubdomain and Parent take
// a name in either form, compare label by label (an escaped dot, `a\.b`, is no label boundary)
// and case-insensitively; Parent answers in the form it is given.
//
// What it owns:
//   - Fqdn, Dotless, IsSubdomain, IsStrictSubdomain and Parent: the two forms and the relations;
//   - CanonicalKey: the key the zone store orders names by;
//   - CanonicalName and LookupName: a name in the dotted form with the escapes a master file or
//     an API may write resolved to the presentation form a name read off the wire has, the zone
//     store's key for owner names and the server's for the targets it follows;
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
