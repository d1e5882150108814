package health

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// dampingJudge is a judge whose flap window is 10 minutes and flap dwell 2 minutes, and its clock.
func dampingJudge() (Judge, *testclock.FakePassiveClock) {
	j, clk := judge()
	j.FlapWindow, j.FlapDwell = 10*time.Minute, 2*time.Minute
	return j, clk
}

// sameAnswer fails the test, saying when (and why, when not empty), if us and ap decide
// differently in d.
func sameAnswer(t *testing.T, d map[string]TargetDecision, when, why string) {
	t.Helper()
	if d["us"].Decision != d["ap"].Decision {
		t.Fatalf("%s: us %s %s, ap %s %s%s", when, d["us"].Decision, d["us"].Reason, d["ap"].Decision, d["ap"].Reason, why)
	}
}

// member48 is one member (Self us, eu owns eu4, ap the third member) driven through a
// sequence of Decide calls (step), each with every member's verdict on eu4 (us's own and ap's;
// eu, the owner, publishes Up on it, never counted). Its Memory carries from call to call.
type member48 struct {
	t   *testing.T
	j   Judge
	clk interface{ SetTime(time.Time) }
	in  Input
	// validFor is how long each record is valid; records are reissued at every step.
	validFor time.Duration
}

// step48 is one Decide call of a member48.
type step48 struct {
	at time.Duration // since t0, by the real clock
	v  Verdict       // us's and ap's verdict on eu4
	// cands, when not nil, are the candidates from this step on.
	cands map[string][]netip.Addr
	// cut: us hears no peer (no record read).
	cut bool
	// offset: us's clock is behind the real one by offset.
	offset time.Duration
}

// newMember48 is a member48 of judge j on clock clk deciding with in (Self, Strategy and
// PrimaryGeoTag set here), its records valid 90 s.
func newMember48(t *testing.T, j Judge, clk interface{ SetTime(time.Time) }, in Input) *member48 {
	in.Self, in.Strategy, in.PrimaryGeoTag = "us", gslb.Failover, "eu"
	return &member48{t: t, j: j, clk: clk, in: in, validFor: 90 * time.Second}
}

// step makes the Decide call s and returns its Result.
func (m *member48) step(s step48) Result {
	m.t.Helper()
	now := t0.Add(s.at)
	m.clk.SetTime(now.Add(-s.offset))
	if s.cands != nil {
		m.in.Candidates = s.cands
	}
	m.in.Own = map[netip.Addr]Verdict{eu4: s.v, us4: Up, ap4: Up}
	m.in.Members = []Member{{GeoTag: "eu"}, {GeoTag: "ap"}}
	if !s.cut {
		m.in.Members[0].Record = euVote("eu", now, m.validFor, Up) // the owner: never counted
		m.in.Members[1].Record = euVote("ap", now, m.validFor, s.v)
	}
	res, err := m.j.Decide(m.in)
	if err != nil {
		m.t.Fatal(err)
	}
	m.in.Memory = res.Memory
	return res
}

// stepper48 steps a member48 (records valid 90 s, every member heard and fresh at every
// step, the candidates cands3) and returns its decision on eu4.
func stepper48(t *testing.T, j Judge, clk interface{ SetTime(time.Time) }) func(at time.Duration, v Verdict) TargetDecision {
	m := newMember48(t, j, clk, Input{Candidates: cands3()})
	return func(at time.Duration, v Verdict) TargetDecision {
		t.Helper()
		return decision(t, m.step(step48{at: at, v: v}), eu4)
	}
}

// candStepper48 is stepper48 with the candidates given per step and the whole Result returned.
func candStepper48(t *testing.T, j Judge, clk interface{ SetTime(time.Time) }) func(at time.Duration, v Verdict, cands map[string][]netip.Addr) Result {
	m := newMember48(t, j, clk, Input{})
	return func(at time.Duration, v Verdict, cands map[string][]netip.Addr) Result {
		t.Helper()
		return m.step(step48{at: at, v: v, cands: cands})
	}
}

