// Package dynupdate turns RFC 2136 UPDATEs received by the embedded DNS server into
// DNSEndpoints (docs/design.md, "Dynamic updates"; docs/api.md).
//
// What it owns:
//   - the keys controller (Keys), run on every replica: it reads each DNSZone's
//     spec.dynamicUpdates Secrets by name (never listed or watched; again every KeyReread)
//     into the replica's keyring (only for a DNSZone that holds its zone), and on the leader
//     writes the DNSZone's DynamicUpdatesReady condition;
//   - the applier (Applier, the embedded server's dnsserver.UpdateHandler): it checks the
//     UPDATE against the key's binding (pkg/dynupdate), rate-limits per key, writes one
//     DNSEndpoint per owner name, key and DNSZone, waits for the DNSEndpoint controller to
//     report the provider's answer, undoes the writes of a refused UPDATE, relays the UPDATE of
//     a Gslb zone to the Gslb's peers, and answers (the server answers a retransmission from its
//     first copy's answer); metrics and Events per key;
//   - the expiry controller (Expiry), on the leader: it deletes those DNSEndpoints once their
//     dnsplane.io/dynamic-update-expires annotation has passed.
//
// What it must not do:
//   - write DNS itself: the records go through the DNSEndpoint controller, its plan, registry
//     and zone writer, like every DNSEndpoint;
//   - parse DNS messages or decide policy: that is pkg/dynupdate's;
//   - log, record or export a TSIG secret.
package dynupdate
