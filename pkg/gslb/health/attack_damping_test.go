package health

import (
	"net/netip"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestAttack_DampingSurvivesATargetLeavingTheCandidates: eu's target went Down twice within
// the flap window and is damped (Down, FlapDamped) while the quorum says Up again. eu's pods
// are then unready for one reconcile (eu drops the target from its localtargets, readiness's
// fast signal), and ready again. docs/design.md ("Flap damping"): each change from Up to Down
// "is kept for Judge.FlapWindow", and a target with two such changes "comes back Up only once
// the quorum has said Up for Judge.FlapDwell". Without the guard: when not isolated, Decide rebuilds
// Memory.Agreed and Memory.Flaps from the current candidates only, so one reconcile without the
// target forgets its agreed Down and both of its Downs: it comes back Up at once, undamped,
// 1 minute into a 2-minute dwell. A target whose readiness flaps with its health (the usual
// case) is never damped; a member removed from the membership and re-added loses its
// targets' damping the same way.
func TestAttack_DampingSurvivesATargetLeavingTheCandidates(t *testing.T) {
	j, clk := dampingJudge()
	in := Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3()}
	step := func(at time.Duration, v Verdict, cands map[string][]netip.Addr) Result {
		t.Helper()
		now := t0.Add(at)
		clk.SetTime(now)
		r := func(g string) *Record { return euVote(g, now, 90*time.Second, v) }
		in.Candidates = cands
		in.Own = map[netip.Addr]Verdict{eu4: v, us4: Up, ap4: Up}
		in.Members = []Member{{GeoTag: "eu", Record: r("eu")}, {GeoTag: "ap", Record: r("ap")}}
		res := decide(t, j, in)
		in.Memory = res.Memory
		return res
	}
	for i, v := range []Verdict{Up, Down, Up, Down} {
		step(time.Duration(i)*time.Minute, v, cands3())
	}
	if d := decision(t, step(4*time.Minute, Up, cands3()), eu4); d.Reason != ReasonFlapDamped {
		t.Fatalf("not damped after two Downs: %s %s", d.Decision, d.Reason)
	}
	unready := map[string][]netip.Addr{"eu": nil, "us": {us4}, "ap": {ap4}}
	step(4*time.Minute+30*time.Second, Up, unready)
	res := step(5*time.Minute, Up, cands3())
	if d := decision(t, res, eu4); d.Decision != Down || d.Reason != ReasonFlapDamped {
		t.Fatalf("eu's target back after one reconcile without it, 1m into the 2m dwell: %s %s (served A %v), want Down FlapDamped until %s",
			d.Decision, d.Reason, res.ServedA, t0.Add(6*time.Minute).Format(time.RFC3339))
	}
}

// TestAttack_DwellCutShortWhenTheOlderDownLeavesTheWindow: eu's target goes Down at 0 and
// again at 9 minutes (two changes within the 10-minute window), and the quorum says Up from
// 9:30: damped (FlapDamped), which docs/design.md says lasts until the quorum "has said Up for
// Judge.FlapDwell" (2 minutes, so until 11:30). Without the guard: damp re-filters the Downs by the
// window at every call and damps only while two remain; at 10:00+ the Down of 0:00 leaves the
// window, so the dwell ends after 30 s, not 2 minutes.
func TestAttack_DwellCutShortWhenTheOlderDownLeavesTheWindow(t *testing.T) {
	j, clk := dampingJudge()
	in := Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3()}
	step := func(at time.Duration, v Verdict) TargetDecision {
		t.Helper()
		now := t0.Add(at)
		clk.SetTime(now)
		r := func(g string) *Record { return euVote(g, now, 90*time.Second, v) }
		in.Own = map[netip.Addr]Verdict{eu4: v, us4: Up, ap4: Up}
		in.Members = []Member{{GeoTag: "eu", Record: r("eu")}, {GeoTag: "ap", Record: r("ap")}}
		res := decide(t, j, in)
		in.Memory = res.Memory
		return decision(t, res, eu4)
	}
	step(-time.Minute, Up)
	step(0, Down)
	step(time.Minute, Up)
	step(9*time.Minute, Down)
	if d := step(9*time.Minute+30*time.Second, Up); d.Reason != ReasonFlapDamped {
		t.Fatalf("not damped after two Downs within the window: %s %s", d.Decision, d.Reason)
	}
	if d := step(10*time.Minute+30*time.Second, Up); d.Decision != Down {
		t.Fatalf("1 minute into the 2-minute dwell (damped since 9:30): eu's target %s %s: the dwell ended when the first Down left the window",
			d.Decision, d.Reason)
	}
}
