package gslb

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestAttack_SelfInExtGslbClustersCountedTwiceInStatus: one --ext-gslb-clusters for the whole
// fleet, this cluster included (us=...,eu=...,ap=...): nothing refuses it, and health.Input
// says an entry for Self is ignored, so Decide's n is 3 and its quorum 2. Without the guard: members()
// takes the configured peers as they are (peerClusters, which drops Self, runs only on a
// discovered set), so membership.size() counts this cluster twice: status.members 4 and
// status.quorum 3 (docs/api.md: "The membership is this cluster, its peer clusters and the
// witnesses: status.members, with status.heard and status.quorum"), a quorum the decisions
// never use, and us asks its own server for localtargets and verdicts as a peer.
func TestAttack_SelfInExtGslbClustersCountedTwiceInStatus(t *testing.T) {
	r := &Reconciler{GeoTag: "us", Peers: []gslb.Peer{{GeoTag: "us", Addr: "127.0.0.10:53"}, {GeoTag: "eu", Addr: "127.0.0.11:53"},
		{GeoTag: "ap", Addr: "127.0.0.13:53"}}}
	g := &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}}
	m, err := r.members(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	var st dnsv1.GslbStatus
	setMembership(&st, m.size(), healthPlan{})
	if st.Members != 3 || st.Quorum != 2 {
		t.Fatalf("fleet us, eu, ap: status.members %d, status.quorum %d; want 3 and 2 (peer clusters %v)", st.Members, st.Quorum, m.clusters)
	}
}
