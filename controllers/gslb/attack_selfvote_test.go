package gslb

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

// TestAttack_RestartedMemberIgnoresItsOwnCarriedVote: eu (the failover primary) has a dead load
// balancer; us and ap probe it Down, 2 of 3: failed over everywhere. us's manager restarts
// (or its leader changes): its probes start over, so it has no verdict of its own for
// failureThreshold × interval, and nextRecord keeps publishing its last record, whose Down
// on eu's target the other members go on counting (docs/design.md: the published record's
// verdict is carried while it is valid). Without the guard: Decide counts Self's vote from Input.Own alone,
// never from the record Self publishes, so us counts 1 Down of 3 and fails back to eu's dead
// target, while ap, counting us's published Down, keeps it out: the members give different
// answers with every member hearing every other (C1), and us serves a target that a connected
// majority (ap, and us by its own record) holds Down (L1), until us's probes pass the threshold.
// The restart keeps neither the last agreed answer nor the one the others serve.
func TestAttack_RestartedMemberIgnoresItsOwnCarriedVote(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	clk := testclock.NewFakePassiveClock(t0)
	j := health.Judge{Clock: clk}
	eu4, us4, ap4 := fleetAddrs()
	cands := map[string][]netip.Addr{"eu": {eu4}, "us": {us4}, "ap": {ap4}}
	valid := 90 * time.Second
	// us's record before the restart, still valid: eu's target Down.
	pub := health.Record{GeoTag: "us", IssuedAt: t0.Add(-10 * time.Second), ValidFor: valid, Up: []netip.Addr{ap4}, Down: []netip.Addr{eu4}}
	usRec := nextRecord(recordInput{GeoTag: "us", Published: &pub, Known: knownSet(cands), Now: t0, ValidFor: valid})
	if usRec.Verdict(eu4) != health.Down {
		t.Fatalf("the restarted us publishes %+v: its Down on eu's target is not carried", usRec)
	}
	euRec := &health.Record{GeoTag: "eu", IssuedAt: t0, ValidFor: valid, Up: []netip.Addr{eu4, us4, ap4}}
	apRec := &health.Record{GeoTag: "ap", IssuedAt: t0, ValidFor: valid, Up: []netip.Addr{us4}, Down: []netip.Addr{eu4}}
	base := health.Input{Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands, ValidityCap: valid}
	apIn := base
	apIn.Self, apIn.Own = "ap", map[netip.Addr]health.Verdict{eu4: health.Down, us4: health.Up}
	apIn.Members = []health.Member{{GeoTag: "eu", Record: euRec}, {GeoTag: "us", Record: &usRec}}
	apRes, err := j.Decide(apIn)
	if err != nil {
		t.Fatal(err)
	}
	usIn := base
	// probes start over: the controller's vote is its record's carried verdicts (ownVotes)
	usIn.Self, usIn.Own = "us", ownVotes(map[netip.Addr]health.Verdict{}, usRec, t0, knownSet(cands))
	usIn.Members = []health.Member{{GeoTag: "eu", Record: euRec}, {GeoTag: "ap", Record: apRec}}
	usIn.Memory = health.Memory{Agreed: map[netip.Addr]health.Verdict{eu4: health.Down, us4: health.Up, ap4: health.Up}} // restored from status
	usRes, err := j.Decide(usIn)
	if err != nil {
		t.Fatal(err)
	}
	if apRes.Heard != 3 || usRes.Heard != 3 {
		t.Fatalf("heard: ap %d, us %d; want everyone", apRes.Heard, usRes.Heard)
	}
	if !slices.Equal(usRes.ServedA, apRes.ServedA) {
		t.Fatalf("every member hears every other: us (restarted) serves A %v, ap serves A %v: us failed back to eu's dead target, ignoring the Down it still publishes",
			usRes.ServedA, apRes.ServedA)
	}
}
