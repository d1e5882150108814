package health

import (
	"net/netip"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestDecide_RejoiningIsNoFlap: eu owns its target. us and ap call it Down (one onset); their
// records then go stale one after the other, so the quorum says Up (abstentions never help a
// Down) and eu becomes isolated, holding Up. At the heal it reads their Down again and agrees,
// then they call it Up. The Down read at the heal is a resync with the fleet, not a second
// flap: eu serves its target again with the others, instead of damping it alone for the dwell
// while every member sees it Up (S1). Found by the nemesis, seed 9.
func TestDecide_RejoiningIsNoFlap(t *testing.T) {
	step := euStepper(t)
	oneOnsetThenIsolated(t, step)
	if d := step(30, map[string]Verdict{"us": Down, "ap": Down}); d.Decision != Down {
		t.Fatalf("the heal, both still call it Down: %s %s", d.Decision, d.Reason)
	}
	if d := step(33, map[string]Verdict{"us": Up, "ap": Up}); d.Decision != Up {
		t.Fatalf("every member calls it Up: %s %s, damped by the resync at the heal", d.Decision, d.Reason)
	}
}

// TestDecide_AnUpNoMajorityVotedIsNoRecovery: eu owns its target; us and ap call it Down (one
// onset). ap's record goes stale, so the quorum says Up with no majority calling it Up, then eu
// is isolated and holds that Up. At the heal it first hears us alone (still no quorum for
// Down), then both call it Down again, then both Up. The Up between the two Downs was the
// absence of a quorum, not a recovery, so the second Down is no flap's onset and eu serves its
// target again with the others instead of damping it alone for the dwell (S1). Found by the
// nemesis, seed 9, after the resync rule above.
func TestDecide_AnUpNoMajorityVotedIsNoRecovery(t *testing.T) {
	step := euStepper(t)
	oneOnsetThenIsolated(t, step)
	if d := step(30, map[string]Verdict{"us": Down}); d.Decision != Up {
		t.Fatalf("the heal, us heard alone: %s %s", d.Decision, d.Reason)
	}
	if d := step(31, map[string]Verdict{"us": Down, "ap": Down}); d.Decision != Down {
		t.Fatalf("both call it Down: %s %s", d.Decision, d.Reason)
	}
	if d := step(34, map[string]Verdict{"us": Up, "ap": Up}); d.Decision != Up {
		t.Fatalf("every member calls it Up: %s %s, damped by an onset that followed no recovery", d.Decision, d.Reason)
	}
}

// euStepper returns the decisions of eu, owner of eu4, at t0 + s seconds, where us and ap
// publish fresh records (valid 9 s) calling eu4 as fresh says; a member missing from fresh
// keeps its last record, which goes stale.
func euStepper(t *testing.T) func(s int, fresh map[string]Verdict) TargetDecision {
	j, clk := judge()
	in := Input{Self: "eu", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(),
		Own: map[netip.Addr]Verdict{us4: Up, ap4: Up}}
	recs := map[string]*Record{}
	return func(s int, fresh map[string]Verdict) TargetDecision {
		t.Helper()
		now := t0.Add(time.Duration(s) * time.Second)
		clk.SetTime(now)
		in.Members = nil
		for _, g := range []string{"us", "ap"} {
			if v, ok := fresh[g]; ok {
				recs[g] = euVote(g, now, 9*time.Second, v)
			}
			in.Members = append(in.Members, Member{GeoTag: g, Record: recs[g]})
		}
		res, err := j.Decide(in)
		if err != nil {
			t.Fatal(err)
		}
		in.Memory = res.Memory
		return decision(t, res, eu4)
	}
}

// oneOnsetThenIsolated runs eu's view to second 20: us and ap call eu4 Up, then Down (one
// onset), ap's record goes stale (no quorum for Down: Up), then both (eu isolated, holding Up).
func oneOnsetThenIsolated(t *testing.T, step func(s int, fresh map[string]Verdict) TargetDecision) {
	t.Helper()
	step(-3, map[string]Verdict{"us": Up, "ap": Up})
	if d := step(0, map[string]Verdict{"us": Down, "ap": Down}); d.Decision != Down {
		t.Fatalf("two of three call it Down: %s %s", d.Decision, d.Reason)
	}
	if d := step(10, map[string]Verdict{"us": Down}); d.Decision != Up {
		t.Fatalf("ap stale, one Down of three: %s %s", d.Decision, d.Reason)
	}
	if d := step(20, nil); d.Decision != Up || d.Reason != ReasonHeldWhileIsolated {
		t.Fatalf("isolated: %s %s, want the last agreed Up held", d.Decision, d.Reason)
	}
}
