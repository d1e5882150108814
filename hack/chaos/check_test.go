package main

import (
	"strings"
	"testing"
	"time"
)

// The checker's tests: hand-built schedules and answer logs of three members (g1 the primary),
// with a 10 s grace window.

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func testWorld() World {
	w := World{Seed: 1, Primary: 0, Grace: 10 * time.Second}
	for i, name := range []string{"g1", "g2", "g3"} {
		w.Members = append(w.Members, Member{Name: name, DNS: "127.0.0.1" + string(rune('1'+i)) + ":53",
			Addr: [2]string{"127.0.0.2" + string(rune('1'+i)), "fd00:d1::2" + string(rune('1'+i))}})
	}
	return w
}

// at is t0 plus s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// answerFunc gives member m's answer of family f at a time: its values.
type answerFunc func(t time.Time, m, f int) []string

// rounds makes one round a second from from to to (seconds): every member answers A and AAAA.
func rounds(w World, from, to float64, fn answerFunc) []Answer {
	var out []Answer
	for s := from; s < to; s++ {
		for m := range w.Members {
			for f, qt := range qtypes {
				out = append(out, Answer{At: at(s), Round: int(s), Member: m, Type: qt, Rcode: "NOERROR", Values: fn(at(s), m, f)})
			}
		}
	}
	return out
}

// primaryEverywhere answers the primary's targets at every member.
func primaryEverywhere(w World) answerFunc {
	return func(_ time.Time, _, f int) []string { return []string{w.Members[w.Primary].Addr[f]} }
}

// cut cuts a from b and b from a.
func cut(s State, a, b int) State {
	s = s.Clone()
	s.Cut[a][b], s.Cut[b][a] = true, true
	return s
}

// isolate cuts m from every other member, both ways.
func isolate(s State, m int) State {
	for o := range s.n() {
		if o != m {
			s = cut(s, m, o)
		}
	}
	return s
}

func wantViolations(t *testing.T, rep Report, inv string, n int, contains string) {
	t.Helper()
	got := 0
	for _, v := range rep.Violations {
		if v.Invariant == inv {
			got++
			if !strings.Contains(v.Detail, contains) {
				t.Errorf("%s violation %q does not say %q", inv, v.Detail, contains)
			}
		}
	}
	if got != n || len(rep.Violations) != n {
		t.Fatalf("violations %+v, want %d of %s and no other", rep.Violations, n, inv)
	}
}

func TestCheck_ACleanLogHasNoViolation(t *testing.T) {
	w := testWorld()
	s0 := NewState(3)
	down := s0.Clone()
	down.Down[0][V4] = true // the primary's IPv4 target stops: every member sees it down
	changes := []Change{{At: at(0), What: "start", State: s0}, {At: at(20), What: "+cut g2|g1", State: cut(s0, 1, 0)},
		{At: at(60), What: "-cut g2|g1", State: s0}, {At: at(100), What: "+target g1 A", State: down}}
	log := rounds(w, 0, 103, primaryEverywhere(w))
	// Failover of A after 3 s (within the grace window); AAAA stays.
	log = append(log, rounds(w, 103, 140, func(_ time.Time, m, f int) []string {
		if f == V4 {
			return []string{w.Members[1].Addr[V4], w.Members[2].Addr[V4]}
		}
		return []string{w.Members[0].Addr[V6]}
	})...)
	rep := Check(w, changes, log)
	if len(rep.Violations) != 0 {
		t.Fatalf("violations in a clean log: %+v", rep.Violations)
	}
	if rep.Faults != 2 || rep.Answers != 140*6 || len(rep.Failovers) != 1 || rep.Failovers[0] != 3*time.Second || len(rep.Heals) != 1 || rep.Heals[0] != 0 {
		t.Fatalf("report %+v, want 2 faults, 840 answers, one failover of 3s, one heal of 0s", rep)
	}
}

func TestCheck_S2_AnEmptyAnswer(t *testing.T) {
	w := testWorld()
	log := rounds(w, 0, 30, func(t time.Time, m, f int) []string {
		if m == 2 && f == V6 && t.Equal(at(5)) {
			return nil
		}
		return []string{w.Members[0].Addr[f]}
	})
	rep := Check(w, []Change{{At: at(0), State: NewState(3)}}, log)
	// The empty answer also leaves out the primary's target, which every member sees up: S1 too.
	if len(rep.Violations) != 2 || rep.Violations[0].Invariant != "S2" || rep.Violations[1].Invariant != "S1" ||
		!strings.Contains(rep.Violations[0].Detail, "g3 answered AAAA empty") || !rep.Violations[0].First.Equal(at(5)) {
		t.Fatalf("violations %+v, want S2 (g3's empty AAAA at 12:00:05) and S1", rep.Violations)
	}
}

