package health

import (
	"net/netip"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestDecide_ReplayedOldRecordsDoNotKeepADeadMemberHeard: ap dies; its last two records
// (an earlier one and its last) are still served by two of its zone's servers, and the reader
// gets one or the other. Neither time advances past the highest one seen, so ap stops
// counting one validity after its last advance, whatever the alternation.
func TestDecide_ReplayedOldRecordsDoNotKeepADeadMemberHeard(t *testing.T) {
	j, clk := judge()
	older := &Record{GeoTag: "ap", IssuedAt: t0.Add(-30 * time.Second), ValidFor: 90 * time.Second, Down: as(eu4)}
	last := &Record{GeoTag: "ap", IssuedAt: t0, ValidFor: 90 * time.Second, Down: as(eu4)}
	in := Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(),
		Own: map[netip.Addr]Verdict{eu4: Up, us4: Up, ap4: Up}}
	var res Result
	for i := range 121 { // one reconcile every 30 s for an hour, the last one reading ap's last record
		clk.SetTime(t0.Add(time.Duration(i) * 30 * time.Second))
		r := last
		if i%2 == 1 {
			r = older
		}
		in.Members = []Member{{GeoTag: "eu", Record: &Record{GeoTag: "eu", IssuedAt: clk.Now(), ValidFor: 90 * time.Second, Up: as(us4, ap4)}},
			{GeoTag: "ap", Record: r}}
		res = decide(t, j, in)
		in.Memory = res.Memory
	}
	if _, gone := res.MemberErrs["ap"]; !gone || res.Heard != 2 {
		t.Fatalf("an hour after ap died: heard %d, errors %v: ap's replayed records still count", res.Heard, res.MemberErrs)
	}
}