func newFleet48(t *testing.T) *fleet48 {
	j, clk := dampingJudge()
	f := &fleet48{t: t, clk: clk, j: j, inputs: map[string]*Input{}}
	for _, self := range []string{"us", "ap"} {
		f.inputs[self] = &Input{Self: self, Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3()}
	}
	return f
}

// step: at `at`, the voters' verdicts on eu4 are votes (missing: Unknown, an abstention);
// hears[reader] lists the members whose fresh record that reader reads (the others' records
// are not read: unheard). It returns us's and ap's decisions on eu4.
func (f *fleet48) step(at time.Duration, votes map[string]Verdict, hears map[string][]string) map[string]TargetDecision {
	f.t.Helper()
	now := t0.Add(at)
	f.clk.SetTime(now)
	out := map[string]TargetDecision{}
	for _, self := range []string{"us", "ap"} {
		in := f.inputs[self]
		in.Own = map[netip.Addr]Verdict{us4: Up, ap4: Up}
		if v := votes[self]; v != Unknown {
			in.Own[eu4] = v
		}
		in.Members = nil
		for _, g := range []string{"eu", "us", "ap", "sa", "af"} {
			if g == self {
				continue
			}
			m := Member{GeoTag: g, Witness: g == "sa" || g == "af"}
			if slices.Contains(hears[self], g) {
				r := &Record{GeoTag: g, IssuedAt: now, ValidFor: 90 * time.Second, Up: as(us4, ap4)}
				switch v := votes[g]; {
				case g == "eu" || v == Up:
					r.Up = as(eu4, us4, ap4)
				case v == Down:
					r.Down = as(eu4)
				}
				m.Record = r
			}
			in.Members = append(in.Members, m)
		}
		res, err := f.j.Decide(*in)
		if err != nil {
			f.t.Fatal(err)
		}
		in.Memory = res.Memory
		out[self] = decision(f.t, res, eu4)
	}
	return out
}

var (
	all48   = map[string][]string{"us": {"eu", "ap", "sa", "af"}, "ap": {"eu", "us", "sa", "af"}}
	usCut48 = map[string][]string{"us": nil, "ap": {"eu", "sa", "af"}}
)

func votes48(v Verdict, except map[string]Verdict) map[string]Verdict {
	out := map[string]Verdict{"us": v, "ap": v, "sa": v, "af": v}
	for g, w := range except {
		out[g] = w
	}
	return out
}

// TestAttack_ADownDuringTheDwellEndsTheDamping: every member hears every other throughout.
// eu's target is Up by a majority, then goes Down at 0:00 and at 9:00 (two onsets within the
// 10-minute window, each after an Up both voters called), and the quorum says Up at 9:30: it
// is damped (Down, FlapDamped) until 11:30. At 10:00 it fails again (quorum Down, served Down
// at once, rightly) and at 10:10 the quorum says Up again.
// docs/design.md ("Flap damping"): "A target with two onsets in the window comes back Up only
// once the quorum has said Up for Judge.FlapDwell ... Once damped, the dwell runs to its end even
// if the older Down leaves the window meanwhile." Without the guard: damp clears Flap.UpSince on any quorum
// Down (upSince starts zero and is set only on the Up branch), and the Down of 10:00 is no
// onset (the agreed decision was the damped Down), so at 10:10 only the Down of 9:00 is left in
// the window and UpSince is zero: the target comes back Up at once, undamped, 10 s after the
// quorum started saying Up. A target that flaps harder (a third failure inside the dwell) is
// damped less than one that stays up: exactly the genuinely flapping target damping exists for.
func TestAttack_ADownDuringTheDwellEndsTheDamping(t *testing.T) {
	j, clk := dampingJudge()
	step := stepper48(t, j, clk)
	step(-time.Minute, Up)
	step(0, Down)
	step(time.Minute, Up)
	step(9*time.Minute, Down)
	if d := step(9*time.Minute+30*time.Second, Up); d.Decision != Down || d.Reason != ReasonFlapDamped {
		t.Fatalf("not damped after two onsets within the window: %s %s", d.Decision, d.Reason)
	}
	if d := step(10*time.Minute, Down); d.Decision != Down {
		t.Fatalf("quorum Down during the dwell: %s %s", d.Decision, d.Reason)
	}
	if d := step(10*time.Minute+10*time.Second, Up); d.Decision != Down || d.Reason != ReasonFlapDamped {
		t.Fatalf("10 s after the quorum said Up again, a target damped since 9:30 that failed again at 10:00 is %s %s: "+
			"the Down inside the dwell ended the damping (want Down FlapDamped until 12:10)", d.Decision, d.Reason)
	}
}

