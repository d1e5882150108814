package health

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestDecide_WitnessListingATargetStillVotes: two clusters and a witness (n = 3), eu dead.
// The witness's localtargets (stale, misconfigured or hostile) lists eu's target. Candidates
// listed under a witness's geo tag are ignored, so the witness is no owner of eu's target:
// its Down counts with us's, and eu's target is out by quorum.
func TestDecide_WitnessListingATargetStillVotes(t *testing.T) {
	j, _ := judge()
	cands := map[string][]netip.Addr{"eu": {eu4}, "us": {us4}, "w": {eu4}}
	res := decide(t, j, Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands,
		Own:     map[netip.Addr]Verdict{eu4: Down, us4: Up},
		Members: []Member{{GeoTag: "eu", Err: errTimeout}, {GeoTag: "w", Witness: true, Record: rec("w", as(us4), as(eu4))}}})
	if d := decision(t, res, eu4); d.Decision != Down || d.Downs != 2 {
		t.Fatalf("eu's target %v (%s), downs %d of %d needed: the witness's vote was not counted", d.Decision, d.Reason, d.Downs, d.Needed)
	}
	if !slices.Equal(res.ServedA, strs(us4)) {
		t.Fatalf("A %v, want the failover to us", res.ServedA)
	}
}

// TestDecide_GeoTagGivenTwiceFirstEntryDecides: Input.Members says that any entry but the
// first for a geo tag is ignored. A cluster eu listed first and a witness entry under the same
// geo tag (an edge NS set that names a witness's geo tag) leaves eu a cluster: its targets stay
// candidates and are served as primary.
func TestDecide_GeoTagGivenTwiceFirstEntryDecides(t *testing.T) {
	j, _ := judge()
	res := decide(t, j, Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(),
		Own: map[netip.Addr]Verdict{eu4: Up, us4: Up, ap4: Up},
		Members: []Member{{GeoTag: "eu", Record: rec("eu", as(us4, ap4), nil)}, {GeoTag: "ap", Record: rec("ap", as(eu4, us4), nil)},
			{GeoTag: "eu", Witness: true}}})
	if res.Known != 3 {
		t.Fatalf("known %d, want 3", res.Known)
	}
	if !slices.Equal(res.ServedA, strs(eu4)) {
		t.Fatalf("A %v, want eu's target (eu is up everywhere): the duplicate witness entry dropped eu's targets", res.ServedA)
	}
}
