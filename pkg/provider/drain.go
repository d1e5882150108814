package provider

import "context"

// ZoneDrainer is the optional interface of a Provider whose backend refuses to delete a zone
// that still holds record sets, so that DeleteZone must first delete them in write requests of
// its own (Route 53's HostedZoneNotEmpty, Cloud DNS's containerNotEmpty). The guard
// (pkg/provider/guard) asks it before DeleteZone and sends the deletions in batches of
// SplitBatches under the provider's Capabilities, so that deleting a zone is split by the same
// one splitter as ApplyChanges; DeleteZone then finds the zone empty. Decorators between the
// guard and the provider (pkg/provider/counting) forward it.
type ZoneDrainer interface {
	// ZoneDeletions returns the record sets DeleteZone must delete before the zone, in the
	// order listed: every set but those the backend manages itself (the apex SOA and NS),
	// including sets the canonical interface does not express (other routing policies).
	// Unknown zone: ErrZoneNotFound.
	ZoneDeletions(ctx context.Context, zoneID string) ([]Deletion, error)
	// DeleteRecordSets deletes dels (of this provider's ZoneDeletions for zoneID) as one write
	// request, atomic where the backend's requests are. Like ApplyChanges it never splits: a
	// request over Capabilities' limits is rejected by the backend. A Deletion this provider
	// did not list gives ErrInvalidChange before anything is sent.
	DeleteRecordSets(ctx context.Context, zoneID string, dels []Deletion) error
}

// Deletion is one record set a ZoneDrainer deletes before its zone, in the backend's own form.
type Deletion struct {
	// Key names the set (for errors and logs); the set's canonical name and type.
	Key RecordSetKey
	// Elements and ValueBytes are what the deletion costs against Capabilities' per-request
	// limits, counted as the request spells it (see Capabilities).
	Elements, ValueBytes int
	// Raw is the set as the backend listed it; only the provider that listed it reads it.
	Raw any
}

// DeletionCost is the cost function of SplitBatches for deletions: d's Elements and ValueBytes.
func DeletionCost(d Deletion) (elements, valueBytes int) { return d.Elements, d.ValueBytes }
