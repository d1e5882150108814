package dnszone

import (
	"slices"

	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// releaseOwner plans the removal of everything ownerID contributed to the zone, whichever of its
// objects contributed it (docs/api.md, DNSZone deletion step 2): each contributor is released in
// turn against the view the previous releases leave, so shared record sets keep the other
// contributors' targets. It returns the changes, in order, and the contributors of other owner
// IDs that remain ("ownerID resource").
func releaseOwner(zone, ownerID string, current []provider.RecordSet) ([]provider.Change, []string) {
	view := map[provider.RecordSetKey]provider.RecordSet{}
	for _, rs := range current {
		view[rs.Key()] = rs
	}
	var ours []registry.Contributor
	ix := registry.NewIndex(zone, current)
	for _, k := range ix.Keys() {
		for _, e := range ix.Entries(k) {
			if c := e.Contributor(); c.OwnerID == ownerID && !slices.Contains(ours, c) {
				ours = append(ours, c)
			}
		}
	}
	slices.SortFunc(ours, func(a, b registry.Contributor) int {
		if a.String() < b.String() {
			return -1
		}
		return 1
	})
	var changes []provider.Change
	for _, c := range ours {
		mode := plan.SingleOwner
		if c.Kind() == "DNSRecord" {
			mode = plan.Shared
		}
		res := plan.Compute(plan.Input{Zone: zone, Self: c, Mode: mode, Current: values(view)})
		if err := zonewriter.ApplyTo(view, res.Changes); err != nil {
			continue // cannot happen for a plan computed against view; skip rather than guess
		}
		changes = append(changes, res.Changes...)
	}
	var others []string
	left := registry.NewIndex(zone, values(view))
	for _, k := range left.Keys() {
		for _, e := range left.Entries(k) {
			if s := e.OwnerID + " " + e.Resource; e.OwnerID != ownerID && !slices.Contains(others, s) {
				others = append(others, s)
			}
		}
	}
	return changes, others
}

func values(m map[provider.RecordSetKey]provider.RecordSet) []provider.RecordSet {
	out := make([]provider.RecordSet, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
