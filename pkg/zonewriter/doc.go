// Package zonewriter owns the one path from dnsplane to a provider for record changes: one Writer
// per hosted zone, shared by the DNSEndpoint and DNSRecord controllers and the heartbeat reporter
// (docs/design.md, "The zone writer" and "Provider budgets").
//
// A Writer holds the zone's record sets, read once from the provider and kept current from its
// own writes; it re-reads after the resync interval, after Invalidate, and after a failed write
// that may have landed in part.
//
// Writes are a group commit: when no flush is in flight, a submission goes out at once, alone
// (latency: one provider round trip), or, with Options.Linger (the manager's --write-linger,
// 20ms), once Linger passed with no new submission and no planner handed the zone's snapshot,
// at most MaxLinger after it, so that objects reconciled one after another share a write;
// while a flush is in flight, new
// submissions queue, and they all go in the next flush when it ends, up to Options.MaxPending
// changes. The one exception is the first flush after a view load: it waits until every
// Snapshot or RecordSets caller that waited for that load has submitted, or until
// Options.LoadWait (default 5ms, on Options.Clock) passed with none of them still being handed
// its view and no new submission, so that a cold start's planners land in one write per zone.
// Batches therefore grow by themselves under load, and a rate-limited provider gets
// bigger batches, never more requests. A flush is one ApplyChanges call (the guard splits it by
// the provider's declared limits); each submitter gets its own result. Submissions whose
// preconditions (Change.Before) no longer hold against the writer's view fail alone with
// provider.ErrConflict, and a submission whose submitter gave up (its context ended) is not sent.
//
// Failures never multiply:
//   - a batch the provider rejects (provider.ErrInvalidChange, or any error that is not one of
//     those below) is retried one submission at a time, after one read of the zone for all of
//     them, so that only the bad one fails;
//   - a batch answered busy or throttled (provider.ErrThrottled, which PowerDNS' HTTP 500
//     "database is locked" is, once the guard's jittered back-off gave up), timed out, or
//     refused for a missing zone or credentials fails as a whole: it is never split, and the
//     submitters retry on their own back-off;
//   - the writers of one account in a Set share its write budget,
//     provider.Capabilities.MaxWritesInFlight (PowerDNS on sqlite: 1), so that they never
//     overlap writes the backend takes one at a time.
//
// What a Writer holds is bounded by the zone, not by failures: one view (plus one working copy
// during a flush), at most MaxPending queued changes (further submitters wait in Apply), and one
// goroutine for its loop plus one for the flush in flight.
//
// It must not decide what to write: plans come from package plan, and ownership from package
// registry. It knows nothing of Kubernetes.
package zonewriter
