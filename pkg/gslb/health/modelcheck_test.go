package health

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// The model check of the decision (docs/design.md, "Health and partitions"): an exhaustive
// exploration of Judge.Decide over small fleets, checking the invariants S1, S2, L1 and C1.
//
// The fleet: member 0 is the failover primary and owns T4 and T6 (one target per family),
// member 1 owns the backups U4 and U6, the other members (clusters without targets, or
// witnesses) own nothing. Every member publishes its verdicts (Up, Down, or none: abstain) and
// probes with the same view (Own equals its published verdicts).
//
// A run, for every verdict assignment:
//
//   - step A, before the cut: every member hears every other with fresh records; memory empty.
//   - step B, the cut, for every member m and every view it can have: each other member is,
//     with m's memory restored from step A: heard (its time advanced), heard with a clock 3
//     minutes ahead (advanced), unheard (no record) or unheard with its step-A record frozen;
//     after a restart (empty memory): heard (first sight within the wall-clock bound),
//     unheard (no record), unheard with a stale record, or unheard with a record from the
//     future. Unheard records say Down on every target, so that counting one shows.
//   - step B', the same view after the isolation hold (Hold policy).
//   - step C, the heal: every other member heard again, memory from step B'.
//
// Decide's outcome at m depends only on m's view (who m hears, how), so enumerating every
// member's views enumerates every directed connectivity graph: a graph is one view per member.
// The oracles are checked per member (S1, S2, L1: L1 in a stronger form, with m hearing a
// majority of non-owner members that see the target Down, whether or not they hear each
// other) and across members (C1: every cluster's step-C answer, whatever its step-B view, is
// the same). Members 2.. with equal verdicts are interchangeable: their verdict tuples are
// enumerated sorted (relabelling symmetry).

var (
	mT4, mT6 = netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	mU4, mU6 = netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("2001:db8:1::1")
)

// mMember is one other member as a viewer sees it.
type mMember struct {
	GeoTag  string
	Witness bool
	Record  *Record
	Err     error
}

// mView is one Decide input of the model.
type mView struct {
	Self       string
	Candidates map[string][]netip.Addr
	Own        map[netip.Addr]Verdict
	Members    []mMember
	Hold       time.Duration
	// OwnProbes selects afterIsolationHold OwnProbes (else Hold).
	OwnProbes bool
}

// mOutcome is what the oracles read of a decision.
type mOutcome struct {
	Decision            map[netip.Addr]Verdict
	ServedA, ServedAAAA []string
	NoneA, NoneAAAA     bool
	Isolated            bool
	FailedWithError     error
}

// mJudge is the decision under check: it takes the view at now and the memory returned by the
// previous call (nil: empty) and returns the outcome and the next memory.
type mJudge func(now time.Time, v mView, mem any) (mOutcome, any)

// mConfig is one fleet: clusters (members 0 and 1 included) and witnesses.
type mConfig struct {
	Name      string
	Clusters  int
	Witnesses int
	// OwnProbes: afterIsolationHold OwnProbes, under which S1 is not promised (an isolated
	// member decides alone after the hold); S2, L1 and C1 still are.
	OwnProbes bool
}

func (c mConfig) n() int { return c.Clusters + c.Witnesses }

func (c mConfig) geo(i int) string {
	if i >= c.Clusters {
		return fmt.Sprintf("w%d", i-c.Clusters)
	}
	return fmt.Sprintf("c%d", i)
}

// Member statuses in a view (step B).
const (
	stHeard     = iota // restored: time advanced; empty memory: first sight in bounds
	stHeardSkew        // restored only: time advanced, 3 minutes ahead
	stNone             // no record
	stOld              // restored: step A's record frozen; empty memory: a stale record
	stFuture           // empty memory only: a record 10 minutes in the future
	numStatuses
)

var statusName = [...]string{"fresh", "fresh with its clock 3m ahead", "no record", "frozen/stale record (all Down)", "record from the future (all Down)"}

