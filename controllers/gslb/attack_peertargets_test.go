package gslb

import (
	"fmt"
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// TestAttack_PeerWithMoreThan64TargetsBreaksTheStatusCommit: gslb.Querier.Query takes up to
// MaxAnswers (64) records per answer and asks A and AAAA apart, so a peer's localtargets may
// hold 64 IPv4 and 64 IPv6 targets: 128, which candidates and the probes take. Without the guard:
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
		if len(ht.Targets) > dnsv1.MaxPeerHostTargets {
			t.Fatalf("status.peers[eu].targets[%s] holds %d targets; the CRD allows %d: the status update is refused", ht.Host, len(ht.Targets), dnsv1.MaxPeerHostTargets)
		}
	}
}

// TestCRD_PeerHostTargetsBoundIsMaxPeerHostTargets: the CRD's bound on
// status.peers[].targets[].targets is dnsv1.MaxPeerHostTargets, what peerTargets keeps, so a
// peer with 64 A and 64 AAAA targets never makes the API server refuse the status update.
func TestCRD_PeerHostTargetsBoundIsMaxPeerHostTargets(t *testing.T) {
	raw, err := os.ReadFile("../../config/crd/bases/dnsplane.io_gslbs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		peers := v.Schema.OpenAPIV3Schema.Properties["status"].Properties["peers"].Items.Schema
		ts := peers.Properties["targets"].Items.Schema.Properties["targets"]
		if ts.MaxItems == nil || *ts.MaxItems != dnsv1.MaxPeerHostTargets {
			t.Fatalf("%s: status.peers[].targets[].targets maxItems %v, want %d", v.Name, ts.MaxItems, dnsv1.MaxPeerHostTargets)
		}
	}
}
