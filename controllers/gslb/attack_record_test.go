package gslb

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

// TestAttack_NextRecordCarriesPastMaxVerdicts: a host with 33 candidates (docs/design.md:
// "If a host has more candidates, only the first 32 in address order carry health-check
// verdicts. The others are decided by readiness alone, and the controller says so"). eu
// probed the first 32 and published their verdicts. A peer then lists a new target with a
// lower address: the first 32 shift, the old 32nd (192.0.2.132) leaves the probed set and the
// new one (192.0.2.1) gets its verdict one probe later. Without the guard: nextRecord carries the published
// record's verdict on every known candidate without a verdict of its own, so the old 32nd is
// carried beside 32 own verdicts while the published record is valid: 33 verdicts, which
// health.Encode refuses. decideHealth then returns that error, the reconcile says
// InvalidHealthCheck and writes nothing: no answer change for any host of the Gslb (L1) and
// no verdict record (the peers stop hearing this cluster) for up to one validity.
func TestAttack_NextRecordCarriesPastMaxVerdicts(t *testing.T) {
	at := time.Unix(1764784800, 0)
	valid := 90 * time.Second
	var before []netip.Addr
	for i := range 33 {
		before = append(before, netip.MustParseAddr(fmt.Sprintf("192.0.2.%d", 100+i)))
	}
	probedBefore, _ := probed(map[string][]netip.Addr{"eu": before})
	pub := health.Record{GeoTag: "eu", IssuedAt: at, ValidFor: valid}
	for _, p := range probedBefore {
		pub.Up = append(pub.Up, p.Addr)
	}
	if _, err := health.Encode(pub); err != nil {
		t.Fatalf("the record before: %v", err)
	}
	newcomer := netip.MustParseAddr("192.0.2.1")
	cands := map[string][]netip.Addr{"eu": before, "us": {newcomer}}
	probedAfter, left := probed(cands)
	own := map[netip.Addr]health.Verdict{}
	local := map[netip.Addr]health.ProbeState{}
	for _, p := range probedAfter {
		own[p.Addr] = health.Up
		local[p.Addr] = health.ProbeState{Verdict: health.Up, LastProbe: at.Add(30 * time.Second)}
	}
	rec := nextRecord(recordInput{GeoTag: "eu", Own: own, Local: local, Published: &pub, Known: knownSet(cands),
		Now: at.Add(40 * time.Second), ValidFor: valid})
	if _, err := health.Encode(rec); err != nil {
		t.Fatalf("%d candidates (%d left out of the probes), 32 own verdicts and a valid published record: the next record does not encode: %v (up %d, down %d)",
			len(knownSet(cands)), left, err, len(rec.Up), len(rec.Down))
	}
}
