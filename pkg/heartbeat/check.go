package heartbeat

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// Owner is one contributor of a rootHost and the state of its heartbeat, as status.owners[]
// lists it (dnsplane API contract, "DNSRecord").
type Owner struct {
	// OwnerID is the contributor's manager --owner-id.
	OwnerID string
	// Resource is the contributor's object, "kind/namespace/name".
	Resource string
	// LastHeartbeat is the newest heartbeat over the contributor's registry records at rootHost,
	// in UTC, whole seconds; the zero time means it never heartbeat.
	LastHeartbeat time.Time
	// Healthy: LastHeartbeat is set and at most the threshold old (see Check).
	Healthy bool
}

// Contributor returns the owner's contributor (owner ID and resource).
func (o Owner) Contributor() registry.Contributor {
	return registry.Contributor{OwnerID: o.OwnerID, Resource: o.Resource}
}

// EntriesAt returns the valid registry entries of ix for record sets named exactly rootHost
// (any type and set identifier), of contributors of the given kind ("DNSRecord"; "" for every
// kind), sorted by key then contributor. rootHost is canonicalised.
//
// Malformed registry records are not entries (registry.Index keeps them aside), so they name no
// owner here; the plan reports them as conflicts.
func EntriesAt(ix *registry.Index, rootHost, kind string) []registry.Entry {
	if ix == nil {
		return nil
	}
	rootHost = dnswire.Dotless(rootHost)
	var out []registry.Entry
	for _, k := range ix.Keys() {
		if k.Name != rootHost {
			continue
		}
		for _, e := range ix.Entries(k) {
			if kind == "" || e.Contributor().Kind() == kind {
				out = append(out, e)
			}
		}
	}
	return out
}

// Check returns every contributor (owner ID and resource) with an entry at rootHost among
// entries, each with its newest heartbeat over those entries and whether it is healthy at now,
// sorted by owner ID then resource. Entries at other names are ignored; rootHost is
// canonicalised.
//
// A contributor is healthy when it has a heartbeat and now - LastHeartbeat <= threshold: the
// boundary is inclusive, so a contributor that heartbeat at t0 is healthy at exactly
// t0+threshold and failing at any check after it (dnsplane API contract: "failing when its
// heartbeat is missing or older than --heartbeat-threshold"). A heartbeat in the future (clock
// skew between clusters) is healthy. threshold is a time.Duration; heartbeats are whole seconds
// (registry.WithHeartbeat), now is used as given.
func Check(entries []registry.Entry, rootHost string, now time.Time, threshold time.Duration) []Owner {
	rootHost = dnswire.Dotless(rootHost)
	byContrib := map[registry.Contributor]time.Time{}
	for _, e := range entries {
		if e.Name != rootHost {
			continue
		}
		c := e.Contributor()
		last, seen := byContrib[c]
		if !seen || e.Heartbeat.After(last) {
			byContrib[c] = e.Heartbeat
		}
	}
	out := make([]Owner, 0, len(byContrib))
	for c, last := range byContrib {
		out = append(out, Owner{
			OwnerID:       c.OwnerID,
			Resource:      c.Resource,
			LastHeartbeat: last,
			Healthy:       !last.IsZero() && now.Sub(last) <= threshold,
		})
	}
	slices.SortFunc(out, func(a, b Owner) int {
		return cmp.Or(cmp.Compare(a.OwnerID, b.OwnerID), cmp.Compare(a.Resource, b.Resource))
	})
	return out
}

// Failing returns the owners that are not healthy, in their order.
func Failing(owners []Owner) []Owner {
	var out []Owner
	for _, o := range owners {
		if !o.Healthy {
			out = append(out, o)
		}
	}
	return out
}

// FailingMessage describes the failing owners for the Healthy=False (HeartbeatFailing)
// condition, in the owners' order, joined with "; ":
//
//	owner cluster-b (DNSRecord/apps/app) last heartbeat 2026-11-30T01:00:00Z, 42s ago; owner x (DNSRecord/apps/app) never
//
// Times are RFC 3339 in UTC; the age is now - LastHeartbeat truncated to whole seconds (a
// time.Duration string, such as "42s" or "5m12s"; never negative). It returns "" when every
// owner is healthy.
func FailingMessage(owners []Owner, now time.Time) string {
	var parts []string
	for _, o := range Failing(owners) {
		s := "owner " + o.OwnerID + " (" + o.Resource + ")"
		if o.LastHeartbeat.IsZero() {
			parts = append(parts, s+" never")
			continue
		}
		age := max(now.Sub(o.LastHeartbeat), 0).Truncate(time.Second)
		parts = append(parts, s+" last heartbeat "+o.LastHeartbeat.UTC().Format(time.RFC3339)+", "+age.String()+" ago")
	}
	return strings.Join(parts, "; ")
}
