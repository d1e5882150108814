package dnssec

import (
	"slices"
	"time"
)

// Unsigning records that a zone is turned unsigned, child last: its DS leaves the parent first,
// and the zone is signed until every parent server answers no DS and a wait (the DS TTL and the
// DNSKEY TTL) has passed since, so that no resolver holds a DS, or keys it trusts by that DS,
// of a zone served unsigned. It is persisted beside the
// keys (KeySet.Unsigning) by the DNSZone controller; the signer serves a zone whose DNSSEC is
// turned off unsigned only once Done is set.
type Unsigning struct {
	// Since is when the DS set was withdrawn from the parent (the turn-off was first seen).
	Since time.Time `json:"since"`
	// ParentGoneAt is when every parent server was first seen answering no DS; zero until then.
	ParentGoneAt time.Time `json:"parentGoneAt,omitzero"`
	// Done: the wait has passed since ParentGoneAt: the zone may be served unsigned.
	Done bool `json:"done,omitempty"`
	// Parents names each parent DNSZone ("namespace/name") the zone's DS may be at, and
	// ParentServers their name servers (host:port), as first seen during the turn-off: the
	// parent asked is known when the zone is unlinked meanwhile or its status is lost.
	Parents       []string `json:"parents,omitempty"`
	ParentServers []string `json:"parentServers,omitempty"`
}

// WithParent is u with parent and its servers recorded (each once, in the order first seen),
// and whether that added anything.
func (u Unsigning) WithParent(parent string, servers []string) (Unsigning, bool) {
	added := false
	if parent != "" && !slices.Contains(u.Parents, parent) {
		u.Parents, added = append(slices.Clone(u.Parents), parent), true
	}
	for _, s := range servers {
		if !slices.Contains(u.ParentServers, s) {
			u.ParentServers, added = append(slices.Clone(u.ParentServers), s), true
		}
	}
	return u, added
}

// Next is u after observing, at now, whether every parent server answers no DS (parentGone),
// with wait the time to wait after it; changed says whether it differs from u. The first parent
// observation without DS is kept; Done follows once wait has passed since it.
func (u Unsigning) Next(now time.Time, parentGone bool, wait time.Duration) (next Unsigning, changed bool) {
	next = u
	if next.Done {
		return next, false
	}
	if parentGone && next.ParentGoneAt.IsZero() {
		next.ParentGoneAt, changed = now, true
	}
	if !next.ParentGoneAt.IsZero() && !now.Before(next.ParentGoneAt.Add(wait)) {
		next.Done, changed = true, true
	}
	return next, changed
}

// Until is when the zone may be served unsigned: wait after ParentGoneAt; zero while no parent
// server has been seen answering no DS.
func (u Unsigning) Until(wait time.Duration) time.Time {
	if u.ParentGoneAt.IsZero() {
		return time.Time{}
	}
	return u.ParentGoneAt.Add(wait)
}