// fleet48 is five members deciding on eu's target eu4: eu owns it (its verdict is never
// counted), us and ap are clusters, sa and af witnesses; a Down needs 3 of the 4 voters' Downs,
// a majority Up 3 of their Ups. Two of them decide: us and ap, each with its own Memory.
type fleet48 struct {
	t      *testing.T
	clk    interface{ SetTime(time.Time) }
	j      Judge
	inputs map[string]*Input
}

// TestAttack_MajorityUpCarriedThroughAnIsolation: five members (eu owns the target; us, ap
// and the witnesses sa, af vote). Everyone hears everyone and a majority calls it Up (-1:00).
// us is then cut from everyone (0:00..9:00, isolated, holding Up). Meanwhile the fleet takes
// it Down (0:30, an onset for ap) and then Up with no majority (af abstains: 2 Ups of 5).
// us heals at 9:00 into that same no-majority Up (its own probe already says Down), and at
// 9:30 the quorum says Down (us, ap, sa). At 10:00 a majority says Up, at 11:00 Down, at
// 11:10 Up again, everyone hearing everyone since 9:00.
// docs/design.md: "An Up no majority voted for ... is no recovery, and the first decision after
// an isolation resyncs with the fleet: a Down after either is no onset"; Memory.MajorityUp:
// "An Up that no majority voted for (the Downs' votes went stale, the member was isolated) is
// ... not a recovery"; C1: "After the heal ... every member gives the same answer. Flap damping is
// the one exception, bounded: a member that was isolated while a target went Down a second time
// has not damped it". Without the guard: Decide carries Memory.MajorityUp through the isolation (cloned,
// never reset), so the Up us held while isolated and the no-majority Up it resynced into still
// count as the majority Up of -1:00; the Down of 9:30 is an onset for us (not for ap, whose last
// agreed decision since that Up was the Down of 0:30). At 11:10 us has two onsets in the window
// (9:30, 11:00) and damps the target for the dwell, while ap (whose 0:30 onset left the window
// at 10:30) serves it: the formerly isolated member damps what the healed fleet serves, the
// reverse of C1's only exception.
func TestAttack_MajorityUpCarriedThroughAnIsolation(t *testing.T) {
	f := newFleet48(t)
	f.step(-time.Minute, votes48(Up, nil), all48)
	f.step(0, votes48(Up, nil), usCut48)
	if d := f.step(30*time.Second, votes48(Down, nil), usCut48); d["ap"].Decision != Down || d["us"].Reason != ReasonHeldWhileIsolated {
		t.Fatalf("fleet Down while us is isolated: ap %s %s, us %s %s", d["ap"].Decision, d["ap"].Reason, d["us"].Decision, d["us"].Reason)
	}
	noMajority := votes48(Up, map[string]Verdict{"af": Unknown})
	f.step(time.Minute, noMajority, usCut48)
	f.step(5*time.Minute, noMajority, usCut48)
	if d := f.step(9*time.Minute, votes48(Up, map[string]Verdict{"af": Unknown, "us": Down}), all48); d["us"].Decision != Up || d["ap"].Decision != Up {
		t.Fatalf("heal, 2 Ups and 1 Down of 5: us %s %s, ap %s %s", d["us"].Decision, d["us"].Reason, d["ap"].Decision, d["ap"].Reason)
	}
	f.step(9*time.Minute+30*time.Second, votes48(Down, map[string]Verdict{"af": Unknown}), all48)
	f.step(10*time.Minute, votes48(Up, nil), all48)
	f.step(11*time.Minute, votes48(Down, nil), all48)
	d := f.step(11*time.Minute+10*time.Second, votes48(Up, nil), all48)
	sameAnswer(t, d, "healed since 9:00, every member hearing every other, every voter calling it Up",
		" (us counted the Down of 9:30 as an onset after the Up it held while isolated)")
}

