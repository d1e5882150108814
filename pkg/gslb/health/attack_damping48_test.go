//go:build attack

package health

import (
	"maps"
	"net/netip"
	"testing"
	"time"
)

// TestAttack_AMajorityUpOnlyOneMemberSawIsAnOnsetForItAlone: five members as above, no one
// ever isolated. Everyone hears everyone; the target is Up by a majority (-1:00), then Down by
// quorum (0:00, an onset everywhere). At 0:30 the links are asymmetric for one exchange: us
// does not read af's record, ap does not read us's (each still hears 4 of 5 with itself). us,
// ap and sa call the target Up, af Down: us sees 3 Ups of 5 (a majority Up), ap sees 2 Ups and 1
// Down (an Up no majority voted for). At 1:00 every member hears every other again and the
// quorum says Down; at 1:30 every voter says Up.
// docs/design.md C1: "After the heal (every member hears every other with fresh records),
// every member gives the same answer. Flap damping is the one exception, bounded: a member that
// was isolated while a target went Down a second time has not damped it". Documented since as a bounded divergence: the Down of
// 1:00 is an onset for us (after the majority Up only it saw) and not for ap, so us damps the
// target for the dwell while ap serves it: two members that were never isolated, hearing each
// other, answer differently for FlapDwell, which C1's only exception does not cover.
func TestAttack_AMajorityUpOnlyOneMemberSawIsAnOnsetForItAlone(t *testing.T) {
	f := newFleet48(t)
	f.step(-time.Minute, votes48(Up, nil), all48)
	f.step(0, votes48(Down, nil), all48)
	asym := map[string][]string{"us": {"eu", "ap", "sa"}, "ap": {"eu", "sa", "af"}}
	if d := f.step(30*time.Second, votes48(Up, map[string]Verdict{"af": Down}), asym); d["us"].Decision != Up || d["ap"].Decision != Up {
		t.Fatalf("asymmetric exchange: us %s %s, ap %s %s", d["us"].Decision, d["us"].Reason, d["ap"].Decision, d["ap"].Reason)
	}
	f.step(time.Minute, votes48(Down, nil), all48)
	d := f.step(time.Minute+30*time.Second, votes48(Up, nil), all48)
	sameAnswer(t, d, "every member hearing every other, every voter calling it Up", "")
}

// TestAttack_ClockStepBackKeepsAnOldDownInTheWindow: two members of the same three-member
// fleet (Self us; the same records, the same votes on eu's target), one whose clock NTP steps
// back by 10 minutes while it runs (no restart), one whose clock is right. The target goes
// Down at 0:00 (an onset for both), is Up by a majority from 0:30, goes Down again at 10:15 and
// is Up again at 10:20: its two Downs are 10:15 apart, more than the 10-minute window.
// docs/design.md: S1's exception is "a target that went Down twice within the flap window"; C1's
// clock exception is "a member restarted with its clock stepped by d restores the damping's
// times on its new clock and ends the dwell up to d apart from the others". Documented since as a bounded divergence: damp clamps
// every remembered Down to now (notAfter) at each call, so the first call after the step moves
// the Down of 0:00 to the stepped clock's now (real 5:00): it stays in the window until real
// 15:00, and the Down of 10:15 makes a second onset. The stepped member damps for the dwell a
// target that went Down twice more than FlapWindow apart, which the right clock (like every
// other member) serves: not a restart, and not a dwell ending apart but a damping no one else has.
func TestAttack_ClockStepBackKeepsAnOldDownInTheWindow(t *testing.T) {
	mk := func() *member48 {
		j, clk := dampingJudge()
		m := newMember48(t, j, clk, Input{Candidates: cands3()})
		m.validFor = 15 * time.Minute
		return m
	}
	right, stepped := mk(), mk()
	step := func(m *member48, real, offset time.Duration, v Verdict) TargetDecision {
		t.Helper()
		res := m.step(step48{at: real, v: v, offset: offset})
		if res.Isolated {
			t.Fatalf("at %s (offset %s): isolated, %v", real, offset, res.MemberErrs)
		}
		return decision(t, res, eu4)
	}
	var dr, ds TargetDecision
	for _, s := range []struct {
		real time.Duration
		v    Verdict
	}{{-time.Minute, Up}, {0, Down}, {30 * time.Second, Up}, {5 * time.Minute, Up}, {10*time.Minute + 15*time.Second, Down}, {10*time.Minute + 20*time.Second, Up}} {
		offset := time.Duration(0)
		if s.real >= 5*time.Minute {
			offset = 10 * time.Minute // stepped back between 0:30 and 5:00
		}
		dr, ds = step(right, s.real, 0, s.v), step(stepped, s.real, offset, s.v)
	}
	if dr.Decision != ds.Decision {
		t.Fatalf("Downs at 0:00 and 10:15, Up at 10:20: right clock %s %s, clock stepped back 10m %s %s (Flaps %+v)",
			dr.Decision, dr.Reason, ds.Decision, ds.Reason, stepped.in.Memory.Flaps[eu4])
	}
}

