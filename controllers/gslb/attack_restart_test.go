package gslb

import (
	"net/netip"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

// TestAttack_LeaderWithAFastClockDampsForAnHour: the old leader's node clock was an hour fast
// (nothing checks a replica's clock against the next one's: the skew report is between
// members). eu's target went Down twice and the old leader damped it (FlapDamped, upSince
// stamped by its clock). The leader changes to a replica with the right clock while the quorum
// says Up. docs/design.md: damping "delays an Up" for FlapDwell (2 minutes), and S1 allows
// a target that went Down twice "out for the dwell". Without the guard: memoryFromStatus restores
// flap.upSince as written, an hour ahead, and Judge.damp's `now.Sub(upSince) < dwell` holds
// while upSince is in the future: eu's target, Up for every member, stays out of this
// member's answer for an hour and two minutes, and the other members serve it (C1).
func TestAttack_LeaderWithAFastClockDampsForAnHour(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	const fast = time.Hour
	clk := testclock.NewFakePassiveClock(t0.Add(fast)) // the old leader's clock
	j := health.Judge{Clock: clk, FlapWindow: 10 * time.Minute, FlapDwell: 2 * time.Minute}
	eu4, us4, ap4 := fleetAddrs()
	in := health.Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu",
		Candidates: map[string][]netip.Addr{"eu": {eu4}, "us": {us4}, "ap": {ap4}}}
	step := func(at time.Duration, v health.Verdict) (health.Result, health.TargetDecision) {
		t.Helper()
		clk.SetTime(clk.Now().Add(at))
		now := clk.Now()
		r := func(g string) *health.Record { return vote(g, now, v) }
		in.Own = map[netip.Addr]health.Verdict{eu4: v}
		in.Members = []health.Member{{GeoTag: "eu", Record: r("eu")}, {GeoTag: "ap", Record: r("ap")}}
		res, err := j.Decide(in)
		if err != nil {
			t.Fatal(err)
		}
		in.Memory = res.Memory
		for _, d := range res.Targets {
			if d.Target == eu4 {
				return res, d
			}
		}
		t.Fatal("no decision on eu's target")
		return res, health.TargetDecision{}
	}
	for _, v := range []health.Verdict{health.Up, health.Down, health.Up, health.Down} {
		step(time.Minute, v)
	}
	res, d := step(time.Minute, health.Up)
	if d.Reason != health.ReasonFlapDamped {
		t.Fatalf("not damped on the old leader: %s %s", d.Decision, d.Reason)
	}
	// The leader changes: the new one, with the right clock, restores the memory from status.
	in.Memory = roundTrip(t, targetStatus("app.gslb.test", res, nil))
	clk.SetTime(clk.Now().Add(-fast))
	var last time.Duration
	for m := 1; m <= 10; m++ {
		last = time.Duration(m) * time.Minute
		if _, d = step(time.Minute, health.Up); d.Decision == health.Up {
			return
		}
	}
	t.Fatalf("%s after the leader change, the quorum saying Up throughout: eu's target still %s %s (dwell %s)", last, d.Decision, d.Reason, j.FlapDwell)
}

// TestAttack_LeaderWithAFastClockDelaysTheHold: the same hour-fast old leader was isolated
// (afterIsolationHold OwnProbes, isolationHoldSeconds 300) and wrote isolatedSince by its
// clock. The new leader, with the right clock, is still isolated. docs/design.md: after
// isolationHoldSeconds, afterIsolationHold decides, and a restart or a new leader keeps the
// isolation's start. Without the guard: memoryFromStatus restores an isolatedSince an hour in the future
// and Decide's `now.Sub(IsolatedSince) >= Hold` stays false: the new leader serves the held
// answer for an hour and five minutes instead of switching to its own probes after the hold.
func TestAttack_LeaderWithAFastClockDelaysTheHold(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	const fast = time.Hour
	clk := testclock.NewFakePassiveClock(t0.Add(fast))
	j := health.Judge{Clock: clk}
	in := isolatedUS()
	decideNow := func() health.Result {
		t.Helper()
		res, err := j.Decide(in)
		if err != nil {
			t.Fatal(err)
		}
		in.Memory = res.Memory
		return res
	}
	res := decideNow() // the old leader: isolated from its now
	in.Memory = roundTrip(t, targetStatus("app.gslb.test", res, nil))
	clk.SetTime(t0) // the new leader's clock, right
	decideNow()
	clk.SetTime(t0.Add(6 * time.Minute))
	if res := decideNow(); !res.OwnProbesOnly {
		t.Fatalf("isolated for 6 minutes on the new leader, hold 5: not OwnProbesOnly (isolated since %s by the restored status; served A %v)",
			res.Memory.IsolatedSince.Format(time.RFC3339), res.ServedA)
	}
}
