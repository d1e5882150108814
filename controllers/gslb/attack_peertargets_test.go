//go:build attack

package gslb

import (
	"fmt"
	"testing"
)

// TestAttack_PeerWithMoreThan64TargetsBreaksTheStatusCommit: gslb.Querier.Query takes up to
// MaxAnswers (64) records per answer and asks A and AAAA apart, so a peer's localtargets may
// hold 64 IPv4 and 64 IPv6 targets: 128, which candidates and the probes take. BROKEN:
// peerTargets copies them all into status.peers[].targets[].targets, which the CRD bounds at
// 64 items (PeerHostTargets.Targets, +kubebuilder:validation:MaxItems=64): the API server
// refuses every status update of the Gslb (422), so status.targets (the agreed answer, the
// isolation's start and the damping that a restart or a new leader restores), Ready and the
// membership counts are never written again while the peer serves that many.
func TestAttack_PeerWithMoreThan64TargetsBreaksTheStatusCommit(t *testing.T) {
	var ts []string
	for i := range 64 {
		ts = append(ts, fmt.Sprintf("192.0.2.%d", i+1), fmt.Sprintf("2001:db8::%x", i+1))
	}
	now := map[string]map[string][]string{"app.gslb.test": {"eu": ts}}
	out := peerTargets("eu", []string{"app.gslb.test"}, now, nil)
	for _, ht := range out {
		if len(ht.Targets) > 64 {
			t.Fatalf("status.peers[eu].targets[%s] holds %d targets; the CRD allows 64: the status update is refused", ht.Host, len(ht.Targets))
		}
	}
}