// statusCost weighs a status in a state's size: the plainer the fault, the smaller.
var statusCost = [...]int{0, 3, 1, 2, 2}

// mState is one explored state, for the violation report.
type mState struct {
	Config   string
	T4, T6   []Verdict // per member
	UDown    bool
	Viewer   int
	Restart  bool
	Statuses []int // per member (the viewer's own entry unused)
	Step     string
}

// size orders states for "the smallest violating state".
func (s mState) size(n int) int {
	k := n * 100
	for i, st := range s.Statuses {
		if i != s.Viewer {
			k += statusCost[st]
		}
	}
	for i := range s.T4 {
		k += int(s.T4[i]) + int(s.T6[i])
	}
	if s.Restart {
		k++
	}
	if s.UDown {
		k++
	}
	return k
}

func (s mState) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, step %s, viewer member %d", s.Config, s.Step, s.Viewer)
	if s.Restart {
		b.WriteString(" (restarted: empty memory)")
	}
	fmt.Fprintf(&b, "; verdicts T4 %v T6 %v; backups U %s", s.T4, s.T6, map[bool]string{true: "Down everywhere", false: "Up everywhere"}[s.UDown])
	if s.Statuses != nil {
		var st []string
		for i, x := range s.Statuses {
			if i != s.Viewer {
				st = append(st, fmt.Sprintf("m%d %s", i, statusName[x]))
			}
		}
		fmt.Fprintf(&b, "; the viewer's records: %s", strings.Join(st, ", "))
	}
	return b.String()
}

// explorer runs the model check of one mJudge and keeps, per invariant, the smallest
// violating state.
type explorer struct {
	judge      mJudge
	calls      int
	views      int
	assigns    int
	violations map[string]mViolation
}

type mViolation struct {
	State mState
	Size  int
	What  string
}

const (
	mValidFor = 90 * time.Second
	mHold     = 5 * time.Minute
)

// verdictTuples returns every verdict vector of n members, members 2.. sorted (symmetry).
func verdictTuples(n int) [][]Verdict {
	var out [][]Verdict
	vals := []Verdict{Unknown, Up, Down}
	var rec func(prefix []Verdict)
	rec = func(prefix []Verdict) {
		if len(prefix) == n {
			out = append(out, slices.Clone(prefix))
			return
		}
		for _, v := range vals {
			if len(prefix) > 2 && v < prefix[len(prefix)-1] {
				continue
			}
			rec(append(prefix, v))
		}
	}
	rec(nil)
	return out
}

// t6Patterns derives the IPv6 target's verdicts from the IPv4 one's: the same, inverted, and
// uniform (every member Up, Down, abstaining); full mixes independent IPv6 vectors are left
// out for time (each target is decided alone; the families meet only in C1 and S2).
func t6Patterns(v4 []Verdict) [][]Verdict {
	inv := make([]Verdict, len(v4))
	for i, v := range v4 {
		inv[i] = map[Verdict]Verdict{Up: Down, Down: Up, Unknown: Unknown}[v]
	}
	uni := func(v Verdict) []Verdict {
		out := make([]Verdict, len(v4))
		for i := range out {
			out[i] = v
		}
		return out
	}
	return [][]Verdict{slices.Clone(v4), inv, uni(Up), uni(Down), uni(Unknown)}
}

// world is one verdict assignment.
type world struct {
	c      mConfig
	v4, v6 []Verdict
	uDown  bool
}

func (w world) verdict(i int, a netip.Addr) Verdict {
	switch a {
	case mT4:
		return w.v4[i]
	case mT6:
		return w.v6[i]
	}
	if w.uDown {
		return Down
	}
	return Up
}

func (w world) candidates() map[string][]netip.Addr {
	return map[string][]netip.Addr{w.c.geo(0): {mT4, mT6}, w.c.geo(1): {mU4, mU6}}
}

