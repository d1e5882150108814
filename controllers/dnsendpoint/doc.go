// Package dnsendpoint is the DNSEndpoint controller. It publishes any DNSEndpoint, user-made or a
// DNSZone's parent link, through the zone writers: it chooses a zone per endpoint, plans against
// the zone's current record sets and TXT registry under the single-owner rule, applies the plan
// (FullSync), only records it (DryRun, until approvedPlan matches), or does nothing (Disabled),
// and removes the object's records when it is deleted (docs/api.md, "DNSEndpoint").
//
// It must not call a provider's write methods directly, nor touch a name it does not own.
package dnsendpoint
