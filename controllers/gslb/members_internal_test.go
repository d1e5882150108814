package gslb

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestMembers_RememberedClustersLeaveOutSelfAndWitnesses: a new manager whose edge discovery
// fails takes the peer clusters from status.peers. A status edited by hand (or written before
// roles) may list this cluster or a witness as a Member; neither is a peer cluster. The
// membership is this cluster, eu and the witness w: n = 3, quorum 2, and w is asked as a
// witness only.
func TestMembers_RememberedClustersLeaveOutSelfAndWitnesses(t *testing.T) {
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	g := &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
		Spec: dnsv1.GslbSpec{ZoneRef: dnsv1.ZoneReference{Namespace: "dns", Name: "gslb"},
			Edge: &dnsv1.GslbEdge{ZoneRef: dnsv1.ZoneReference{Namespace: "dns", Name: "edge"}}},
		Status: dnsv1.GslbStatus{Peers: []dnsv1.PeerStatus{
			{GeoTag: "eu", Address: "127.0.0.11:53", Role: dnsv1.PeerRoleMember},
			{GeoTag: "us", Address: "127.0.0.10:53", Role: dnsv1.PeerRoleMember},
			{GeoTag: "w", Address: "127.0.0.13:53"},
		}}}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(s).Build(), GeoTag: "us",
		Witnesses: []gslb.Peer{{GeoTag: "w", Addr: "127.0.0.13:53"}}}
	m, err := r.members(context.Background(), g)
	if err == nil {
		t.Fatal("discovery without an edge zone succeeded")
	}
	var tags []string
	for _, p := range m.clusters {
		tags = append(tags, p.GeoTag)
	}
	if !slices.Equal(tags, []string{"eu"}) || m.size() != 3 || quorum(m.size()) != 2 {
		t.Fatalf("clusters %v, members %d, quorum %d; want [eu], 3, 2", tags, m.size(), quorum(m.size()))
	}
}