func (w world) record(i int, at time.Time, allDown bool) *Record {
	r := &Record{GeoTag: w.c.geo(i), IssuedAt: at, ValidFor: mValidFor}
	for _, a := range []netip.Addr{mT4, mU4, mT6, mU6} {
		switch v := w.verdict(i, a); {
		case allDown || v == Down:
			r.Down = append(r.Down, a)
		case v == Up:
			r.Up = append(r.Up, a)
		}
	}
	r.Up, r.Down = sortAddrs(r.Up), sortAddrs(r.Down)
	return r
}

// twinBefore returns the closest member p < j, p >= 2, p != skip, interchangeable with j (same
// kind, same verdicts), or -1: members 2.. are enumerated up to relabelling.
func (w world) twinBefore(j, skip int) int {
	if j < 3 {
		return -1
	}
	p := j - 1
	if p == skip {
		p--
	}
	if p < 2 || (p >= w.c.Clusters) != (j >= w.c.Clusters) || w.v4[p] != w.v4[j] || w.v6[p] != w.v6[j] {
		return -1
	}
	return p
}

// view builds viewer m's input at now: statuses[j] says how it sees member j; heard statuses
// carry a record issued at now (+3 minutes for stHeardSkew); restart selects the unheard
// records' shape.
func (w world) view(m int, now time.Time, statuses []int, restart bool, tA time.Time) mView {
	v := mView{Self: w.c.geo(m), Candidates: w.candidates(), Own: map[netip.Addr]Verdict{}, Hold: mHold, OwnProbes: w.c.OwnProbes}
	for _, a := range []netip.Addr{mT4, mT6, mU4, mU6} {
		if x := w.verdict(m, a); x != Unknown {
			v.Own[a] = x
		}
	}
	for j := 0; j < w.c.n(); j++ {
		if j == m {
			continue
		}
		mm := mMember{GeoTag: w.c.geo(j), Witness: j >= w.c.Clusters}
		switch statuses[j] {
		case stHeard:
			mm.Record = w.record(j, now, false)
		case stHeardSkew:
			mm.Record = w.record(j, now.Add(3*time.Minute), false)
		case stNone:
			mm.Err = fmt.Errorf("query timed out")
		case stOld:
			at := tA
			if restart {
				at = tA.Add(5 * time.Minute)
			}
			mm.Record = w.record(j, at, true)
		case stFuture:
			mm.Record = w.record(j, tA.Add(20*time.Minute), true)
		}
		v.Members = append(v.Members, mm)
	}
	return v
}

// allHeard is a status vector with every member heard.
func allHeard(n int) []int { return make([]int, n) }

// check applies S1, S2 and L1 to viewer m's outcome; heard[j] says m holds a fresh record of j.
func (x *explorer) check(w world, st mState, m int, heard []int, out mOutcome) {
	n := w.c.n()
	if m >= w.c.Clusters {
		return // a witness serves nothing
	}
	if out.FailedWithError != nil {
		x.violate(st, n, "S2", fmt.Sprintf("Decide failed: %v", out.FailedWithError))
		return
	}
	if len(out.ServedA) == 0 || len(out.ServedAAAA) == 0 {
		x.violate(st, n, "S2", fmt.Sprintf("an empty family: A %v AAAA %v", out.ServedA, out.ServedAAAA))
	}
	for _, a := range []netip.Addr{mT4, mT6, mU4, mU6} {
		owner := 0
		if a == mU4 || a == mU6 {
			owner = 1
		}
		ups, downs := 0, 0
		for j := 0; j < n; j++ {
			if w.verdict(j, a) == Up {
				ups++
			}
			if j != owner && w.verdict(j, a) == Down && (j == m || heard[j] <= stHeardSkew) {
				downs++
			}
		}
		if 2*ups > n && out.Decision[a] != Up && !w.c.OwnProbes {
			x.violate(st, n, "S1", fmt.Sprintf("%s: %d of %d members see it Up, decided %s", a, ups, n, out.Decision[a]))
		}
		served := slices.Contains(out.ServedA, a.String()) || slices.Contains(out.ServedAAAA, a.String())
		none := (a.Is4() && out.NoneA) || (a.Is6() && out.NoneAAAA)
		if 2*downs > n && (out.Decision[a] != Down || (served && !none)) {
			x.violate(st, n, "L1", fmt.Sprintf("%s: %d of %d members heard see it Down (owner excluded), decided %s, served %v", a, downs, n, out.Decision[a], served))
		}
	}
}

