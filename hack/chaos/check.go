package main

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"
)

// Violation is one invariant broken by one member's answers of one type while the ground
// truth stayed the same (one schedule state): the first and last such answer and their count.
type Violation struct {
	Invariant   string
	First, Last time.Time
	Count       int
	Member      int
	Type        string
	Detail      string
	Fault       string // the change that made the state
}

// Report is what Check found.
type Report struct {
	Faults     int // faults injected (changes whose What starts with "+")
	Answers    int // answers checked (after the first change, without an error)
	Unanswered int // queries after the first change that got no answer (timeout, refused...)
	Failovers  []time.Duration
	Heals      []time.Duration
	Violations []Violation
}

// segment is one state of the schedule with what the invariants need, and since when (the
// start of the run of consecutive states in which it holds; zero when it does not hold).
type segment struct {
	start, end  time.Time
	what        string
	state       State
	protSince   [2]time.Time     // S1: the primary's target of each family is protected
	heardSince  []time.Time      // S1: the member hears a majority
	dropSince   [][]time.Time    // L1: [target index][member]
	healedSince time.Time        // C1
	dwell       [2]time.Duration // flap damping's delay of the primary's target of each family
}

// checker holds Check's working state.
type checker struct {
	w          World
	segs       []segment
	damped     [][]window // C1: by target index, the times flap damping may hold it out
	rep        Report
	lastServed [][2]time.Time // S1: the member's last answer with the primary's target
	open       map[string]int // violation index by invariant, member, type, key and state
}

// Check reads the answers against the schedule's states and reports every violation of S1, S2,
// L1 and C1 (docs/reliability.md, "The nemesis"), with the failover and heal times. It is pure:
// its result depends only on its arguments. Answers before the first change are not checked.
func Check(w World, changes []Change, answers []Answer) Report {
	c := &checker{w: w, segs: segments(w, changes), open: map[string]int{}}
	c.damped = dampedTargets(w, c.segs)
	c.lastServed = make([][2]time.Time, len(w.Members))
	for _, ch := range changes {
		if strings.HasPrefix(ch.What, "+") {
			c.rep.Faults++
		}
	}
	answers = slices.Clone(answers)
	slices.SortStableFunc(answers, func(a, b Answer) int { return a.At.Compare(b.At) })
	rounds := map[int][]Answer{}
	for _, a := range answers {
		i := c.segmentAt(a.At)
		if i < 0 {
			continue
		}
		if a.Err != "" || (a.Rcode != "NOERROR" && a.Rcode != "NXDOMAIN") {
			c.rep.Unanswered++
			continue
		}
		c.rep.Answers++
		rounds[a.Round] = append(rounds[a.Round], a)
		c.answer(i, a)
	}
	c.consistency(rounds)
	c.failovers(answers)
	c.heals(rounds)
	slices.SortStableFunc(c.rep.Violations, func(a, b Violation) int { return a.First.Compare(b.First) })
	return c.rep
}

// segments computes each state's premises and since when they hold.
func segments(w World, changes []Change) []segment {
	n := len(w.Members)
	segs := make([]segment, len(changes))
	for i, ch := range changes {
		s := &segs[i]
		s.start, s.what, s.state = ch.At, ch.What, ch.State
		s.end = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		if i+1 < len(changes) {
			s.end = changes[i+1].At
		}
		var prev *segment
		if i > 0 {
			prev = &segs[i-1]
		}
		since := func(holds bool, before func(*segment) time.Time) time.Time {
			switch {
			case !holds:
				return time.Time{}
			case prev == nil:
				return ch.At.Add(-w.Grace) // the run starts converged: every member answers the primary
			case !before(prev).IsZero():
				return before(prev)
			}
			return ch.At
		}
		for f := range 2 {
			s.protSince[f] = since(ch.State.protected(Target{w.Primary, f}), func(p *segment) time.Time { return p.protSince[f] })
		}
		s.heardSince = make([]time.Time, n)
		for m := range n {
			s.heardSince[m] = since(ch.State.heardMajority(m), func(p *segment) time.Time { return p.heardSince[m] })
		}
		s.dropSince = make([][]time.Time, 2*n)
		for ti := range 2 * n {
			drop := ch.State.mustDrop(Target{ti / 2, ti % 2})
			s.dropSince[ti] = make([]time.Time, n)
			for m := range n {
				s.dropSince[ti][m] = since(drop[m], func(p *segment) time.Time { return p.dropSince[ti][m] })
			}
		}
		s.healedSince = since(ch.State.healed(), func(p *segment) time.Time { return p.healedSince })
	}
	damping(w, segs)
	return segs
}

