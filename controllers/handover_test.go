package controllers_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
)

// TestHandover_HolderDeletedInAnotherClusterFreesItsNames (issue 26, item 5; external-dns #6617):
// two managers (cluster-a, cluster-b: two API servers, two owner IDs) share one PowerDNS zone.
// cluster-a's DNSEndpoint holds x1-x5; cluster-b's DNSEndpoint for the same names is
// OwnershipConflict. cluster-a deletes its object: its registry records go from the zone, and
// cluster-b, which sees no event of that, must take the names over without a spec change. It
// did not (0 reconciles in 60 s, names missing for as long as watched); a conflicted object now
// retries every ConflictRetry against a zone view at most that old. The time from the holder's
// registry records disappearing to cluster-b's addresses being answered is logged, not asserted
// (the deadline only catches a stall).
func TestHandover_HolderDeletedInAnotherClusterFreesItsNames(t *testing.T) {
	const zone = "handover.test"
	const retry = 3 * time.Second
	srv := pdnstest.Start(t)
	_, zoneID := sharedZone(t, srv, zone)
	opts := clusterOptions{ConflictRetry: retry}
	a := startClusterWith(t, "cluster-a", time.Minute, 5*time.Minute, opts)
	b := startClusterWith(t, "cluster-b", time.Minute, 5*time.Minute, opts)
	a.adopt(srv, zone, zoneID)
	b.adopt(srv, zone, zoneID)
	names := []string{"x1." + zone, "x2." + zone, "x3." + zone, "x4." + zone, "x5." + zone}
	endpoints := func(prefix string) []dnsv1.Endpoint {
		var out []dnsv1.Endpoint
		for i, n := range names {
			out = append(out, dnsv1.Endpoint{DNSName: n, RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{fmt.Sprintf("%s%d", prefix, i+1)}})
		}
		return out
	}
	epA := endpointIn("apps", "x", endpoints("192.0.2.")...)
	a.create(epA)
	a.waitCondition(epA, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
	epB := endpointIn("apps", "x", endpoints("198.51.100.")...)
	b.create(epB)
	cond := b.waitCondition(epB, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict, 30*time.Second)
	if !strings.Contains(cond.Message, "owner cluster-a resource DNSEndpoint/apps/x") {
		t.Errorf("cluster-b's conflict does not name cluster-a's object: %s", cond.Message)
	}

	before := b.endpointReconciles.get()
	if err := a.client.Delete(a.ctx(), epA); err != nil {
		t.Fatal(err)
	}
	var gone time.Time
	eventually(t, time.Minute, "cluster-a's registry records gone from the zone", func() error {
		if held := registryOf(t, srv, zone, "cluster-a"); len(held) > 0 {
			return fmt.Errorf("%d left", len(held))
		}
		gone = time.Now()
		return nil
	})
	eventually(t, 2*time.Minute, "cluster-b's addresses answered for x1-x5", func() error {
		for i, n := range names {
			if got, want := served(t, srv.DNSAddr, n), []string{fmt.Sprintf("198.51.100.%d", i+1)}; !slices.Equal(got, want) {
				return fmt.Errorf("%s = %v, want %v", n, got, want)
			}
		}
		return nil
	})
	took := time.Since(gone)
	b.waitCondition(epB, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, time.Minute)
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("handover: x1-x5 answered with cluster-b's addresses %.1f s after cluster-a's registry records left the zone (conflict retry %s; %d cluster-b DNSEndpoint reconciles meanwhile; load %s)",
		took.Seconds(), retry, b.endpointReconciles.get()-before, strings.TrimSpace(string(load)))
}