func (x *explorer) violate(st mState, n int, inv, what string) {
	size := st.size(n)
	if v, ok := x.violations[inv]; ok && v.Size <= size {
		return
	}
	st.Statuses = slices.Clone(st.Statuses)
	x.violations[inv] = mViolation{State: st, Size: size, What: what}
}

func (x *explorer) decide(now time.Time, v mView, mem any) (mOutcome, any) {
	x.calls++
	return x.judge(now, v, mem)
}

// world runs steps A, B, B' and C of one verdict assignment for every viewer and view.
func (x *explorer) world(w world) {
	x.assigns++
	n := w.c.n()
	tA := t0
	base := mState{Config: w.c.Name, T4: w.v4, T6: w.v6, UDown: w.uDown}
	memA := make([]any, n)
	heal := map[string]bool{}
	for m := 0; m < n; m++ {
		if w.twinBefore(m, -1) >= 0 {
			continue // a relabelling of viewer m-1: the same outcomes
		}
		st := base
		st.Viewer, st.Step, st.Statuses = m, "A (before the cut)", allHeard(n)
		out, mem := x.decide(tA, w.view(m, tA, allHeard(n), false, tA), nil)
		x.check(w, st, m, allHeard(n), out)
		memA[m] = mem
		for _, restart := range []bool{false, true} {
			allowed := []int{stHeard, stHeardSkew, stNone, stOld}
			if restart {
				allowed = []int{stHeard, stNone, stOld, stFuture}
			}
			statuses := allHeard(n)
			x.views += x.views0(w, base, m, restart, allowed, statuses, 0, memA[m], heal)
		}
		tC := tA.Add(10*time.Minute + mHold + 2*time.Minute)
		out, _ = x.decide(tC, w.view(m, tC, allHeard(n), false, tA), nil)
		st.Step, st.Restart = "C (the heal, after a restart)", true
		x.check(w, st, m, allHeard(n), out)
		if m < w.c.Clusters {
			heal[answerKey(out)] = true
		}
	}
	if len(heal) > 1 {
		keys := make([]string, 0, len(heal))
		for k := range heal {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		st := base
		st.Step = "C (the heal)"
		x.violate(st, n, "C1", fmt.Sprintf("after the heal the clusters answer differently: %s", strings.Join(keys, " | ")))
	}
}

// views0 enumerates viewer m's step-B views (statuses of members j and up) and runs steps B,
// B' and C for each; it returns the number of views.
func (x *explorer) views0(w world, base mState, m int, restart bool, allowed, statuses []int, j int, memA any, heal map[string]bool) int {
	n := w.c.n()
	if j == m {
		j++
	}
	if j < n {
		total := 0
		for _, s := range allowed {
			if p := w.twinBefore(j, m); p >= 0 && s < statuses[p] {
				continue // a relabelling of a view already explored
			}
			statuses[j] = s
			total += x.views0(w, base, m, restart, allowed, statuses, j+1, memA, heal)
		}
		statuses[j] = stHeard
		return total
	}
	tA := t0
	tB := tA.Add(10 * time.Minute)
	tB2 := tB.Add(mHold + time.Minute)
	tC := tB2.Add(time.Minute)
	st := base
	st.Viewer, st.Restart, st.Statuses = m, restart, statuses
	mem := memA
	if restart {
		mem = nil
	}
	for _, step := range []struct {
		name string
		at   time.Time
	}{{"B (the cut)", tB}, {"B' (the cut, after the hold)", tB2}} {
		var out mOutcome
		out, mem = x.decide(step.at, w.view(m, step.at, statuses, restart, tA), mem)
		st.Step = step.name
		x.check(w, st, m, statuses, out)
	}
	out, _ := x.decide(tC, w.view(m, tC, allHeard(n), restart, tA), mem)
	st.Step = "C (the heal)"
	x.check(w, st, m, allHeard(n), out)
	if m < w.c.Clusters {
		heal[answerKey(out)] = true
	}
	return 1
}

func answerKey(o mOutcome) string {
	return fmt.Sprintf("A %v%s AAAA %v%s", o.ServedA, map[bool]string{true: " (none healthy)"}[o.NoneA],
		o.ServedAAAA, map[bool]string{true: " (none healthy)"}[o.NoneAAAA])
}

// modelConfigs are the fleets checked.
var modelConfigs = []mConfig{
	{Name: "3 clusters", Clusters: 3},
	{Name: "2 clusters + 1 witness", Clusters: 2, Witnesses: 1},
	{Name: "4 clusters", Clusters: 4},
	{Name: "5 clusters", Clusters: 5},
	{Name: "3 clusters, afterIsolationHold OwnProbes (S1 not promised)", Clusters: 3, OwnProbes: true},
	{Name: "2 clusters + 1 witness, afterIsolationHold OwnProbes (S1 not promised)", Clusters: 2, Witnesses: 1, OwnProbes: true},
}

// runModel explores every configuration with judge; short limits the 4- and 5-member fleets
// to the IPv6 verdicts equal to the IPv4 ones and the backups Up. It returns a report per
// configuration and the violations.
func runModel(judge mJudge, short bool, logf func(string, ...any)) map[string]mViolation {
	all := map[string]mViolation{}
	for _, c := range modelConfigs {
		start := time.Now()
		x := &explorer{judge: judge, violations: map[string]mViolation{}}
		for _, v4 := range verdictTuples(c.n()) {
			pats := t6Patterns(v4)
			uModes := []bool{false, true}
			if short && c.n() >= 4 {
				pats, uModes = pats[:1], uModes[:1]
			}
			for _, v6 := range pats {
				for _, uDown := range uModes {
					x.world(world{c: c, v4: v4, v6: v6, uDown: uDown})
				}
			}
		}
		logf("model check %s: %d verdict assignments, %d member views (covering all %d directed connectivity graphs), %d Decide calls, %s",
			c.Name, x.assigns, x.views, 1<<(c.n()*(c.n()-1)), x.calls, time.Since(start).Round(time.Millisecond))
		for inv, v := range x.violations {
			if old, ok := all[inv]; !ok || v.Size < old.Size {
				all[inv] = v
			}
		}
	}
	return all
}

// TestModelCheck_Decide: S1, S2, L1 and C1 hold in every explored state. By default (make
// test runs it under -race) the 4- and 5-member fleets are limited to a fixed subset (runModel's
// short); DNSPLANE_MODELCHECK=full explores the whole space (minutes:
// `DNSPLANE_MODELCHECK=full go test -run TestModelCheck -v ./pkg/gslb/health/`).
func TestModelCheck_Decide(t *testing.T) {
	full := os.Getenv("DNSPLANE_MODELCHECK") == "full"
	t.Logf("model check: full space %v (DNSPLANE_MODELCHECK=full for the whole space)", full)
	viols := runModel(newModelJudge, !full, t.Logf)
	for _, inv := range []string{"S1", "S2", "L1", "C1"} {
		if v, ok := viols[inv]; ok {
			t.Errorf("%s violated (smallest state): %s\n    in: %s", inv, v.What, v.State)
		}
	}
}
