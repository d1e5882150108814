//go:build attack

package health

import (
	"net/netip"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestAttack_SteppedBackWriterMeetingItsOldTopIsStale: ap is alive throughout. Its clock steps
// back 5 minutes (NTP correcting it) just after its record of t0. docs/design.md
// ("Freshness"): "A writer whose clock stepped back advances on that track and counts from its
// second record". It does, until its record time reaches exactly the highest time seen before
// the step (t0). BROKEN: a record time equal to the top is judged on the top track, whose first
// sight is 5 minutes old (`at.Equal(m.At) && m.Advanced`, age > v): the live, advancing
// member is stale for as long as that record is served (up to a third of its validity, the
// republish period), which can isolate the reader.
func TestAttack_SteppedBackWriterMeetingItsOldTopIsStale(t *testing.T) {
	j, clk := judge()
	v := 90 * time.Second
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
		now := t0.Add(time.Duration(i) * 30 * time.Second)
		read(now, now)
	}
	const back = 5 * time.Minute
	for i := 1; i <= 20; i++ {
		now := t0.Add(time.Duration(i) * 30 * time.Second)
		res := read(now, now.Add(-back))
		if _, gone := res.MemberErrs["ap"]; gone && i >= 2 {
			t.Fatalf("%s after ap's clock stepped back %s, its record of %s (its %d-th since the step): ap not heard: %v",
				now.Sub(t0), back, now.Add(-back).Format(time.RFC3339), i, res.MemberErrs["ap"])
		}
	}
}