func TestCheck_S1_AMemberThatHearsAMajorityFailsOverAlone(t *testing.T) {
	w := testWorld()
	s0 := NewState(3)
	changes := []Change{{At: at(0), State: s0}, {At: at(10), What: "+cut g2|g1", State: cut(s0, 1, 0)}}
	// g2, cut from g1, drops g1's IPv4 target from 25 s on although g1 and g3 see it up.
	log := rounds(w, 0, 40, func(t time.Time, m, f int) []string {
		if m == 1 && f == V4 && !t.Before(at(25)) {
			return []string{w.Members[1].Addr[V4]}
		}
		return []string{w.Members[0].Addr[f]}
	})
	wantViolations(t, Check(w, changes, log), "S1", 1, "g2 hears a majority")
}

func TestCheck_S1_AnIsolatedMemberStopsServingAfterARestart(t *testing.T) {
	w := testWorld()
	s0 := NewState(3)
	iso := isolate(s0, 2)
	killed := iso.Clone()
	killed.Running[2] = false
	changes := []Change{{At: at(0), State: s0}, {At: at(10), What: "+isolate g3", State: iso},
		{At: at(30), What: "+kill g3", State: killed}, {At: at(40), What: "-kill g3", State: iso}}
	// Isolated g3 holds the primary until its restart, then serves its own target.
	log := rounds(w, 0, 60, func(t time.Time, m, f int) []string {
		if m == 2 && !t.Before(at(40)) {
			return []string{w.Members[2].Addr[f]}
		}
		return []string{w.Members[0].Addr[f]}
	})
	wantViolations(t, Check(w, changes, log), "S1", 2, "g3 stopped serving the primary's target")
}

func TestCheck_L1_AConnectedMajoritySeesTheTargetDownAndKeepsIt(t *testing.T) {
	w := testWorld()
	s0 := NewState(3)
	down := s0.Clone()
	down.Down[0][V6] = true
	changes := []Change{{At: at(0), State: s0}, {At: at(10), What: "+target g1 AAAA", State: down}}
	// Nobody fails AAAA over: within the grace window that is no violation, after it is.
	rep := Check(w, changes, rounds(w, 0, 30, primaryEverywhere(w)))
	wantViolations(t, rep, "L1", 3, "which a connected majority (g1 g2 g3) sees down since 12:00:10.000")
	for _, v := range rep.Violations {
		if !v.First.Equal(at(20)) || v.Count != 10 {
			t.Errorf("violation %+v, want from 12:00:20 (the grace window past the fault), 10 answers", v)
		}
	}
}

func TestCheck_L1_AMinorityThatSeesTheTargetDownIsNoPremise(t *testing.T) {
	w := testWorld()
	s0 := NewState(3)
	// g3 cut from g1 one way only: g3 sees g1's targets down, g2 sees them up: one of two voters.
	one := s0.Clone()
	one.Cut[2][0] = true
	changes := []Change{{At: at(0), State: s0}, {At: at(10), What: "+cut g3->g1", State: one}}
	if rep := Check(w, changes, rounds(w, 0, 40, primaryEverywhere(w))); len(rep.Violations) != 0 {
		t.Fatalf("violations %+v, want none", rep.Violations)
	}
}

func TestCheck_C1_AfterTheHealMembersDisagree(t *testing.T) {
	w := testWorld()
	s0 := NewState(3)
	changes := []Change{{At: at(0), State: s0}, {At: at(10), What: "+split g3|g1 g2", State: isolate(s0, 2)},
		{At: at(30), What: "-split g3|g1 g2", State: s0}}
	// g3 keeps its own IPv4 target after the heal.
	log := rounds(w, 0, 50, func(t time.Time, m, f int) []string {
		if m == 2 && f == V4 && !t.Before(at(20)) {
			return []string{w.Members[2].Addr[V4]}
		}
		return []string{w.Members[0].Addr[f]}
	})
	rep := Check(w, changes, log)
	var c1 []Violation
	for _, v := range rep.Violations {
		if v.Invariant == "C1" {
			c1 = append(c1, v)
		}
	}
	if len(c1) != 1 || !c1[0].First.Equal(at(40)) || !strings.Contains(c1[0].Detail, "g3 answered A [127.0.0.23], g1 answered [127.0.0.21]") {
		t.Fatalf("C1 violations %+v, want one from 12:00:40 naming g3 and g1", c1)
	}
}

