package health

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// decide runs j.Decide and fails the test on an error.
func decide(t *testing.T, j Judge, in Input) Result {
	t.Helper()
	res, err := j.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDecide_ALoneClusterNeverFailsOverWhenOthersAbstain: us alone probes eu's target Down.
// Members that abstain (a restarted member's empty record, a member without healthCheck, a
// member that has no verdict on a new target) never help a Down: the quorum is over the
// membership, not over the members that have a verdict.
func TestDecide_ALoneClusterNeverFailsOverWhenOthersAbstain(t *testing.T) {
	own := map[netip.Addr]Verdict{eu4: Down, us4: Up, ap4: Up}
	for _, tc := range []struct {
		name    string
		cands   map[string][]netip.Addr
		members []Member
	}{
		{name: "the others' records are fresh and empty (restarted)", cands: cands3(),
			members: []Member{{GeoTag: "eu", Record: rec("eu", nil, nil)}, {GeoTag: "ap", Record: rec("ap", nil, nil)}}},
		{name: "ap has a verdict on its own target only", cands: cands3(),
			members: []Member{{GeoTag: "eu", Record: rec("eu", as(eu4), nil)}, {GeoTag: "ap", Record: rec("ap", as(ap4), nil)}}},
		{name: "two clusters, eu without healthCheck (no record)", cands: map[string][]netip.Addr{"eu": {eu4}, "us": {us4}},
			members: []Member{{GeoTag: "eu", Err: errors.New("answered without a verdict record")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, _ := judge()
			res := decide(t, j, Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: tc.cands, Own: own, Members: tc.members})
			if d := decision(t, res, eu4); d.Decision != Up || !slices.Equal(res.ServedA, strs(eu4)) {
				t.Fatalf("eu's target %v (%s), A %v: a lone cluster failed over", d.Decision, d.Reason, res.ServedA)
			}
			if res.Known != len(tc.members)+1 {
				t.Fatalf("known %d, want every member", res.Known)
			}
		})
	}
}

// TestDecide_RestoredMemoryKeepsHeldDecisions: a member isolated for longer than the hold
// restarts with its persisted memory; with the default AfterHold it still serves the last
// agreed answer (eu's target Down, us's served), not its own probes, and the memory it returns
// keeps the agreed decisions for the next restart.
func TestDecide_RestoredMemoryKeepsHeldDecisions(t *testing.T) {
	j, clk := judge()
	in := Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(), Hold: 300 * time.Second,
		Own:     map[netip.Addr]Verdict{eu4: Down, us4: Up, ap4: Up},
		Members: []Member{{GeoTag: "eu", Record: rec("eu", as(us4, ap4), nil)}, {GeoTag: "ap", Record: rec("ap", as(us4), as(eu4))}}}
	res := decide(t, j, in)
	if decision(t, res, eu4).Decision != Down {
		t.Fatalf("agreed: %+v", res.Targets)
	}
	in.Memory = res.Memory
	in.Members = []Member{{GeoTag: "eu", Err: errTimeout}, {GeoTag: "ap", Err: errTimeout}}
	clk.SetTime(t0.Add(time.Minute))
	res = decide(t, j, in)
	// The restart, an hour later: the memory comes back from status; own probes now say eu is
	// up (this cluster's link to eu healed, the others still unheard).
	restored := Memory{Agreed: map[netip.Addr]Verdict{}, IsolatedSince: res.Memory.IsolatedSince}
	for a, v := range res.Memory.Agreed {
		restored.Agreed[a] = v
	}
	clk.SetTime(t0.Add(time.Hour))
	in.Memory, in.Own = restored, map[netip.Addr]Verdict{eu4: Up, us4: Up, ap4: Up}
	res = decide(t, Judge{Clock: clk}, in)
	d := decision(t, res, eu4)
	if !res.Isolated || d.Decision != Down || d.Reason != ReasonHeldWhileIsolated || !slices.Equal(res.ServedA, strs(us4, ap4)) {
		t.Fatalf("after the restart: isolated %v, eu %v %s, A %v; want the agreed answer held", res.Isolated, d.Decision, d.Reason, res.ServedA)
	}
	if res.Memory.Agreed[eu4] != Down || !res.Memory.IsolatedSince.Equal(restored.IsolatedSince) {
		t.Fatalf("memory after the restart %+v", res.Memory)
	}
}