// TestAttack_TheDwellRunsOutWhileTheTargetIsNoCandidate: every member hears every other.
// eu's target goes Down at 0:00 and 1:00 (two onsets, each after a majority Up) and the quorum
// says Up at 1:30: damped (Down, FlapDamped) until 3:30. At 1:40 eu's pods go unready (a third
// failure, by readiness): eu drops the target from its localtargets and it leaves the
// candidates. At 4:00 its pods are ready again, it is back in the candidates and the quorum
// says Up. docs/design.md ("Flap damping"): the target "comes back Up only once the quorum has
// said Up for Judge.FlapDwell", and the damping state is kept "so a target that leaves the
// candidates for a while (its pods unready, its member left out) comes back as damped as it
// left". Documented since as a bounded divergence: keepFlaps keeps Flap.UpSince as it was, and damp measures the dwell from it
// by the clock, so the 2:20 spent out of the candidates (unready: no Up from anyone) count as
// dwell: the target left with 1:50 of dwell to go and comes back at 4:00 Up at once, undamped,
// after the quorum said Up for 10 s in all. A target that flaps through its readiness during
// the dwell is damped less than one that stays ready.
func TestAttack_TheDwellRunsOutWhileTheTargetIsNoCandidate(t *testing.T) {
	j, clk := dampingJudge()
	step := candStepper48(t, j, clk)
	step(-time.Minute, Up, cands3())
	step(0, Down, cands3())
	step(30*time.Second, Up, cands3())
	step(time.Minute, Down, cands3())
	if d := decision(t, step(90*time.Second, Up, cands3()), eu4); d.Decision != Down || d.Reason != ReasonFlapDamped {
		t.Fatalf("not damped after two onsets: %s %s", d.Decision, d.Reason)
	}
	unready := map[string][]netip.Addr{"eu": nil, "us": {us4}, "ap": {ap4}}
	step(100*time.Second, Up, unready)
	step(3*time.Minute, Up, unready)
	res := step(4*time.Minute, Up, cands3())
	if d := decision(t, res, eu4); d.Decision != Down || d.Reason != ReasonFlapDamped {
		t.Fatalf("back in the candidates at 4:00 after 2:20 unready, 10 s into the 2m dwell: %s %s (served A %v)",
			d.Decision, d.Reason, res.ServedA)
	}
}

// TestAttack_ARestartForgetsTheMajorityUp: five members as above, everyone hearing everyone
// throughout. The target is Up by a majority (-1:00), Down at 0:00 (an onset everywhere), Up by
// a majority at 0:30. us's manager then restarts (a new leader, a rollout) and restores its
// memory from status as memoryFromStatus does (Agreed and Flaps; no Seen, no MajorityUp, which
// is "not kept in status"); its first decision, at 1:00, is the quorum's Down, and at 1:30 every
// voter says Up. docs/design.md C1: "After the heal (every member hears every other with fresh
// records), every member gives the same answer. Flap damping is the one exception, bounded: a
// member that was isolated while a target went Down a second time has not damped it ...; a
// member restarted with its clock stepped by d restores the damping's times on its new clock
// and ends the dwell up to d apart from the others", and "Not isolated, the quorum decides and
// its decisions become the agreed memory, which the controller persists, so that a restarted
// manager or a new leader holds the same answer". Documented since as a bounded divergence: MajorityUp is not restored, so the
// Down of 1:00 is no onset for the restarted us (state.go's "only damps less") while it is the
// second onset for ap: ap damps the target for the dwell and us serves it, two members that
// hear each other, neither isolated nor clock-stepped, answering differently for FlapDwell.
func TestAttack_ARestartForgetsTheMajorityUp(t *testing.T) {
	f := newFleet48(t)
	f.step(-time.Minute, votes48(Up, nil), all48)
	f.step(0, votes48(Down, nil), all48)
	f.step(30*time.Second, votes48(Up, nil), all48)
	m := f.inputs["us"].Memory
	f.inputs["us"].Memory = Memory{Agreed: maps.Clone(m.Agreed), Flaps: maps.Clone(m.Flaps)} // restored from status
	f.step(time.Minute, votes48(Down, nil), all48)
	d := f.step(time.Minute+30*time.Second, votes48(Up, nil), all48)
	sameAnswer(t, d, "every member hearing every other, neither isolated nor clock-stepped (us restarted)", "")
}

