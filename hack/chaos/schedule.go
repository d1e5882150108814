package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Op kinds: the primitive actions of a schedule.
const (
	OpCut        = "cut"         // drop A's packets to B's DNS server and targets
	OpUncut      = "uncut"       // undo one OpCut
	OpKill       = "kill"        // SIGKILL A's manager
	OpStart      = "start"       // start A's manager (Skew its clock offset)
	OpTargetDown = "target-down" // close A's target listener of family Fam
	OpTargetUp   = "target-up"   // listen again
)

// Op is one primitive action.
type Op struct {
	Kind string
	A, B int
	Fam  int
	Skew time.Duration
}

// Step is what the schedule does at one time: its ops, as one change named What ("+..." when
// it injects a fault, "-..." when it undoes one).
type Step struct {
	At   time.Duration // from the schedule's start
	What string
	Ops  []Op
	// Await, when above 0, holds the step until member Await-1's manager has been ready for
	// Settle: a restarted member is observed before the fault around it ends, however long
	// its start takes.
	Await  int
	Settle time.Duration
}

// Plan is the seeded schedule: episodes of one or two faults held for the grace window plus
// 5 to 25 s, each followed by a quiet time of the grace window plus 2 to 12 s with every fault
// undone. The same seed and arguments give the same steps.
func Plan(seed int64, names []string, primary int, duration, grace time.Duration, skew bool) []Step {
	r := rand.New(rand.NewPCG(uint64(seed), 0x6e656d65736973))
	p := planner{r: r, names: names, primary: primary, skew: skew}
	var steps []Step
	for at := 5 * time.Second; ; {
		hold := grace + time.Duration(5+r.IntN(21))*time.Second
		quiet := grace + time.Duration(2+r.IntN(11))*time.Second
		if at+hold+quiet > duration {
			break
		}
		steps = append(steps, p.episode(at, hold)...)
		at += hold + quiet
	}
	slices.SortStableFunc(steps, func(a, b Step) int { return int(a.At - b.At) })
	return steps
}

// planner draws episodes.
type planner struct {
	r       *rand.Rand
	names   []string
	primary int
	skew    bool
}

// kinds of fault an episode draws from; restart kinds need a manager restart.
var (
	faultKinds   = []string{"symcut", "asymcut", "split", "bridge", "kill", "isolate-restart", "target", "skew"}
	restartKinds = []string{"kill", "isolate-restart", "skew"}
)

// episode draws one or two faults from at, undone after hold; at most one restarts a manager.
func (p *planner) episode(at, hold time.Duration) []Step {
	first := p.kind(false)
	steps := p.fault(first, at, hold)
	if p.r.IntN(2) == 0 {
		second := p.kind(slices.Contains(restartKinds, first))
		steps = append(steps, p.fault(second, at+time.Duration(p.r.IntN(10))*time.Second, hold)...)
	}
	return steps
}

// kind draws a fault kind; noRestart leaves out those that restart a manager.
func (p *planner) kind(noRestart bool) string {
	for {
		k := faultKinds[p.r.IntN(len(faultKinds))]
		if noRestart && slices.Contains(restartKinds, k) {
			continue
		}
		return k
	}
}

// member draws a member, the primary half of the time (the faults that matter involve it).
func (p *planner) member() int {
	if p.r.IntN(2) == 0 {
		return p.primary
	}
	return p.r.IntN(len(p.names))
}

// other draws a member other than m.
func (p *planner) other(m int) int {
	o := p.r.IntN(len(p.names) - 1)
	if o >= m {
		o++
	}
	return o
}

