package gslb

import (
	"net/netip"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

// TestAttack_PeerListingAnUnspecifiedAddressHaltsTheHealthPhase: eu's localtargets answer
// holds A 0.0.0.0 beside its real target (a placeholder record, a bug, or a hostile peer;
// gslb.Querier.Query accepts any A/AAAA address). candidates takes it, probed declares it to
// the Scheduler (a probe of 0.0.0.0 reaches this very node), and once it has a verdict,
// nextRecord puts it in this cluster's record, which health.Encode refuses ("unspecified
// address"). Without the guard: decideHealth returns that error for the whole Gslb: Ready=False
// InvalidHealthCheck, no DNSEndpoint write, so no answer of any host changes (L1) and this
// cluster's verdict records stop advancing (the others stop hearing it), for as long as one
// peer publishes the address. docs/design.md and the common rule "bad input never corrupts
// state": one member's bad localtargets must not stop every member's health decisions.
func TestAttack_PeerListingAnUnspecifiedAddressHaltsTheHealthPhase(t *testing.T) {
	now := time.Unix(1764784800, 0)
	cands, _ := candidates(candidateInput{Self: "us", Own: []string{"198.51.100.1"},
		Peers: []gslb.Peer{{GeoTag: "eu", Addr: "127.0.0.11:53"}},
		Reads: map[string]peerRead{"eu": {Targets: []string{"0.0.0.0", "192.0.2.1"}}}})
	targets, _ := probed(cands)
	own := map[netip.Addr]health.Verdict{}
	local := map[netip.Addr]health.ProbeState{}
	for _, p := range targets { // every declared target probed once
		own[p.Addr] = health.Up
		local[p.Addr] = health.ProbeState{Verdict: health.Up, LastProbe: now}
	}
	rec := nextRecord(recordInput{GeoTag: "us", Own: own, Local: local, Known: knownSet(cands), Now: now, ValidFor: 90 * time.Second})
	if _, err := health.Encode(rec); err != nil {
		t.Fatalf("candidates %v, probed %d targets: this cluster's verdict record does not encode: %v", cands, len(targets), err)
	}
}