func TestCheck_C1_ATargetChangeWhileHealedIsGivenTheGraceWindow(t *testing.T) {
	w := testWorld()
	s0 := NewState(3)
	down := s0.Clone()
	down.Down[0][V4] = true
	changes := []Change{{At: at(0), State: s0}, {At: at(20), What: "+target g1 A", State: down}}
	// The members leave g1's IPv4 target one after another: g1 at 22 s, g2 at 23 s, g3 at 24 s.
	log := rounds(w, 0, 40, func(t time.Time, m, f int) []string {
		if f == V4 && !t.Before(at(22+float64(m))) {
			return []string{w.Members[1].Addr[V4], w.Members[2].Addr[V4]}
		}
		return []string{w.Members[0].Addr[f]}
	})
	if rep := Check(w, changes, log); len(rep.Violations) != 0 {
		t.Fatalf("violations %+v, want none: the members disagree within the grace window only", rep.Violations)
	}
}

func TestCheck_S1_FlapDampingDelaysATargetDownTwiceByItsDwell(t *testing.T) {
	w := testWorld()
	s0 := NewState(3)
	down := s0.Clone()
	down.Down[0][V4] = true
	changes := []Change{{At: at(0), State: s0}, {At: at(10), What: "+target g1 A", State: down}, {At: at(30), What: "-target g1 A", State: s0},
		{At: at(60), What: "+target g1 A", State: down}, {At: at(80), What: "-target g1 A", State: s0}}
	// g1's IPv4 target is out from 12 s to 32 s, and after its second failure from 62 s until
	// the dwell (60 s) has passed since it came back: 140 s.
	log := rounds(w, 0, 160, func(t time.Time, m, f int) []string {
		s := t.Sub(t0).Seconds()
		if f == V4 && ((s >= 12 && s < 32) || (s >= 62 && s < 140)) {
			return []string{w.Members[1].Addr[V4], w.Members[2].Addr[V4]}
		}
		return []string{w.Members[0].Addr[f]}
	})
	w.FlapWindow, w.FlapDwell = 10*time.Minute, time.Minute
	if rep := Check(w, changes, log); len(rep.Violations) != 0 {
		t.Fatalf("violations %+v, want none: damping keeps the target out for the dwell", rep.Violations)
	}
	w.FlapDwell = 0
	wantViolations(t, Check(w, changes, log), "S1", 3, "hears a majority and answered A")
}

func TestCheck_C1_ARestartWithAClockStepDampsUpToTheStepLonger(t *testing.T) {
	w := testWorld()
	s0 := NewState(3)
	s0.Down[0][V6] = true // the primary's IPv6 target is down throughout: AAAA is g2's and g3's
	down := s0.Clone()
	down.Down[1][V6] = true
	skewed := s0.Clone()
	skewed.Skew[2] = -30 * time.Second
	changes := []Change{{At: at(0), State: s0}, {At: at(10), What: "+target g2 AAAA", State: down}, {At: at(30), What: "-target g2 AAAA", State: s0},
		{At: at(60), What: "+target g2 AAAA", State: down}, {At: at(80), What: "-target g2 AAAA", State: s0},
		{At: at(100), What: "+skew g3 -30s", State: skewed}}
	// g2's IPv6 target went down twice within the window: damped for the dwell (60 s) after it
	// came back at 80 s. g3, restarted at 100 s with its clock 30 s behind, restored that
	// damping and ends it 30 s later than g1 and g2 by their clocks.
	log := rounds(w, 0, 200, func(t time.Time, m, f int) []string {
		s := t.Sub(t0).Seconds()
		if f == V4 {
			return []string{w.Members[0].Addr[V4]}
		}
		end := 140.0
		if m == 2 {
			end = 170
		}
		if (s >= 12 && s < 32) || (s >= 62 && s < end) {
			return []string{w.Members[2].Addr[V6]}
		}
		return []string{w.Members[1].Addr[V6], w.Members[2].Addr[V6]}
	})
	w.FlapWindow, w.FlapDwell = 10*time.Minute, time.Minute
	if rep := Check(w, changes, log); len(rep.Violations) != 0 {
		t.Fatalf("violations %+v, want none: a restart with its clock 30 s behind damps up to 30 s longer", rep.Violations)
	}
	w.FlapDwell = 0
	wantViolations(t, Check(w, changes, log), "C1", 1, "g3 answered AAAA")
}