// TestAttack_ARestartWhileTheTargetIsNoCandidateForgetsItsDamping: n = 3, Self us, everyone
// hearing everyone. eu's target goes Down at 0:00 and 1:00 (two onsets) and the quorum says Up
// from 1:30: damped until 3:30. At 1:40 eu's pods are unready and the target leaves the
// candidates; Decide keeps its damping and agreed Down (keepFlaps). At 2:00 us's manager
// restarts and restores its memory from status as the controller does: targetStatus writes one
// status.targets entry per res.Targets (the candidates), and memoryFromStatus restores Agreed
// and Flaps from those entries only. At 2:30 the pods are ready again and the quorum says Up.
// docs/design.md: the damping state "is pruned by time alone, not by candidacy ... so a target
// that leaves the candidates for a while (its pods unready, its member left out) comes back as
// damped as it left", and the agreed memory is persisted "so that a restarted manager or a new
// leader holds the same answer". Documented since as a bounded divergence: the kept state of a target that is not a candidate is
// in Result.Memory but in no status entry, so a restart drops it and the target comes back Up
// at once, 1 minute before the end of its dwell, while a member that did not restart (like
// TestAttack_DampingSurvivesATargetLeavingTheCandidates's) keeps it out.
func TestAttack_ARestartWhileTheTargetIsNoCandidateForgetsItsDamping(t *testing.T) {
	j, clk := dampingJudge()
	m := newMember48(t, j, clk, Input{})
	step := func(at time.Duration, v Verdict, cands map[string][]netip.Addr) Result {
		t.Helper()
		return m.step(step48{at: at, v: v, cands: cands})
	}
	step(-time.Minute, Up, cands3())
	step(0, Down, cands3())
	step(30*time.Second, Up, cands3())
	step(time.Minute, Down, cands3())
	if d := decision(t, step(90*time.Second, Up, cands3()), eu4); d.Reason != ReasonFlapDamped {
		t.Fatalf("not damped: %s %s", d.Decision, d.Reason)
	}
	unready := map[string][]netip.Addr{"eu": nil, "us": {us4}, "ap": {ap4}}
	res := step(100*time.Second, Up, unready)
	if _, kept := res.Memory.Flaps[eu4]; !kept {
		t.Fatalf("Decide did not keep the damping of a target out of the candidates")
	}
	// The restart: status.targets holds res.Targets only (targetStatus); memoryFromStatus
	// restores each entry's agreed decision and flap state, and nothing else.
	restored := Memory{Agreed: map[netip.Addr]Verdict{}, Flaps: map[netip.Addr]Flap{}}
	for _, d := range res.Targets {
		if v, ok := res.Memory.Agreed[d.Target]; ok {
			restored.Agreed[d.Target] = v
		}
		if f, ok := res.Memory.Flaps[d.Target]; ok {
			restored.Flaps[d.Target] = f
		}
	}
	m.in.Memory = restored
	step(2*time.Minute, Up, unready)
	res = step(150*time.Second, Up, cands3())
	if d := decision(t, res, eu4); d.Decision != Down || d.Reason != ReasonFlapDamped {
		t.Fatalf("back in the candidates at 2:30, 1 minute into the 2m dwell, after a restart while it was out: %s %s (served A %v)",
			d.Decision, d.Reason, res.ServedA)
	}
}