// damping sets each state's dwell: FlapDwell for the primary's target of a family whose
// protected run began within FlapWindow of two onsets of L1's premise on it (each an agreed Up to
// Down), which the decision's flap damping keeps out for the dwell after it is up again.
func damping(w World, segs []segment) {
	for f := range 2 {
		ti := 2*w.Primary + f
		var onsets []time.Time
		for i := range segs {
			if i > 0 && dropping(segs[i].dropSince[ti]) && !dropping(segs[i-1].dropSince[ti]) {
				onsets = append(onsets, segs[i].start)
			}
			ps := segs[i].protSince[f]
			if ps.IsZero() || w.FlapDwell == 0 {
				continue
			}
			recent := 0
			for _, o := range onsets {
				if !o.After(ps) && ps.Sub(o) <= w.FlapWindow {
					recent++
				}
			}
			if recent >= 2 {
				segs[i].dwell[f] = w.FlapDwell
			}
		}
	}
}

// dropping reports whether some member is under L1's premise.
func dropping(since []time.Time) bool {
	return slices.ContainsFunc(since, func(t time.Time) bool { return !t.IsZero() })
}

// segmentAt returns the index of the state at t, -1 before the first.
func (c *checker) segmentAt(t time.Time) int {
	return sort.Search(len(c.segs), func(i int) bool { return c.segs[i].start.After(t) }) - 1
}

// after reports whether since holds and at is at least the grace window past it.
func (c *checker) after(since, at time.Time) bool {
	return !since.IsZero() && at.Sub(since) >= c.w.Grace
}

// fam is the family of a query type.
func fam(qtype string) int {
	if qtype == "AAAA" {
		return V6
	}
	return V4
}

// has reports whether values hold addr (compared as addresses).
func has(values []string, addr string) bool {
	want, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	for _, v := range values {
		if got, err := netip.ParseAddr(v); err == nil && got == want {
			return true
		}
	}
	return false
}

// answer checks one member's answer against S2, S1 and L1.
func (c *checker) answer(i int, a Answer) {
	seg, f, m := &c.segs[i], fam(a.Type), a.Member
	name := c.w.Members[m].Name
	if len(a.Values) == 0 {
		c.violate("S2", i, a, "", fmt.Sprintf("%s answered %s empty (%s): every member always has a %s target", name, a.Type, a.Rcode, a.Type))
	}
	primary := c.w.Members[c.w.Primary].Addr[f]
	if ps := seg.protSince[f]; c.after(ps.Add(seg.dwell[f]), a.At) {
		served := has(a.Values, primary)
		switch {
		case served:
			c.lastServed[m][f] = a.At
		case c.after(seg.heardSince[m], a.At):
			c.violate("S1", i, a, primary, fmt.Sprintf("%s hears a majority and answered %s %v without the primary's target %s, which %s since %s",
				name, a.Type, a.Values, primary, c.upBy(seg.state, Target{c.w.Primary, f}), c.since(ps)))
		case c.lastServed[m][f].Sub(ps) >= c.w.Grace+seg.dwell[f]:
			c.violate("S1", i, a, primary, fmt.Sprintf("%s stopped serving the primary's target %s (last served %s, now %s %v), which %s since %s",
				name, primary, clock(c.lastServed[m][f]), a.Type, a.Values, c.upBy(seg.state, Target{c.w.Primary, f}), c.since(ps)))
		}
	}
	for o := range c.w.Members {
		t := Target{o, f}
		addr := c.w.Members[o].Addr[f]
		if ds := seg.dropSince[2*o+f][m]; c.after(ds, a.At) && has(a.Values, addr) {
			c.violate("L1", i, a, addr, fmt.Sprintf("%s answered %s %v with %s, which a connected majority (%s) sees down since %s",
				name, a.Type, a.Values, addr, c.dropSet(seg.state, t), c.since(ds)))
		}
	}
}

// since formats the start of a premise, the run's start for one that held from it.
func (c *checker) since(t time.Time) string {
	if t.Before(c.segs[0].start) {
		return clock(c.segs[0].start) + " (the run's start)"
	}
	return clock(t)
}

