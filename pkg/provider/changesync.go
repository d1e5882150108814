package provider

import "context"

// ChangeSync is implemented by providers whose API says when a zone's writes are answered by
// every one of their name servers, where the zone's SOA serial says nothing: Route 53's serial
// never moves, and its GetChange reports each change PENDING, then INSYNC "when the changes have
// propagated to all Route 53 DNS servers" (Route 53 API Reference, GetChange). The Served check
// (pkg/served) asks it in place of SOA queries.
//
// Its times are whole seconds of this process's clock (Unix time, uint32), so that they order
// like SOA serials: a write acknowledged at second s is served once InSync reaches s. A
// restarted process knows of no pending write, so its InSync is the second before the current
// one: a change made before the restart is judged served, which is what its provider says of it
// soon after.
type ChangeSync interface {
	// Submitted is the second at which this process's last write to the zone (its ID) was
	// acknowledged, 0 when it made none.
	Submitted(zoneID string) uint32
	// InSync returns a second s such that every write to the zone this process made at or
	// before s is served by every name server: the second before that of the oldest write
	// still pending, or, when none is, the second before the current one (a write later in
	// the current second would not be covered). It asks the provider about the
	// pending writes, oldest first, and stops at the first still pending; an error is the
	// provider's (throttled, unreachable), wrapped.
	InSync(ctx context.Context, zoneID string) (uint32, error)
	// ChangeSyncName names the provider's name servers in messages, e.g. "Route 53".
	ChangeSyncName() string
}
