// Package health owns the pure core of Gslb health checks across clusters (issue 28;
// docs/design.md, "Health and partitions"; docs/api.md, "Health verdicts"):
//
//   - the verdict record: VerdictsName names it ("verdicts-<host>", beside
//     "localtargets-<host>"), Encode writes this cluster's verdicts as one TXT value, and
//     Decode reads a peer's as strictly as pkg/gslb's Querier reads localtargets (size caps,
//     canonical form, only the peer it was asked of, garbage refused);
//   - ProbeState: one vantage point's verdict on one target, moved by probe outcomes through
//     the failure and success thresholds;
//   - Judge.Decide: the quorum. From this cluster's probe verdicts, the peers' fresh verdicts,
//     the known clusters, the candidates (readiness already applied by the caller), the
//     strategy and the last agreed decisions, it returns every target's decision with its
//     reason, the answer per family, and whether this cluster is isolated or every target is
//     down.
//
// It must not talk to Kubernetes (no client, no API types: controllers/gslb maps them), must
// not send a probe or a DNS query (pkg/gslb/probe and pkg/gslb do), must not read the wall
// clock (a clock.PassiveClock is injected) and has no package-level mutable state: whatever
// it remembers between two decisions (Memory) goes back to the caller.
package health