// fault is the steps of one fault of kind from at, undone at at+hold.
func (p *planner) fault(kind string, at, hold time.Duration) []Step {
	m := p.member()
	name := p.names[m]
	on := func(what string, ops ...Op) Step { return Step{At: at, What: "+" + what, Ops: ops} }
	off := func(what string, ops ...Op) Step { return Step{At: at + hold, What: "-" + what, Ops: ops} }
	switch kind {
	case "symcut":
		o := p.other(m)
		what := fmt.Sprintf("cut %s|%s", name, p.names[o])
		return []Step{on(what, cuts(OpCut, []int{m}, []int{o}, true)...), off(what, cuts(OpUncut, []int{m}, []int{o}, true)...)}
	case "asymcut":
		o := p.other(m)
		if p.r.IntN(2) == 0 {
			m, o = o, m
		}
		what := fmt.Sprintf("cut %s->%s", p.names[m], p.names[o])
		return []Step{on(what, Op{Kind: OpCut, A: m, B: o}), off(what, Op{Kind: OpUncut, A: m, B: o})}
	case "split", "bridge":
		return p.partition(kind, m, at, hold)
	case "kill":
		return []Step{on("kill "+name, Op{Kind: OpKill, A: m}), off("kill "+name+" (restart)", Op{Kind: OpStart, A: m})}
	case "isolate-restart":
		if m == p.primary { // the primary serves its own targets anyway
			m = p.other(m)
			name = p.names[m]
		}
		rest := p.others(m)
		mid := at + hold/2
		heal := off("isolate "+name, cuts(OpUncut, []int{m}, rest, true)...)
		heal.Await, heal.Settle = m+1, hold/2
		return []Step{on("isolate "+name, cuts(OpCut, []int{m}, rest, true)...),
			{At: mid, What: "+kill " + name + " (isolated)", Ops: []Op{{Kind: OpKill, A: m}}},
			{At: mid + time.Second, What: "-kill " + name + " (restart while isolated)", Ops: []Op{{Kind: OpStart, A: m}}},
			heal}
	case "target":
		f := p.r.IntN(2)
		what := fmt.Sprintf("target %s %s", name, qtypes[f])
		return []Step{on(what, Op{Kind: OpTargetDown, A: m, Fam: f}), off(what, Op{Kind: OpTargetUp, A: m, Fam: f})}
	case "skew":
		d := time.Duration(45+p.r.IntN(136)) * time.Second
		if p.r.IntN(2) == 0 {
			d = -d
		}
		what := fmt.Sprintf("skew %s %s", name, d)
		if !p.skew { // the same schedule, with a plain restart in place of the skewed one
			d, what = 0, fmt.Sprintf("restart %s (skew %s left out: no --gslb-clock-offset)", name, d)
		}
		undo := off(what, Op{Kind: OpKill, A: m}, Op{Kind: OpStart, A: m})
		undo.Await, undo.Settle = m+1, hold
		return []Step{on(what, Op{Kind: OpKill, A: m}, Op{Kind: OpStart, A: m, Skew: d}), undo}
	}
	panic("unknown fault kind " + kind)
}

// partition cuts the members into two sides, both ways: a minority (m and up to n/2-1 more)
// and the rest ("split"), or two sides and a bridge member m that reaches both ("bridge").
func (p *planner) partition(kind string, m int, at, hold time.Duration) []Step {
	rest := p.others(m)
	p.r.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	var a, b []int
	var what string
	if kind == "split" || len(rest) < 2 {
		k := p.r.IntN(len(p.names) / 2) // m and k more: a minority
		a, b = append([]int{m}, rest[:k]...), rest[k:]
		what = fmt.Sprintf("split %s|%s", p.list(a), p.list(b))
	} else {
		k := 1 + p.r.IntN(len(rest)-1)
		a, b = rest[:k], rest[k:]
		what = fmt.Sprintf("bridge %s between %s|%s", p.names[m], p.list(a), p.list(b))
	}
	return []Step{{At: at, What: "+" + what, Ops: cuts(OpCut, a, b, true)}, {At: at + hold, What: "-" + what, Ops: cuts(OpUncut, a, b, true)}}
}

// others is every member but m.
func (p *planner) others(m int) []int {
	var out []int
	for o := range p.names {
		if o != m {
			out = append(out, o)
		}
	}
	return out
}

// list names the members, sorted, space-separated.
func (p *planner) list(ms []int) string {
	ms = slices.Sorted(slices.Values(ms))
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = p.names[m]
	}
	return strings.Join(names, " ")
}

// cuts is kind for every link from a to b (and back when both).
func cuts(kind string, a, b []int, both bool) []Op {
	var ops []Op
	for _, x := range a {
		for _, y := range b {
			ops = append(ops, Op{Kind: kind, A: x, B: y})
			if both {
				ops = append(ops, Op{Kind: kind, A: y, B: x})
			}
		}
	}
	return ops
}
