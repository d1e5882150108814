package health

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestDecide_SteppedBackWriterIsUnheardForAtMostTwoRecords: ap is alive
// throughout. Its clock steps back 5 minutes (NTP correcting it) just after its record of t0.
// docs/design.md ("Freshness"): its first record after the step starts the lower track (by the
// wall-clock rule, stale here: 5 minutes is more than v + skew), it counts from its second
// record, and the one record whose time equals the highest time seen before the step (t0) is
// judged on the top track, stale: a reader cannot tell it from an old record read again. So ap
// is unheard for at most two records' lifetimes (here one republish period each, within one
// validity), and no decision is ever wrong: every target stays Up and served, and the reader
// is never isolated.
func TestDecide_SteppedBackWriterIsUnheardForAtMostTwoRecords(t *testing.T) {
	j, clk := judge()
	v := 90 * time.Second
	const period = 30 * time.Second
	in := Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(),
		Own: map[netip.Addr]Verdict{eu4: Up, us4: Up, ap4: Up}}
	read := func(now, apAt time.Time) Result {
		clk.SetTime(now)
		in.Members = []Member{{GeoTag: "eu", Record: &Record{GeoTag: "eu", IssuedAt: now, ValidFor: v, Up: as(us4, ap4)}},
			{GeoTag: "ap", Record: &Record{GeoTag: "ap", IssuedAt: apAt, ValidFor: v, Up: as(eu4, us4)}}}
		res := decide(t, j, in)
		in.Memory = res.Memory
		return res
	}
	for i := -2; i <= 0; i++ {
		now := t0.Add(time.Duration(i) * period)
		read(now, now)
	}
	const back = 5 * time.Minute
	var unheard time.Duration
	for i := 1; i <= 20; i++ {
		now := t0.Add(time.Duration(i) * period)
		res := read(now, now.Add(-back))
		if _, gone := res.MemberErrs["ap"]; gone {
			unheard += period
		}
		for _, d := range res.Targets {
			if d.Decision != Up {
				t.Fatalf("%s after the step: %s decided %s %s", now.Sub(t0), d.Target, d.Decision, d.Reason)
			}
		}
		if res.Isolated || !slices.Equal(res.ServedA, strs(eu4)) {
			t.Fatalf("%s after the step: isolated %v, served A %v, want eu's target", now.Sub(t0), res.Isolated, res.ServedA)
		}
	}
	if unheard > 2*period || unheard > v {
		t.Fatalf("ap, alive, unheard for %s in all after its clock stepped back %s: more than two records' lifetimes (%s) or one validity (%s)",
			unheard, back, 2*period, v)
	}
	if unheard == 0 {
		t.Fatalf("ap never unheard: the record meeting its old top counts, update docs/design.md's bound")
	}
}
