// Package warmup tracks a controller's first pass at start: the objects its cache held when it
// synced, and which of them have been planned since (Tracker). The zone writers ask it whether
// the first pass is still going (zonewriter.Options.Warming), and while it is, a flush that is
// not full waits for more, so that a first sync writes each zone in as few requests as its
// size allows instead of a trickle of small ones while the bulk is still being planned
// (at 50,000 endpoints over 10 PowerDNS zones, 3 to 7 PATCHes a zone, each behind
// its absence check, where 2 are the floor).
//
// It owns only that bookkeeping. It must not read the API server, plan, write, or hold
// package-level mutable state; the composition root lists the cache (Expect) and the
// reconciler reports what it planned (Planned).
package warmup
