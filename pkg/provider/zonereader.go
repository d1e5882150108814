package provider

import "context"

// ZoneReader is a provider whose read of one zone returns the zone's record sets in the same
// request: PowerDNS's GET /api/v1/servers/{server}/zones/{zone} holds every rrset of the zone
// (PowerDNS HTTP API, "zones"). The DNSZone controller adopts a zone (spec.zoneID) with
// ReadZone and hands the record sets to the zone's writer as its first view
// (zonewriter.Writer.Seed), so that adopting a zone and the first planning against it cost one
// read instead of three (a GET of the zone, a GET of its metadata, and the writer's list).
type ZoneReader interface {
	// ReadZone returns the zone with provider ID id, as GetZone does, and every record set of
	// it, as ListRecordSets does, from one request. The Zone's CallerReference is what that
	// request holds (for PowerDNS the account field, where EnsureZone writes it) and its Tags
	// are not read: GetZone reads them. Sets nil means the record sets were not read (a wrapper
	// over a provider that is no ZoneReader); a read zone gives a non-nil slice. Unknown zone:
	// ErrZoneNotFound.
	ReadZone(ctx context.Context, id string) (Zone, []RecordSet, error)
}

// ReadZone reads zone id through p: with its record sets when p is a ZoneReader, else with
// GetZone and nil sets.
func ReadZone(ctx context.Context, p Provider, id string) (Zone, []RecordSet, error) {
	if zr, ok := p.(ZoneReader); ok {
		return zr.ReadZone(ctx, id)
	}
	z, err := p.GetZone(ctx, id)
	return z, nil, err
}
