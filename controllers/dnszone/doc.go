// Package dnszone is the DNSZone controller: it ensures the hosted zone at the provider
// (idempotently, by a caller reference derived from the object's UID), records its ID and name
// servers, polls its SOA over DNS until it answers authoritatively, keeps the parent-link
// DNSEndpoint that delegates it from its parent DNSZone, and on deletion unlinks, removes this
// owner's records and deletes the zone (docs/api.md, "DNSZone").
//
// It must not write records itself: the parent link is a DNSEndpoint that the dnsendpoint
// controller publishes, and record deletion goes through the zone writer.
package dnszone