// TestDecide_PerFamily: failover, never-empty and NoHealthyTargets are decided per family.
func TestDecide_PerFamily(t *testing.T) {
	cands := map[string][]netip.Addr{"eu": {eu4, eu6}, "us": {us4}, "ap": {ap4}}
	t.Run("eu's IPv4 Down by quorum, its IPv6 Up: A fails over to us, AAAA keeps eu", func(t *testing.T) {
		j, _ := judge()
		res := decide(t, j, Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands,
			Own:     map[netip.Addr]Verdict{eu4: Down, eu6: Up, us4: Up, ap4: Up},
			Members: []Member{{GeoTag: "eu", Record: rec("eu", as(eu4, eu6), nil)}, {GeoTag: "ap", Record: rec("ap", as(eu6, us4), as(eu4))}}})
		if !slices.Equal(res.ServedA, strs(us4, ap4)) || !slices.Equal(res.ServedAAAA, strs(eu6)) || res.NoHealthyTargets() {
			t.Fatalf("A %v AAAA %v (no healthy %v); want A us+ap, AAAA eu's", res.ServedA, res.ServedAAAA, res.NoHealthyTargets())
		}
		if got := res.Answer().Targets; !slices.Equal(got, strs(us4, ap4, eu6)) {
			t.Fatalf("published answer %v", got)
		}
	})
	t.Run("every IPv4 Down, one IPv6 Up: A serves every IPv4 candidate, NoHealthyTargets for IPv4 only", func(t *testing.T) {
		j, _ := judge()
		res := decide(t, j, Input{Self: "us", Strategy: gslb.RoundRobin, Candidates: cands,
			Own:     map[netip.Addr]Verdict{eu4: Down, eu6: Up, us4: Down, ap4: Down},
			Members: []Member{{GeoTag: "eu", Record: rec("eu", as(eu6), as(us4, ap4))}, {GeoTag: "ap", Record: rec("ap", as(eu6), as(eu4, us4))}}})
		if !slices.Equal(res.ServedA, strs(eu4, us4, ap4)) || !slices.Equal(res.ServedAAAA, strs(eu6)) || !res.NoHealthyTargetsA || res.NoHealthyTargetsAAAA {
			t.Fatalf("A %v AAAA %v, no healthy A %v AAAA %v", res.ServedA, res.ServedAAAA, res.NoHealthyTargetsA, res.NoHealthyTargetsAAAA)
		}
	})
}

// TestDecide_WeightedNeverEmpty: weights {eu: 100, us: 0}, eu Down by quorum, us Up: us is
// served (a family with a candidate never answers empty).
func TestDecide_WeightedNeverEmpty(t *testing.T) {
	j, _ := judge()
	res := decide(t, j, Input{Self: "us", Strategy: gslb.Weighted, Weights: map[string]int32{"eu": 100, "us": 0},
		Candidates: map[string][]netip.Addr{"eu": {eu4}, "us": {us4}}, Own: map[netip.Addr]Verdict{eu4: Down, us4: Up},
		Members: []Member{{GeoTag: "eu", Record: rec("eu", as(us4), nil)}, {GeoTag: "wit", Witness: true, Record: rec("wit", as(us4), as(eu4))}}})
	if decision(t, res, eu4).Decision != Down || !slices.Equal(res.ServedA, strs(us4)) || len(res.AnswerA.Weighted) != 1 || res.AnswerA.Weighted[0].Weight <= 0 {
		t.Fatalf("eu %v, A %v, sets %+v; want us served", decision(t, res, eu4).Decision, res.ServedA, res.AnswerA.Weighted)
	}
}

