package gslb

import (
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

// TestRestart_KeepsFlapDamping: eu's target went Down twice within the flap window and is
// damped (Down, FlapDamped) while the quorum says Up. The manager restarts (or the leader
// changes): the new one restores its memory from status.targets. It holds the same answer as
// the other members, which still damp the target: Down until the dwell has passed.
func TestRestart_KeepsFlapDamping(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	clk := testclock.NewFakePassiveClock(t0)
	j := health.Judge{Clock: clk, FlapWindow: 10 * time.Minute, FlapDwell: 2 * time.Minute}
	eu4, us4, ap4 := fleetAddrs()
	in := health.Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu",
		Candidates: map[string][]netip.Addr{"eu": {eu4}, "us": {us4}, "ap": {ap4}}}
	var res health.Result
	step := func(at time.Duration, v health.Verdict) health.TargetDecision {
		t.Helper()
		now := t0.Add(at)
		clk.SetTime(now)
		r := func(g string) *health.Record { return vote(g, now, v) }
		in.Own = map[netip.Addr]health.Verdict{eu4: v}
		in.Members = []health.Member{{GeoTag: "eu", Record: r("eu")}, {GeoTag: "ap", Record: r("ap")}}
		var err error
		if res, err = j.Decide(in); err != nil {
			t.Fatal(err)
		}
		in.Memory = res.Memory
		for _, d := range res.Targets {
			if d.Target == eu4 {
				return d
			}
		}
		t.Fatal("no decision on eu's target")
		return health.TargetDecision{}
	}
	for _, s := range []struct {
		at time.Duration
		v  health.Verdict
	}{{0, health.Up}, {time.Minute, health.Down}, {2 * time.Minute, health.Up}, {3 * time.Minute, health.Down}} {
		step(s.at, s.v)
	}
	if d := step(4*time.Minute, health.Up); d.Reason != health.ReasonFlapDamped {
		t.Fatalf("not damped before the restart: %s %s", d.Decision, d.Reason)
	}
	// The restart: the memory comes back from status.targets, through the API's JSON, as
	// hostMemories builds it.
	st := targetStatus("app.gslb.test", res, nil)
	in.Memory = roundTrip(t, st)
	if d := step(4*time.Minute+30*time.Second, health.Up); d.Decision != health.Down || d.Reason != health.ReasonFlapDamped {
		t.Fatalf("after the restart: eu's target %s %s, while the other members still damp it until %s", d.Decision, d.Reason, t0.Add(6*time.Minute))
	}
}

// TestRestart_KeepsTheIsolationHoldsStart: us is cut from eu and ap for longer than
// isolationHoldSeconds with afterIsolationHold OwnProbes; its own probes took eu's target out
// (OwnProbesOnly). The manager restarts: the isolation has not ended, so the hold has passed
// and own probes still decide. A restored memory without the isolation's start restarts the
// hold: the restarted member serves the held answer again for another hold, and a manager
// restarted more often than the hold never reaches OwnProbes.
func TestRestart_KeepsTheIsolationHoldsStart(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	clk := testclock.NewFakePassiveClock(t0)
	j := health.Judge{Clock: clk}
	in := isolatedUS()
	decideAt := func(at time.Duration) health.Result {
		t.Helper()
		clk.SetTime(t0.Add(at))
		res, err := j.Decide(in)
		if err != nil {
			t.Fatal(err)
		}
		in.Memory = res.Memory
		return res
	}
	decideAt(0)
	res := decideAt(6 * time.Minute)
	if !res.OwnProbesOnly {
		t.Fatalf("isolated for 6 minutes, hold 5: not OwnProbesOnly: %+v", res)
	}
	st := targetStatus("app.gslb.test", res, nil)
	in.Memory = roundTrip(t, st)
	if res := decideAt(6*time.Minute + 30*time.Second); !res.OwnProbesOnly {
		t.Fatalf("after the restart, still isolated since %s: the hold started over (served %v)", t0, res.ServedA)
	}
}

// roundTrip is what a restarted manager reads: status.targets written as JSON and read back
// (times to the second), then the memory built from it.
func roundTrip(t *testing.T, st []dnsv1.GslbTargetStatus) health.Memory {
	t.Helper()
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back []dnsv1.GslbTargetStatus
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	return memoryFromStatus(back, "app.gslb.test", time.Now())
}

// fleetAddrs are the IPv4 targets of eu, us and ap in the restart tests.
func fleetAddrs() (eu4, us4, ap4 netip.Addr) {
	return netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("203.0.113.1")
}

// vote is g's record at now (valid 90 s) calling eu's target v and us's and ap's Up.
func vote(g string, now time.Time, v health.Verdict) *health.Record {
	eu4, us4, ap4 := fleetAddrs()
	out := &health.Record{GeoTag: g, IssuedAt: now, ValidFor: 90 * time.Second, Up: []netip.Addr{us4, ap4}}
	if v == health.Down {
		out.Down = []netip.Addr{eu4}
	} else {
		out.Up = []netip.Addr{eu4, us4, ap4}
	}
	return out
}

// isolatedUS is us's input with eu's target Down by its own probe, hearing neither eu nor ap
// (isolated), hold 5 minutes, then its own probes.
func isolatedUS() health.Input {
	eu4, us4, ap4 := fleetAddrs()
	return health.Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Hold: 300 * time.Second,
		AfterHold: health.AfterHoldOwnProbes, Candidates: map[string][]netip.Addr{"eu": {eu4}, "us": {us4}, "ap": {ap4}},
		Own:     map[netip.Addr]health.Verdict{eu4: health.Down, us4: health.Up, ap4: health.Up},
		Members: []health.Member{{GeoTag: "eu"}, {GeoTag: "ap"}}}
}
