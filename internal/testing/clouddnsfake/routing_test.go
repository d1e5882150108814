package clouddnsfake_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/dnsplane/dnsplane/internal/testing/clouddnsfake"
)

// TestGeoRoutingPolicy: through the real Cloud DNS client, the fake keeps a record set with a
// geo routing policy as the API documents it (routingPolicy.geo.items[], each a location and
// rrdatas) and returns it on list, and refuses what the API refuses: a location that is no
// Google Cloud region, a location twice in one policy, an item without rrdatas, rrdatas beside a
// routing policy (400), and a deletion that does not match the set exactly (412).
func TestGeoRoutingPolicy(t *testing.T) {
	fake := clouddnsfake.New()
	t.Cleanup(fake.Close)
	ctx := context.Background()
	svc, err := dns.NewService(ctx, option.WithEndpoint(fake.URL+"/"), option.WithHTTPClient(fake.Client()))
	if err != nil {
		t.Fatal(err)
	}
	const project = "p"
	if _, err := svc.ManagedZones.Create(project, &dns.ManagedZone{Name: "z", DnsName: "geo.test.", Description: "d"}).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	geoSet := func(items ...*dns.RRSetRoutingPolicyGeoPolicyGeoPolicyItem) *dns.ResourceRecordSet {
		return &dns.ResourceRecordSet{Name: "app.geo.test.", Type: "A", Ttl: 30, RoutingPolicy: &dns.RRSetRoutingPolicy{Geo: &dns.RRSetRoutingPolicyGeoPolicy{Items: items}}}
	}
	item := func(loc string, rrdatas ...string) *dns.RRSetRoutingPolicyGeoPolicyGeoPolicyItem {
		return &dns.RRSetRoutingPolicyGeoPolicyGeoPolicyItem{Location: loc, Rrdatas: rrdatas}
	}
	change := func(c *dns.Change) error {
		_, err := svc.Changes.Create(project, "z", c).Context(ctx).Do()
		return err
	}
	code := func(err error) int {
		var ge *googleapi.Error
		if errors.As(err, &ge) {
			return ge.Code
		}
		return 0
	}
	good := geoSet(item("europe-west3", "192.0.2.1"), item("us-central1", "198.51.100.1", "198.51.100.2"))
	if err := change(&dns.Change{Additions: []*dns.ResourceRecordSet{good}}); err != nil {
		t.Fatal(err)
	}
	r, err := svc.ResourceRecordSets.List(project, "z").Name("app.geo.test.").Type("A").Context(ctx).Do()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rrsets) != 1 || r.Rrsets[0].RoutingPolicy == nil || r.Rrsets[0].RoutingPolicy.Geo == nil || len(r.Rrsets[0].Rrdatas) != 0 {
		t.Fatalf("listed %+v", r.Rrsets)
	}
	items := r.Rrsets[0].RoutingPolicy.Geo.Items
	if len(items) != 2 || items[0].Location != "europe-west3" || items[1].Location != "us-central1" || len(items[1].Rrdatas) != 2 {
		t.Fatalf("listed items %+v %+v", items[0], items[1])
	}

	bad := []struct {
		name string
		rs   *dns.ResourceRecordSet
	}{
		{"a location that is no region", geoSet(item("europe-west99", "192.0.2.1"))},
		{"an AWS region", geoSet(item("eu-central-1", "192.0.2.1"))},
		{"a location twice", geoSet(item("europe-west3", "192.0.2.1"), item("europe-west3", "192.0.2.2"))},
		{"an item without rrdatas", geoSet(item("europe-west3"))},
		{"no items", geoSet()},
		{"rrdatas beside the policy", func() *dns.ResourceRecordSet {
			rs := geoSet(item("europe-west3", "192.0.2.1"))
			rs.Rrdatas = []string{"192.0.2.9"}
			return rs
		}()},
	}
	for _, b := range bad {
		b.rs.Name = "other.geo.test."
		if err := change(&dns.Change{Additions: []*dns.ResourceRecordSet{b.rs}}); code(err) != http.StatusBadRequest {
			t.Errorf("%s: %v, want 400", b.name, err)
		}
	}
	// A deletion must match exactly: another item's rrdatas, a missing item or another TTL fail.
	for _, stale := range []*dns.ResourceRecordSet{
		geoSet(item("europe-west3", "192.0.2.9"), item("us-central1", "198.51.100.1", "198.51.100.2")),
		geoSet(item("europe-west3", "192.0.2.1")),
		func() *dns.ResourceRecordSet {
			rs := geoSet(item("europe-west3", "192.0.2.1"), item("us-central1", "198.51.100.1", "198.51.100.2"))
			rs.Ttl = 60
			return rs
		}(),
		{Name: "app.geo.test.", Type: "A", Ttl: 30, Rrdatas: []string{"192.0.2.1"}},
	} {
		if err := change(&dns.Change{Deletions: []*dns.ResourceRecordSet{stale}}); code(err) != http.StatusPreconditionFailed {
			t.Errorf("stale deletion %+v: %v, want 412", stale, err)
		}
	}
	// The exact deletion (items in another order) and an addition in one change.
	exact := geoSet(item("us-central1", "198.51.100.2", "198.51.100.1"), item("europe-west3", "192.0.2.1"))
	if err := change(&dns.Change{Deletions: []*dns.ResourceRecordSet{exact}, Additions: []*dns.ResourceRecordSet{geoSet(item("asia-northeast1", "203.0.113.1"))}}); err != nil {
		t.Fatal(err)
	}
	got := fake.RRSets(project, "z")
	if len(got) != 3 || got[0].RoutingPolicy == nil || got[0].RoutingPolicy.Geo.Items[0].Location != "asia-northeast1" {
		t.Fatalf("after the replacement: %+v", got)
	}
}
