// Package health owns the pure core of Gslb health checks across the members of a fleet
// (docs/design.md, "Health and partitions"; docs/api.md, "Health verdicts"):
//
//   - the verdict record: VerdictsName names it ("verdicts-<host>", beside
//     "localtargets-<host>"), Encode writes this member's verdicts as one TXT value, and
//     Decode reads another member's as strictly as pkg/gslb's Querier reads localtargets (size
//     caps, canonical form, only the member it was asked of, garbage refused);
//   - Freshness: whether a record counts, by its time's advance on the reader's own clock, or
//     at first sight by the wall-clock rule, under the reader's validity cap; with the
//     writer's clock offset;
//   - ProbeState: one vantage point's verdict on one target, moved by probe outcomes through
//     the failure and success thresholds;
//   - Judge.Decide: the quorum over the membership. A target is Down iff more than half of the
//     members (self, every other cluster, every witness) hold a fresh Down verdict on it, an
//     owner's verdict on its own targets never counted; a member that hears at most half of
//     the members is isolated and holds the last agreed decisions (then, by choice, its own
//     probes); flapping is damped; the strategy runs per address family and never leaves a
//     family with a candidate empty. The invariants S1, S2, L1 and C1 it keeps are checked
//     exhaustively by TestModelCheck_Decide.
//
// It must not talk to Kubernetes (no client, no API types: controllers/gslb maps them), must
// not send a probe or a DNS query (pkg/gslb/probe and pkg/gslb do), must not read the wall
// clock (a clock.PassiveClock is injected) and has no package-level mutable state: whatever
// it remembers between two decisions (Memory) goes back to the caller.
package health
