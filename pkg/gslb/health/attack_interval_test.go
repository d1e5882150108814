package health

import (
	"net/netip"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestAttack_LongerGslbIntervalElsewhereIsolatesAConnectedMember: three live clusters that all
// hear each other, intervalSeconds 10. eu and ap run with --gslb-interval 60s (the default is
// 30s; nothing in the docs asks the fleet to share it), us with 10s. A writer's `for` is
// 3 × max(intervalSeconds, --gslb-interval) = 180 s, and it republishes an unchanged record a
// third of that later, every 60 s; the reader caps validity at its own 3 × 10 s = 30 s
// (Input.ValidityCap) and counts a record at most that long after it first saw its time.
// Without the guard: eu's and ap's times advance every 60 s and us counts each for 30 s, so for about
// half of every minute us hears 1 of 3: isolated, holding, with Ready=True Isolated, in a
// fleet where nothing failed: L1 and C1 assume fresh records among connected members, and the
// record cadence of one member never is fresh for another.
func TestAttack_LongerGslbIntervalElsewhereIsolatesAConnectedMember(t *testing.T) {
	j, clk := judge()
	writerFor := Validity(10*time.Second, 60*time.Second)
	readerCap := Validity(10*time.Second, 10*time.Second)
	pub := map[string]*Record{}
	publish := func(g string, now time.Time) { // the writer's reconcile: health.Republish's rule
		next := Record{GeoTag: g, IssuedAt: now.Add(-5 * time.Second).Truncate(time.Second), ValidFor: writerFor, Up: as(eu4, us4, ap4)}
		if p := pub[g]; p == nil || Republish(*p, next, now) {
			pub[g] = &next
		}
	}
	in := Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(), ValidityCap: readerCap,
		Own: map[netip.Addr]Verdict{eu4: Up, us4: Up, ap4: Up}}
	isolated := 0
	for s := 0; s <= 600; s += 10 {
		now := t0.Add(time.Duration(s) * time.Second)
		clk.SetTime(now)
		if s%60 == 0 {
			publish("eu", now)
			publish("ap", now.Add(3*time.Second))
		}
		in.Members = []Member{{GeoTag: "eu", Record: pub["eu"]}, {GeoTag: "ap", Record: pub["ap"]}}
		res := decide(t, j, in)
		in.Memory = res.Memory
		if res.Isolated && s >= 60 {
			isolated++
			if isolated == 1 {
				t.Errorf("%s: every member alive and connected, us isolated: heard %d of %d (%v)", now.Sub(t0), res.Heard, res.Known, res.MemberErrs)
			}
		}
	}
	if isolated > 0 {
		t.Fatalf("isolated in %d of 55 reconciles of a healthy, connected fleet", isolated)
	}
}