// TestDecide_OwnersDoNotVote: the owner's verdict on its own target (probed from inside) is
// shown but never counted. Two clusters: eu's own Down is not a second vote; two clusters
// and a witness: us and the witness take eu's target out although eu sees it Up.
func TestDecide_OwnersDoNotVote(t *testing.T) {
	two := map[string][]netip.Addr{"eu": {eu4}, "us": {us4}}
	j, _ := judge()
	res := decide(t, j, Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: two,
		Own: map[netip.Addr]Verdict{eu4: Down, us4: Up}, Members: []Member{{GeoTag: "eu", Record: rec("eu", as(us4), as(eu4))}}})
	if d := decision(t, res, eu4); d.Decision != Up || d.Voters != 1 || d.Downs != 1 || len(d.Peers) != 1 || !d.Peers[0].Owner {
		t.Fatalf("two clusters, eu's own Down counted: %+v", d)
	}
	res = decide(t, j, Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: two,
		Own: map[netip.Addr]Verdict{eu4: Down, us4: Up}, Members: []Member{{GeoTag: "eu", Record: rec("eu", as(eu4, us4), nil)},
			{GeoTag: "wit", Witness: true, Record: rec("wit", as(us4), as(eu4))}}})
	if d := decision(t, res, eu4); d.Decision != Down || !slices.Equal(res.ServedA, strs(us4)) {
		t.Fatalf("two clusters and a witness: %+v, A %v", d, res.ServedA)
	}
}

// TestDecide_LongerValidityElsewhereIsBoundedAndReported: ap claims a validity of an hour (a
// longer --gslb-interval there) while this reader's own is 90 s: ap's record counts for its
// claim, and ap is reported in LongValidity; a claim past MaxValidFor counts for MaxValidFor
// only.
func TestDecide_LongerValidityElsewhereIsBoundedAndReported(t *testing.T) {
	for _, claim := range []time.Duration{time.Hour, 2 * MaxValidFor} {
		j, clk := judge()
		granted := min(claim, MaxValidFor)
		long := &Record{GeoTag: "ap", IssuedAt: t0, ValidFor: claim, Down: as(eu4)}
		in := Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(), ValidityCap: 90 * time.Second,
			Own:     map[netip.Addr]Verdict{eu4: Down},
			Members: []Member{{GeoTag: "eu", Record: rec("eu", nil, nil)}, {GeoTag: "ap", Record: long}}}
		res := decide(t, j, in)
		if decision(t, res, eu4).Decision != Down || res.LongValidity["ap"] != granted {
			t.Fatalf("claim %s, fresh: %+v, long validity %v", claim, res.Targets, res.LongValidity)
		}
		for _, at := range []time.Duration{200 * time.Second, granted, granted + time.Second} {
			clk.SetTime(t0.Add(at))
			in.Memory = res.Memory
			in.Members[0].Record = &Record{GeoTag: "eu", IssuedAt: t0.Add(at), ValidFor: 90 * time.Second}
			res = decide(t, j, in)
			stale := errors.Is(res.MemberErrs["ap"], ErrStale)
			if d := decision(t, res, eu4); stale != (at > granted) || (d.Decision == Down) == stale {
				t.Fatalf("claim %s, %s after first sight: %+v, ap %v", claim, at, d, res.MemberErrs["ap"])
			}
		}
	}
}

