package health

import (
	"net/netip"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestAttack_BehindClockHiddenByALongClaimedValidity: ap's clock is 15 minutes behind. ap runs
// with a long --gslb-interval (20 min), so its records claim for=3600 s; us caps every record
// at its own 90 s (Input.ValidityCap). docs/design.md ("Freshness"): the validity of a record
// is v = min(for, the reader's cap), and an offset is reported "when it exceeds the skew ahead,
// or the skew plus a third of the validity behind ... It is never silently ignored."
// Without the guard: hear() tests the offset against `skew + m.Record.ValidFor/3`, the writer's claim
// (20 min 30 s), not v/3: ap, counted since its time advances, is 15 minutes behind with no
// ClockOffsets entry, no status clockOffset and no ClockSkew Event. A writer's claim widens the
// reader's tolerance, which the cap exists to prevent.
func TestAttack_BehindClockHiddenByALongClaimedValidity(t *testing.T) {
	j, clk := judge()
	const behind = 15 * time.Minute
	in := Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(), ValidityCap: 90 * time.Second,
		Own: map[netip.Addr]Verdict{eu4: Up, us4: Up, ap4: Up}}
	var res Result
	for i := range 4 {
		now := t0.Add(time.Duration(i) * 30 * time.Second)
		clk.SetTime(now)
		in.Members = []Member{{GeoTag: "eu", Record: &Record{GeoTag: "eu", IssuedAt: now, ValidFor: 90 * time.Second, Up: as(us4, ap4)}},
			{GeoTag: "ap", Record: &Record{GeoTag: "ap", IssuedAt: now.Add(-behind), ValidFor: MaxValidFor, Up: as(eu4, us4)}}}
		res = decide(t, j, in)
		in.Memory = res.Memory
	}
	if _, heard := res.MemberErrs["ap"]; heard || res.Heard != 3 {
		t.Fatalf("ap not heard: %v", res.MemberErrs)
	}
	if _, ok := res.ClockOffsets["ap"]; !ok {
		t.Fatalf("ap counted with its clock %s behind (validity %s after the cap, skew %s): no clock offset reported (%v)",
			behind, in.ValidityCap, DefaultMaxSkew, res.ClockOffsets)
	}
}