// upBy names the members that reach t and see it up.
func (c *checker) upBy(s State, t Target) string {
	var names []string
	for m := range s.n() {
		if s.sees(m, t) {
			names = append(names, c.w.Members[m].Name)
		}
	}
	return fmt.Sprintf("%d of %d members (%s) reach and see up", len(names), s.n(), strings.Join(names, " "))
}

// dropSet names mustDrop's members for t.
func (c *checker) dropSet(s State, t Target) string {
	var names []string
	for m, d := range s.mustDrop(t) {
		if d {
			names = append(names, c.w.Members[m].Name)
		}
	}
	return strings.Join(names, " ")
}

// violate records a violation, merged with the previous one of the same invariant, member,
// type and key within the same state.
func (c *checker) violate(inv string, seg int, a Answer, key, detail string) {
	k := fmt.Sprintf("%s/%d/%s/%s/%d", inv, a.Member, a.Type, key, seg)
	if i, ok := c.open[k]; ok {
		v := &c.rep.Violations[i]
		v.Last = a.At
		v.Count++
		return
	}
	c.rep.Violations = append(c.rep.Violations, Violation{Invariant: inv, First: a.At, Last: a.At, Count: 1,
		Member: a.Member, Type: a.Type, Detail: detail, Fault: c.segs[seg].what})
	c.open[k] = len(c.rep.Violations) - 1
}

// consistency checks C1: in each round past the grace window after the heal and after the last
// change (a target failing while healed moves every member, not all in the same round), every
// member that answered a type gave the same answer.
func (c *checker) consistency(rounds map[int][]Answer) {
	for _, r := range slices.Sorted(maps.Keys(rounds)) {
		as := rounds[r]
		i := c.segmentAt(as[0].At)
		dwell := max(c.segs[i].dwell[V4], c.segs[i].dwell[V6])
		if !c.after(c.segs[i].healedSince.Add(dwell), as[0].At) || !c.after(c.segs[i].start.Add(dwell), as[0].At) {
			continue
		}
		for _, qt := range qtypes {
			var ref *Answer
			for k := range as {
				a := &as[k]
				if a.Type != qt {
					continue
				}
				if ref == nil {
					ref = a
					continue
				}
				if !sameSet(ref.Values, a.Values) && !c.dampingExplains(ref.Values, a.Values, qt, a.At) {
					c.violate("C1", i, *a, "", fmt.Sprintf("healed since %s: %s answered %s %v, %s answered %v in the same round",
						c.since(c.segs[i].healedSince), c.w.Members[a.Member].Name, qt, a.Values, c.w.Members[ref.Member].Name, ref.Values))
				}
			}
		}
	}
}

