// Package publish owns the one path from a DNSEndpoint or DNSRecord to its zone writers, shared
// by the two record controllers (docs/design.md, "Publishing"). Planner.Run is one reconcile's
// body, in four steps:
//
//   - assign: choose a DNSZone for every endpoint (Assign: spec.zoneRef, else the longest
//     suffix in the object's namespace, with the delegation and tenancy rules), plus the zones
//     the object holds records in (status.zones) and those whose last change it still judges
//     (status.served);
//   - plan: per usable zone, a pure plan (plan.Compute) against that zone writer's snapshot,
//     every zone's snapshot read at once (Planner.Plan);
//   - commit: the plans' changes go to the zone writers through one interface, in one of two
//     ways: applyNow waits in the reconcile for every writer's answer (DNSRecord, and an
//     approved DryRun plan); submitLater hands them to the writers and returns, and the last
//     writer's answer enqueues the object (Inflight, Options.Async: DNSEndpoint), whose next
//     reconcile finds nothing left to write and gives the verdict from those answers;
//   - verdict: status.plan, status.appliedPlan, status.zones, status.served with the Served
//     condition (the Served check, docs/served.md), Ready with its reason, and one Verdict
//     (Outcome.Verdict) that tells the controller how far Run went and whether to write status.
//
// Release removes what a deleted object holds, through the same assign and plan steps and a
// synchronous write; ReleaseGone does so for a DNSEndpoint found gone (Inflight.Gone).
//
// Guarantees, by mechanism:
//   - an object's zones are written at once, each zone's registry records with its record sets
//     in one submission, so the writer applies them in one provider call; a zone's failure
//     neither stops nor undoes the others, and status.plan then shows what remains;
//   - while an object's submission is unanswered, its reconciles plan nothing and its release
//     waits, so no plan reads a view that its own queued writes will change;
//   - the zone writers answer on a channel (zonewriter.Writer.SubmitTo) that one goroutine of
//     Inflight drains while answers are owed: a writer runs none of this package's code; and
//     this package calls back into its caller only for Options.Prepare (the DNSRecord
//     lifecycle's finalizer write, run beside the commit): a DNSRecord's heartbeat is data,
//     Options.Heartbeat, stamped here;
//   - a reconcile that defers (a zone not judged yet, or a submission in flight) sets nothing in
//     status, so the controller writes nothing to the API server.
//
// It must not decide ownership or the records themselves (package plan and package registry do),
// write to a provider except through a zone writer, write the object to the API server (the
// caller commits status; Options.Prepare is the caller's own write, run beside the commit), or
// hold a goroutine per object while writes are in flight. It owns no reconcile loop and sets only
// the conditions Ready and Served; each controller adds its own kind's.
package publish
