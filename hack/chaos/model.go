package main

import (
	"slices"
	"time"
)

// Families of the targets: index 0 is IPv4 (A), 1 is IPv6 (AAAA).
const (
	V4 = 0
	V6 = 1
)

// qtypes names the query type of each family.
var qtypes = [2]string{"A", "AAAA"}

// World is the fixed shape of a run: its members, the failover primary and the grace window.
type World struct {
	Seed    int64         `json:"seed"`
	Members []Member      `json:"members"`
	Primary int           `json:"primary"`
	Grace   time.Duration `json:"grace"`
	// FlapWindow and FlapDwell are the decision's flap damping (docs/design.md, "Health and
	// partitions"): a target that went down twice within FlapWindow comes back only after
	// FlapDwell of up verdicts. Zero: no damping.
	FlapWindow time.Duration `json:"flapWindow,omitempty"`
	FlapDwell  time.Duration `json:"flapDwell,omitempty"`
}

// Member is one member: its geo tag, its DNS server and its two targets.
type Member struct {
	Name string    `json:"name"`
	DNS  string    `json:"dns"`
	Addr [2]string `json:"addr"` // the IPv4 and the IPv6 target
}

// Target is one member's target of one family.
type Target struct{ Owner, Fam int }

// State is the ground truth at one moment, as the harness made it.
type State struct {
	// Running: the member's manager runs and answered /readyz since its last start.
	Running []bool `json:"running"`
	// Cut[a][b]: a's processes cannot reach b's DNS server nor b's targets (one direction).
	Cut [][]bool `json:"cut"`
	// Down[m][f]: m's target of family f does not listen.
	Down [][2]bool `json:"down"`
	// Skew[m] is the clock offset m's manager runs with.
	Skew []time.Duration `json:"skew"`
}

// NewState is n running members, no cut, every target up, no skew.
func NewState(n int) State {
	s := State{Running: make([]bool, n), Cut: make([][]bool, n), Down: make([][2]bool, n), Skew: make([]time.Duration, n)}
	for i := range n {
		s.Running[i] = true
		s.Cut[i] = make([]bool, n)
	}
	return s
}

// Clone is a deep copy.
func (s State) Clone() State {
	c := State{Running: slices.Clone(s.Running), Down: slices.Clone(s.Down), Skew: slices.Clone(s.Skew)}
	for _, row := range s.Cut {
		c.Cut = append(c.Cut, slices.Clone(row))
	}
	return c
}

// Change is the state from At on, until the next change; What says which fault made it.
type Change struct {
	At    time.Time `json:"at"`
	What  string    `json:"what"`
	State State     `json:"state"`
}

// Answer is one answer of one member's DNS server (or the error in its place).
type Answer struct {
	At     time.Time `json:"at"` // when the query was sent
	Round  int       `json:"round"`
	Member int       `json:"member"`
	Type   string    `json:"type"` // A or AAAA
	Rcode  string    `json:"rcode,omitempty"`
	Values []string  `json:"values,omitempty"`
	Err    string    `json:"err,omitempty"`
}

// n is the number of members.
func (s State) n() int { return len(s.Running) }

// sees reports whether member s can reach target t and finds it up.
func (s State) sees(m int, t Target) bool {
	return s.Running[m] && !s.Down[t.Owner][t.Fam] && (m == t.Owner || !s.Cut[m][t.Owner])
}

// hears reports whether a can read b's records: both run and a reaches b.
func (s State) hears(a, b int) bool {
	return s.Running[a] && s.Running[b] && (a == b || !s.Cut[a][b])
}

// mutual reports whether a and b hear each other.
func (s State) mutual(a, b int) bool { return s.hears(a, b) && s.hears(b, a) }

// protected reports S1's premise: more than half of the members run, reach t and see it up.
func (s State) protected(t Target) bool {
	return s.majority(func(m int) bool { return s.sees(m, t) })
}

// heardMajority reports whether m hears more than half of the members, itself included.
func (s State) heardMajority(m int) bool {
	return s.majority(func(b int) bool { return s.hears(m, b) })
}

// majority reports whether f holds for more than half of the members.
func (s State) majority(f func(m int) bool) bool {
	n := 0
	for m := range s.n() {
		if f(m) {
			n++
		}
	}
	return 2*n > s.n()
}

// healed reports C1's premise: every member runs and reaches every other.
func (s State) healed() bool {
	for a := range s.n() {
		for b := range s.n() {
			if !s.hears(a, b) {
				return false
			}
		}
	}
	return true
}

// mustDrop returns L1's members for target t: the union of every set S of running members that
// hear each other pairwise, whose members other than t's owner number more than half of the
// members and all see t down, and who all see another target of t's family up at a member they
// all hear (so that the strategy has another target to serve). Each member of such a set must
// leave t out of its answers.
func (s State) mustDrop(t Target) []bool {
	n := s.n()
	out := make([]bool, n)
	for mask := 1; mask < 1<<n; mask++ {
		var set []int
		for m := range n {
			if mask&(1<<m) != 0 {
				set = append(set, m)
			}
		}
		if s.downMajority(t, set) {
			for _, m := range set {
				out[m] = true
			}
		}
	}
	return out
}

// downMajority reports whether set is one of mustDrop's sets for t.
func (s State) downMajority(t Target, set []int) bool {
	voters := 0
	for i, a := range set {
		if !s.Running[a] {
			return false
		}
		for _, b := range set[i+1:] {
			if !s.mutual(a, b) {
				return false
			}
		}
		if a != t.Owner {
			if s.sees(a, t) {
				return false
			}
			voters++
		}
	}
	if 2*voters <= s.n() {
		return false
	}
	for o := range s.n() {
		u := Target{Owner: o, Fam: t.Fam}
		if o != t.Owner && all(set, func(m int) bool { return s.sees(m, u) && s.hears(m, o) }) {
			return true
		}
	}
	return false
}

func all(set []int, f func(int) bool) bool {
	for _, m := range set {
		if !f(m) {
			return false
		}
	}
	return true
}