// TestDecide_SkewedClockCountsOnceItsTimeAdvances: ap's clock is 2 minutes ahead. At first
// sight its record is from the future (not counted, offset reported); once its time advances
// on this reader's clock it counts, the offset still reported; frozen, it stops counting one
// validity later.
func TestDecide_SkewedClockCountsOnceItsTimeAdvances(t *testing.T) {
	j, clk := judge()
	skewed := func(now time.Time) *Record {
		return &Record{GeoTag: "ap", IssuedAt: now.Add(2 * time.Minute), ValidFor: 90 * time.Second, Down: as(eu4)}
	}
	in := Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(), Own: map[netip.Addr]Verdict{eu4: Down},
		Members: []Member{{GeoTag: "eu", Record: rec("eu", nil, nil)}, {GeoTag: "ap", Record: skewed(t0)}}}
	res := decide(t, j, in)
	if d := decision(t, res, eu4); d.Decision != Up || !errors.Is(res.MemberErrs["ap"], ErrFromFuture) || res.ClockOffsets["ap"] != 2*time.Minute {
		t.Fatalf("first sight: %+v, ap %v, offsets %v", d, res.MemberErrs["ap"], res.ClockOffsets)
	}
	step := func(now time.Time, apAt *Record) Result {
		clk.SetTime(now)
		in.Memory = res.Memory
		in.Members = []Member{{GeoTag: "eu", Record: &Record{GeoTag: "eu", IssuedAt: now, ValidFor: 90 * time.Second}}, {GeoTag: "ap", Record: apAt}}
		return decide(t, j, in)
	}
	res = step(t0.Add(30*time.Second), skewed(t0.Add(30*time.Second)))
	if d := decision(t, res, eu4); d.Decision != Down || res.ClockOffsets["ap"] != 2*time.Minute || res.MemberErrs["ap"] != nil {
		t.Fatalf("after the advance: %+v, ap %v, offsets %v", d, res.MemberErrs["ap"], res.ClockOffsets)
	}
	frozen := skewed(t0.Add(30 * time.Second))
	res = step(t0.Add(119*time.Second), frozen)
	if decision(t, res, eu4).Decision != Down {
		t.Fatal("frozen within its validity: not counted")
	}
	res = step(t0.Add(121*time.Second), frozen)
	if d := decision(t, res, eu4); d.Decision != Up || !errors.Is(res.MemberErrs["ap"], ErrStale) {
		t.Fatalf("frozen for longer than its validity by the reader's clock: %+v, ap %v", d, res.MemberErrs["ap"])
	}
}

// TestDecide_FlappingIsDamped: a target that went Down twice within the flap window comes back
// Up only once the quorum has said Up for the dwell; damping never delays a Down, and the
// family stays served (never empty).
func TestDecide_FlappingIsDamped(t *testing.T) {
	j, clk := dampingJudge()
	in := Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3()}
	var res Result
	step := func(at time.Duration, v Verdict) TargetDecision {
		t.Helper()
		now := t0.Add(at)
		clk.SetTime(now)
		r := func(g string) *Record { return euVote(g, now, 90*time.Second, v) }
		in.Own = map[netip.Addr]Verdict{eu4: v}
		in.Members = []Member{{GeoTag: "eu", Record: r("eu")}, {GeoTag: "ap", Record: r("ap")}}
		res = decide(t, j, in)
		in.Memory = res.Memory
		if len(res.ServedA) == 0 {
			t.Fatal("empty answer")
		}
		return decision(t, res, eu4)
	}
	for i, s := range []struct {
		at     time.Duration
		v      Verdict
		want   Verdict
		reason string
	}{
		{0, Up, Up, ReasonHealthy}, {time.Minute, Down, Down, ReasonQuorumDown}, {2 * time.Minute, Up, Up, ReasonHealthy},
		{3 * time.Minute, Down, Down, ReasonQuorumDown}, {4 * time.Minute, Up, Down, ReasonFlapDamped},
		{5 * time.Minute, Up, Down, ReasonFlapDamped}, {6 * time.Minute, Up, Up, ReasonHealthy},
		{7 * time.Minute, Down, Down, ReasonQuorumDown},
	} {
		if d := step(s.at, s.v); d.Decision != s.want || d.Reason != s.reason {
			t.Fatalf("step %d (%s, quorum %s): %s %s, want %s %s", i, s.at, s.v, d.Decision, d.Reason, s.want, s.reason)
		}
	}
	// The window passes: Up at once, and the damping state is forgotten.
	if d := step(30*time.Minute, Up); d.Decision != Up || d.Reason != ReasonHealthy {
		t.Fatalf("after the window: %s %s", d.Decision, d.Reason)
	}
	if f, kept := res.Memory.Flaps[eu4]; kept {
		t.Fatalf("damping state kept after the window: %+v", f)
	}
}
