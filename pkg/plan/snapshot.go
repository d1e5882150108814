package plan

import (
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/zoneview"
)

// Snapshot is one read of a zone's record sets indexed for planning; it is zoneview.Snapshot,
// which lives below this package so that the zone writer can cache one per read without
// importing the planner.
type Snapshot = zoneview.Snapshot

// NewSnapshot indexes current, every record set of zone (registry TXT records included); it is
// zoneview.New. When a key appears twice, the first set is used.
func NewSnapshot(zone string, current []provider.RecordSet) *Snapshot {
	return zoneview.New(zone, current)
}