// sameSet reports whether a and b hold the same addresses.
func sameSet(a, b []string) bool {
	norm := func(vs []string) []string {
		var out []string
		for _, v := range vs {
			if p, err := netip.ParseAddr(v); err == nil {
				out = append(out, p.String())
			} else {
				out = append(out, v)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(norm(a), norm(b))
}

// clock formats a time of day in UTC, to the millisecond.
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// failovers measures, for each state in which a connected majority starts to see a primary's
// target down (L1's premise, with no member under it before), how long until every member of
// that majority left it out of an answer.
func (c *checker) failovers(answers []Answer) {
	for i := 1; i < len(c.segs); i++ {
		for f := range 2 {
			ti := 2*c.w.Primary + f
			if dropping(c.segs[i-1].dropSince[ti]) {
				continue
			}
			onset, worst, ok := c.segs[i].start, time.Duration(0), false
			for m, since := range c.segs[i].dropSince[ti] {
				if since.IsZero() {
					continue
				}
				took, found := c.firstWithout(answers, m, qtypes[f], c.w.Members[c.w.Primary].Addr[f], onset, c.runEnd(i, func(s *segment) bool { return !s.dropSince[ti][m].IsZero() }))
				if !found {
					ok = false
					break
				}
				worst, ok = max(worst, took), true
			}
			if ok {
				c.rep.Failovers = append(c.rep.Failovers, worst)
			}
		}
	}
}

// runEnd is the end of the run of states from i on in which holds holds.
func (c *checker) runEnd(i int, holds func(*segment) bool) time.Time {
	for j := i; j < len(c.segs); j++ {
		if !holds(&c.segs[j]) {
			return c.segs[j].start
		}
	}
	return c.segs[len(c.segs)-1].end
}

// firstWithout returns how long after from member m first answered qtype without addr, before end.
func (c *checker) firstWithout(answers []Answer, m int, qtype, addr string, from, end time.Time) (time.Duration, bool) {
	for _, a := range answers {
		if a.Member != m || a.Type != qtype || a.Err != "" || a.At.Before(from) || a.Rcode != "NOERROR" {
			continue
		}
		if !a.At.Before(end) {
			break
		}
		if !has(a.Values, addr) {
			return a.At.Sub(from), true
		}
	}
	return 0, false
}

// heals measures, for each state that heals every link (C1's premise), how long until a round
// in which every member answered both types and all answers of a type were the same.
func (c *checker) heals(rounds map[int][]Answer) {
	ids := slices.Sorted(maps.Keys(rounds))
	for i := 1; i < len(c.segs); i++ {
		if c.segs[i].healedSince != c.segs[i].start || !c.segs[i-1].healedSince.IsZero() {
			continue
		}
		onset := c.segs[i].start
		end := c.runEnd(i, func(s *segment) bool { return !s.healedSince.IsZero() })
		for _, r := range ids {
			as := rounds[r]
			if as[0].At.Before(onset) {
				continue
			}
			if !as[0].At.Before(end) {
				break
			}
			if c.agree(as) {
				c.rep.Heals = append(c.rep.Heals, as[0].At.Sub(onset))
				break
			}
		}
	}
}

// agree reports whether every member answered both types in as, each type the same everywhere.
func (c *checker) agree(as []Answer) bool {
	if len(as) != 2*len(c.w.Members) {
		return false
	}
	ref := map[string][]string{}
	for _, a := range as {
		if r, ok := ref[a.Type]; ok && !sameSet(r, a.Values) {
			return false
		}
		ref[a.Type] = a.Values
	}
	return true
}

// window is a span of time, from and to included.
type window struct{ from, to time.Time }

// dampedTargets returns, for every target, the windows in which flap damping may still hold it
// out at some member while others serve it: after each end of L1's premise on it that two onsets
// within FlapWindow preceded, for the grace window plus FlapDwell plus the largest clock offset
// any member runs with in the run. A member restarted with its clock stepped restores the
// damping's times (status.targets[].flap) on its new clock, so it ends the dwell up to the step
// later (or earlier) than the others: C1's damping exception (docs/design.md).
func dampedTargets(w World, segs []segment) [][]window {
	out := make([][]window, 2*len(w.Members))
	if w.FlapDwell == 0 {
		return out
	}
	var skew time.Duration
	for _, sg := range segs {
		for _, d := range sg.state.Skew {
			skew = max(skew, d.Abs())
		}
	}
	for ti := range out {
		var onsets []time.Time
		for i := 1; i < len(segs); i++ {
			was, is := dropping(segs[i-1].dropSince[ti]), dropping(segs[i].dropSince[ti])
			switch {
			case is && !was:
				onsets = append(onsets, segs[i].start)
			case was && !is && recentOnsets(onsets, segs[i].start, w.FlapWindow+w.Grace) >= 2:
				e := segs[i].start
				out[ti] = append(out[ti], window{from: e, to: e.Add(w.Grace + w.FlapDwell + skew)})
			}
		}
	}
	return out
}

// recentOnsets counts the onsets within span before at.
func recentOnsets(onsets []time.Time, at time.Time, span time.Duration) int {
	n := 0
	for _, o := range onsets {
		if !o.After(at) && at.Sub(o) <= span {
			n++
		}
	}
	return n
}

// dampingExplains reports whether two answers of type qt at at differ only in targets that flap
// damping may hold out at some member then (dampedTargets).
func (c *checker) dampingExplains(a, b []string, qt string, at time.Time) bool {
	f := fam(qt)
	for _, v := range append(slices.Clone(a), b...) {
		if has(a, v) && has(b, v) {
			continue
		}
		ti := slices.IndexFunc(c.w.Members, func(m Member) bool { return has([]string{m.Addr[f]}, v) })
		if ti < 0 || !slices.ContainsFunc(c.damped[2*ti+f], func(w window) bool { return !at.Before(w.from) && !at.After(w.to) }) {
			return false
		}
	}
	return true
}
