package provider

// Capabilities is what a provider can do, and the limits of one write
// request. Callers (the zone writer) never branch on a provider's name, only
// on these fields.
type Capabilities struct {
	// MaxChangesPerBatch is the most ResourceRecord elements (individual
	// records, not record sets) one write request may carry; 0 = unlimited.
	// SplitBatches counts a Create as len(After.Targets), a Delete as
	// len(Before.Targets), and an Update as len(Before)+len(After) (a DELETE
	// plus a CREATE, what every provider here sends; see ChangeCost), unless
	// the provider counts exactly (RequestSizer).
	//   - Route 53: 1,000 ResourceRecord elements per ChangeResourceRecordSets
	//     request (AWS Route 53 API Reference, ChangeResourceRecordSets,
	//     "Limits"; Developer Guide, "Quotas on API requests").
	//   - Cloud DNS: the project quotas rrsetAdditionsPerChange and
	//     rrsetDeletionsPerChange (Cloud DNS API projects.get, Quota).
	//   - PowerDNS (one PATCH carries any number of rrsets) and the embedded
	//     server: 0.
	MaxChangesPerBatch int
	// MaxValueBytesPerBatch is the most characters of record values one
	// request may carry; 0 = unlimited. Values are counted as the backend
	// spells them (see ValueBytes: TXT quoted and escaped, names with their
	// trailing dot).
	//   - Route 53: 32,000 characters, spaces included, over all Value
	//     elements of a request (AWS Route 53 API Reference,
	//     ChangeResourceRecordSets).
	//   - Cloud DNS: the project quota totalRrdataSizePerChange (bytes).
	//   - RFC 2136: an UPDATE must fit one DNS message, 65,535 bytes over
	//     TCP (RFC 1035 §4.2.2); providers set a margin below that.
	MaxValueBytesPerBatch int
	// ConditionalWrites: a write is applied only if Before still matches, and
	// a batch is all-or-nothing (Route 53 exact DELETE+CREATE, Azure ETags,
	// Cloud DNS exact deletions, RFC 2136 prerequisites, the embedded
	// server). PowerDNS has none.
	ConditionalWrites bool
	// WeightedRouting: the provider serves RecordSet.Weight (Route 53
	// weighted routing, the embedded server).
	WeightedRouting bool
	// GeoRouting: the provider serves geo record sets, one per geo tag, each labelled with
	// its regions (pkg/geo's labels in RecordSet.ProviderSpecific) and answered by the
	// client's location (the embedded server; docs/design.md, "Geo answers").
	GeoRouting bool
	// CreateZones: EnsureZone and DeleteZone work. RFC 2136 cannot create
	// zones (dnsplane API contract): DNSZones there adopt spec.zoneID.
	CreateZones bool
	// BatchWrites: one request carries changes to many record sets. Azure DNS
	// has no batch API (one PUT per record set, guarded by its ETag).
	BatchWrites bool
	// MaxWritesInFlight is how many write requests (ApplyChanges calls) the
	// backend takes at once from one account; 0 = no limit. The zone
	// writers of one account share it (zonewriter.Set): a writer waits for a
	// free slot before each write.
	//   - PowerDNS: 1 by default, raised by the Secret key
	//     PDNS_MAX_WRITES_IN_FLIGHT. Its sqlite backends (gsqlite3) take one
	//     write transaction at a time and answer overlapping PATCHes with
	//     HTTP 500 "database is locked" (SQLite, "File Locking And
	//     Concurrency In SQLite Version 3": one writer at a time).
	//   - Every other provider here: 0.
	MaxWritesInFlight int
	// SignsOnline: the provider signs its answers as it serves them, with the keys of the
	// zone's key Secret (<dnszone>-dnssec, pkg/dnssec), so every denial type works, compact
	// denial (RFC 9824) included. The DNSZone controller creates those keys (the embedded
	// server). A provider without it, and without Resolved.KeySigner (PowerDNS, signed with
	// the keys it is handed), reports Secure=False, reason NotSupported, for a DNSZone with
	// spec.dnssec enabled (docs/dnssec.md).
	SignsOnline bool
}