// TestAttack_TwoOnsetsInTheWindowButTheUpComesAfterTheOlderLeavesIt: every member hears every
// other. eu's target is Up by a majority, Down at 0:00 (an onset), Up by a majority at 0:30,
// Down again at 8:00 (a second onset, 8 minutes after the first: two onsets within the
// 10-minute window), and the quorum says Up at 10:30. docs/design.md ("Flap damping"): "A
// target with two onsets in the window comes back Up only once the quorum has said Up for
// Judge.FlapDwell (2 minutes); until then it is Down with reason FlapDamped." Without the guard: damp counts
// the onsets when the Up comes, not when the second onset happens, keeping only those still
// within FlapWindow of the Up: at 10:30 the onset of 0:00 has left the window, one is left, and
// the target comes back Up at once. A target whose second failure lasts longer than what is
// left of the window after its first (here 2 minutes) is never damped.
func TestAttack_TwoOnsetsInTheWindowButTheUpComesAfterTheOlderLeavesIt(t *testing.T) {
	j, clk := dampingJudge()
	step := stepper48(t, j, clk)
	step(-time.Minute, Up)
	step(0, Down)
	step(30*time.Second, Up)
	if d := step(8*time.Minute, Down); d.Decision != Down {
		t.Fatalf("second Down: %s %s", d.Decision, d.Reason)
	}
	if d := step(10*time.Minute+30*time.Second, Up); d.Decision != Down || d.Reason != ReasonFlapDamped {
		t.Fatalf("two onsets 8 minutes apart, the quorum Up again at 10:30: %s %s, want Down FlapDamped until 12:30", d.Decision, d.Reason)
	}
}

// TestAttack_ADampedDownIsHeldForTheWholeIsolation: n = 3, Self us, afterIsolationHold Hold.
// eu's target goes Down at 0:00 and 1:00 (two onsets) and every voter says Up from 1:30: us
// damps it (Down, FlapDamped) until 3:30. At 1:40 us is cut from both peers (isolated); eu and
// ap keep seeing and serving the target Up, as they did from 1:30. docs/design.md S1: "No member
// fails over from (stops serving) a target that more than half of the members can reach and see
// Up (with afterIsolationHold: Hold; flap damping may keep a target that went Down twice within
// the flap window out for the dwell)". Without the guard: the damped Down is recorded as the agreed decision
// (Memory.Agreed), so the isolated us holds it (HeldWhileIsolated) for as long as the isolation
// lasts: an hour later it still fails over from a target that every other member has seen Up,
// with a majority voting Up, since 1:30, long past the 2-minute dwell that S1's exception
// allows. (The held Down was never a quorum's Down: the quorum said Up when it was taken.)
func TestAttack_ADampedDownIsHeldForTheWholeIsolation(t *testing.T) {
	j, clk := dampingJudge()
	m := newMember48(t, j, clk, Input{Candidates: cands3(), Hold: 5 * time.Minute})
	step := func(at time.Duration, v Verdict, cut bool) TargetDecision {
		t.Helper()
		return decision(t, m.step(step48{at: at, v: v, cut: cut}), eu4)
	}
	step(-time.Minute, Up, false)
	step(0, Down, false)
	step(30*time.Second, Up, false)
	step(time.Minute, Down, false)
	if d := step(90*time.Second, Up, false); d.Reason != ReasonFlapDamped {
		t.Fatalf("not damped: %s %s", d.Decision, d.Reason)
	}
	step(100*time.Second, Up, true)
	if d := step(time.Hour, Up, true); d.Decision != Up {
		t.Fatalf("an hour into the isolation (Hold), eu's target, Up for every other member since 1:30, is %s %s: "+
			"the dwell (until 3:30) became an hour-long failover", d.Decision, d.Reason)
	}
}
