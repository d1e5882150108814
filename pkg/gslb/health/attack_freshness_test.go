package health

import (
	"net/netip"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestAttack_FastDeadMemberReplayedRecordsCountAgain: ap's clock is 10 minutes fast (reported
// as ClockSkew, and counted since its time advances, as docs/design.md's table says). ap dies
// at t0; two servers of its zone serve its last two records and us reads them alternately:
// the doc's own replay scenario, with the writer's clock ahead. docs/design.md ("Freshness")
// states that a dead member stops counting one validity after its last record, whatever either
// clock says. Without the guard: every read of the last (top) record resets the lower track
// (Freshness returns `f.with(top, mark{})`), so each read of the older record is a first sight,
// judged by the wall-clock rule with a new first sight; once the reader's clock reaches the
// older record's (future) time minus the skew, the dead member is heard again, ~9 minutes
// after it died, for about v+2·skew.
func TestAttack_FastDeadMemberReplayedRecordsCountAgain(t *testing.T) {
	f := newFastDeadAP(t)
	j, clk, v, apRec, eu, in := f.j, f.clk, f.v, f.apRec, f.eu, &f.in
	// ap alive: its time advances every 30 s.
	for i := -2; i <= 0; i++ {
		clk.SetTime(t0.Add(time.Duration(i) * 30 * time.Second))
		in.Members = []Member{eu(), {GeoTag: "ap", Record: apRec(clk.Now())}}
		in.Memory = decide(t, j, *in).Memory
	}
	older, last := apRec(t0.Add(-30*time.Second)), apRec(t0)
	for i := 1; i <= 120; i++ { // one reconcile every 30 s for an hour after ap died
		now := t0.Add(time.Duration(i) * 30 * time.Second)
		clk.SetTime(now)
		r := last
		if i%2 == 1 {
			r = older
		}
		in.Members = []Member{eu(), {GeoTag: "ap", Record: r}}
		res := decide(t, j, *in)
		in.Memory = res.Memory
		if _, gone := res.MemberErrs["ap"]; !gone && now.Sub(t0) > v+DefaultMaxSkew {
			t.Fatalf("%s after ap died (validity %s), reading its record of %s: ap is heard (heard %d): a dead member's replayed record counts again",
				now.Sub(t0), v, r.IssuedAt.Format(time.RFC3339), res.Heard)
		}
	}
}

// TestAttack_FastDeadMemberOldestRecordBelowBothTracks: the same dead, 10-minute-fast ap, its
// zone's servers serving three versions: us saw its last record (top) and the one before
// (lower track), and from then on only reads the oldest. Without the guard: a record below both tracked
// times is judged by the wall-clock rule alone with a first sight of now at every read (the
// `default` case of Freshness: `j.judge(at, mark{}, false)`), so "at most v after the first
// sight" never applies: ap counts again once the reader's clock reaches the oldest record's
// time minus the skew, ~9 minutes after it died. No alternation is needed.
func TestAttack_FastDeadMemberOldestRecordBelowBothTracks(t *testing.T) {
	f := newFastDeadAP(t)
	j, clk, v, apRec, eu, in := f.j, f.clk, f.v, f.apRec, f.eu, &f.in
	for i := -2; i <= 0; i++ { // alive, advancing
		clk.SetTime(t0.Add(time.Duration(i) * 30 * time.Second))
		in.Members = []Member{eu(), {GeoTag: "ap", Record: apRec(clk.Now())}}
		in.Memory = decide(t, j, *in).Memory
	}
	oldest, older := apRec(t0.Add(-60*time.Second)), apRec(t0.Add(-30*time.Second))
	for i := 1; i <= 120; i++ {
		now := t0.Add(time.Duration(i) * 30 * time.Second)
		clk.SetTime(now)
		r := oldest
		if i == 1 {
			r = older
		}
		in.Members = []Member{eu(), {GeoTag: "ap", Record: r}}
		res := decide(t, j, *in)
		in.Memory = res.Memory
		if _, gone := res.MemberErrs["ap"]; !gone && now.Sub(t0) > v+DefaultMaxSkew {
			t.Fatalf("%s after ap died (validity %s), reading its record of %s: ap is heard (heard %d)",
				now.Sub(t0), v, r.IssuedAt.Format(time.RFC3339), res.Heard)
		}
	}
}

// fastDeadAP is the world of the fast-dead-member tests: us reads eu (fresh) and ap, whose
// clock is 10 minutes fast and whose records are valid v.
type fastDeadAP struct {
	j     Judge
	clk   *testclock.FakePassiveClock
	v     time.Duration
	apRec func(at time.Time) *Record
	eu    func() Member
	in    Input
}

func newFastDeadAP(t *testing.T) *fastDeadAP {
	t.Helper()
	j, clk := judge()
	const fast = 10 * time.Minute
	v := 90 * time.Second
	return &fastDeadAP{j: j, clk: clk, v: v,
		apRec: func(at time.Time) *Record {
			return &Record{GeoTag: "ap", IssuedAt: at.Add(fast), ValidFor: v, Down: as(eu4)}
		},
		eu: func() Member {
			return Member{GeoTag: "eu", Record: &Record{GeoTag: "eu", IssuedAt: clk.Now(), ValidFor: v, Up: as(us4, ap4)}}
		},
		in: Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(),
			Own: map[netip.Addr]Verdict{eu4: Up, us4: Up, ap4: Up}},
	}
}
