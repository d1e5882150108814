package google_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/option"

	"github.com/dnsplane/dnsplane/internal/testing/clouddnsfake"
	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/google"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// geoSet is a geo set as the Gslb controller publishes it (pkg/geo's labels).
func geoSet(t *testing.T, name, typ, tag string, dflt bool, targets []string, regions ...string) provider.RecordSet {
	t.Helper()
	kv, err := geo.EncodeLabels(geo.Set{Tag: tag, Regions: regions, Default: dflt})
	if err != nil {
		t.Fatal(err)
	}
	ps := map[string]string{}
	for _, p := range kv {
		ps[p[0]] = p[1]
	}
	return provider.RecordSet{Name: name, Type: typ, TTL: 30, Targets: targets, SetIdentifier: tag, ProviderSpecific: ps}
}

// geoItems renders the fake's routing-policy set of name and type as "location rrdatas" lines,
// with its TTL first; nil when there is none.
func geoItems(fake *clouddnsfake.Server, zone, name, typ string) []string {
	for _, rs := range fake.RRSets(project, zone) {
		if rs.Name != name+"." || rs.Type != typ || rs.RoutingPolicy == nil {
			continue
		}
		out := []string{fmt.Sprintf("ttl=%d rrdatas=%v", rs.TTL, rs.Rrdatas)}
		for _, it := range rs.RoutingPolicy.Geo.Items {
			d := slices.Clone(it.Rrdatas)
			slices.Sort(d)
			out = append(out, it.Location+" "+strings.Join(d, ","))
		}
		return out
	}
	return nil
}

// listGeo returns the listed sets of name, by set identifier, targets sorted.
func listGeo(t *testing.T, p provider.Provider, zoneID, name string) map[string]provider.RecordSet {
	t.Helper()
	sets, err := p.ListRecordSets(context.Background(), zoneID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]provider.RecordSet{}
	for _, rs := range sets {
		if strings.HasPrefix(rs.Name, "dp-geo-") {
			t.Errorf("the companion %s is listed", rs.Key())
		}
		if rs.Name == name {
			slices.Sort(rs.Targets)
			out[rs.Type+"/"+rs.SetIdentifier] = rs
		}
	}
	return out
}

// wantItems builds the expected item lines: for each location, the tag's rrdatas.
func wantItems(ttl int, byTag map[string][]string, targets map[string]string) []string {
	var lines []string
	for tag, locs := range byTag {
		for _, l := range locs {
			lines = append(lines, l+" "+targets[tag])
		}
	}
	slices.Sort(lines)
	return append([]string{fmt.Sprintf("ttl=%d rrdatas=[]", ttl)}, lines...)
}

var (
	euRegions = []string{"europe-central2", "europe-north1", "europe-north2", "europe-southwest1", "europe-west1", "europe-west12",
		"europe-west2", "europe-west4", "europe-west6", "europe-west8", "europe-west9"} // continent:EU without DE
	deRegions = []string{"europe-west10", "europe-west3"}
	naRegions = []string{"northamerica-northeast1", "northamerica-northeast2", "northamerica-south1", "us-central1", "us-east1",
		"us-east4", "us-east5", "us-south1", "us-west1", "us-west2", "us-west3", "us-west4"}
	restRegions = []string{"africa-south1", "asia-east1", "asia-east2", "asia-northeast1", "asia-northeast2", "asia-northeast3",
		"asia-south1", "asia-south2", "asia-southeast1", "asia-southeast2", "asia-southeast3", "australia-southeast1",
		"australia-southeast2", "me-central1", "me-central2", "me-west1", "southamerica-east1", "southamerica-west1"}
)

// TestGeoSets_WrittenAsCloudDNSGeoRoutingPolicy: the geo sets of a Gslb-shaped host
// (three tags: a country, a continent and the default) are written, through the real Cloud DNS
// client, as ONE record set with a geo routing policy per name and type (items: a Google Cloud
// region and the tag's rrdatas; the default on every region no key takes) and a companion TXT;
// listed back they are the geo sets written, and a plan of the same desired sets writes nothing;
// changing one tag's targets is one changes.create replacing the set exactly; deleting every
// tag deletes the set and its companion.
func TestGeoSets_WrittenAsCloudDNSGeoRoutingPolicy(t *testing.T) {
	fake, p, z := setupGeo(t)
	ctx := context.Background()
	if !p.Capabilities().GeoRouting {
		t.Fatal("Cloud DNS does not declare GeoRouting")
	}
	const name = "app.gslb.test"
	de := geoSet(t, name, "A", "de", false, []string{"192.0.2.1"}, "DE")
	eu := geoSet(t, name, "A", "eu", true, []string{"192.0.2.10", "192.0.2.11"}, "continent:EU")
	us := geoSet(t, name, "A", "us", false, []string{"198.51.100.1"}, "continent:NA")
	us6 := geoSet(t, name, "AAAA", "us", false, []string{"2001:db8::1"}, "continent:NA")
	eu6 := geoSet(t, name, "AAAA", "eu", true, []string{"2001:db8::2"}, "continent:EU")
	plain := provider.RecordSet{Name: "www.gslb.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.99"}}
	desired := []provider.RecordSet{de, eu, us, us6, eu6, plain}
	self := registry.Contributor{OwnerID: "owner-1", Resource: registry.Resource("DNSEndpoint", "default", "app")}
	planOnce := func() plan.Result {
		t.Helper()
		current, err := p.ListRecordSets(ctx, z.ID)
		if err != nil {
			t.Fatal(err)
		}
		return plan.Compute(plan.Input{Zone: "gslb.test", Self: self, Desired: desired, Current: current, Capabilities: ptr(p.Capabilities())})
	}
	res := planOnce()
	if len(res.Conflicts) != 0 {
		t.Fatalf("conflicts %v", res.Conflicts)
	}
	before := fake.Count("changes.create")
	if err := p.ApplyChanges(ctx, z.ID, res.Changes); err != nil {
		t.Fatal(err)
	}
	if n := fake.Count("changes.create") - before; n != 1 {
		t.Errorf("%d changes.create, want 1", n)
	}
	targets := map[string]string{"de": "192.0.2.1", "eu": "192.0.2.10,192.0.2.11", "us": "198.51.100.1"}
	want := wantItems(30, map[string][]string{"de": deRegions, "eu": slices.Concat(euRegions, restRegions), "us": naRegions}, targets)
	if got := geoItems(fake, z.ID, name, "A"); !reflect.DeepEqual(got, want) {
		t.Fatalf("Cloud DNS holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	want6 := wantItems(30, map[string][]string{"eu": slices.Concat(deRegions, euRegions, restRegions), "us": naRegions},
		map[string]string{"eu": "2001:db8::2", "us": "2001:db8::1"})
	if got := geoItems(fake, z.ID, name, "AAAA"); !reflect.DeepEqual(got, want6) {
		t.Fatalf("Cloud DNS holds for AAAA\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want6, "\n"))
	}
	var companions []string
	for _, rs := range fake.RRSets(project, z.ID) {
		if strings.HasPrefix(rs.Name, "dp-geo-") {
			companions = append(companions, fmt.Sprintf("%s %s %d", rs.Name, rs.Type, len(rs.Rrdatas)))
		}
	}
	if w := []string{"dp-geo-a.app.gslb.test. TXT 3", "dp-geo-aaaa.app.gslb.test. TXT 2"}; !reflect.DeepEqual(companions, w) {
		t.Errorf("companions %v, want %v", companions, w)
	}

	got := listGeo(t, p, z.ID, name)
	for _, w := range []provider.RecordSet{de, eu, us, us6, eu6} {
		if g := got[w.Type+"/"+w.SetIdentifier]; !g.Equal(w) {
			t.Errorf("listed %+v\nwant %+v", g, w)
		}
	}
	if len(got) != 5 {
		t.Errorf("listed %d geo sets of %s, want 5: %v", len(got), name, got)
	}

	// The plan converges: a second plan of the same desired sets writes nothing.
	if res := planOnce(); len(res.Changes) != 0 || len(res.Conflicts) != 0 {
		t.Fatalf("a second plan of the same sets writes %v (conflicts %v)", res.Changes, res.Conflicts)
	}

	// One tag's targets change: one request, the set replaced exactly with only that tag's items changed.
	de2 := de.Clone()
	de2.Targets = []string{"192.0.2.2", "192.0.2.3"}
	deNow := listGeo(t, p, z.ID, name)["A/de"]
	before = fake.Count("changes.create")
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionUpdate, Before: &deNow, After: &de2}}); err != nil {
		t.Fatal(err)
	}
	if n := fake.Count("changes.create") - before; n != 1 {
		t.Errorf("the update took %d changes.create, want 1", n)
	}
	targets["de"] = "192.0.2.2,192.0.2.3"
	want = wantItems(30, map[string][]string{"de": deRegions, "eu": slices.Concat(euRegions, restRegions), "us": naRegions}, targets)
	if got := geoItems(fake, z.ID, name, "A"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the update Cloud DNS holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if g := listGeo(t, p, z.ID, name)["A/de"]; !g.Equal(de2) {
		t.Errorf("listed %+v, want %+v", g, de2)
	}
	// A stale Before is a conflict, and nothing is written.
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionUpdate, Before: &deNow, After: &de2}}); !errors.Is(err, provider.ErrConflict) {
		t.Fatalf("a stale Before: %v, want ErrConflict", err)
	}
	// Creating a tag that exists is a conflict.
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate, After: &us}}); !errors.Is(err, provider.ErrConflict) {
		t.Fatalf("creating an existing tag: %v, want ErrConflict", err)
	}

	// Deleting the de tag: its regions go to the continent's tag.
	deNow = listGeo(t, p, z.ID, name)["A/de"]
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionDelete, Before: &deNow}}); err != nil {
		t.Fatal(err)
	}
	want = wantItems(30, map[string][]string{"eu": slices.Concat(deRegions, euRegions, restRegions), "us": naRegions}, targets)
	if got := geoItems(fake, z.ID, name, "A"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after deleting de Cloud DNS holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Deleting every tag deletes the set and its companion.
	var dels []provider.Change
	for _, rs := range listGeo(t, p, z.ID, name) {
		rs := rs
		dels = append(dels, provider.Change{Action: provider.ActionDelete, Before: &rs})
	}
	if err := p.ApplyChanges(ctx, z.ID, dels); err != nil {
		t.Fatal(err)
	}
	for _, rs := range fake.RRSets(project, z.ID) {
		if rs.Name == "app.gslb.test." || strings.HasPrefix(rs.Name, "dp-geo-") {
			t.Errorf("left behind: %s %s", rs.Name, rs.Type)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func setupGeo(t *testing.T) (*clouddnsfake.Server, *google.Provider, provider.Zone) {
	t.Helper()
	fake := newFake(t)
	p := newProvider(t, fake)
	z, err := p.EnsureZone(context.Background(), provider.ZoneSpec{Name: "gslb.test", CallerReference: "ref-geo"})
	if err != nil {
		t.Fatal(err)
	}
	return fake, p, z
}

// TestGeoSets_NotCapable: a CIDR region, a country without a Google Cloud region and Antarctica
// are NotCapable, and nothing is written.
func TestGeoSets_NotCapable(t *testing.T) {
	fake, p, z := setupGeo(t)
	ctx := context.Background()
	for _, rs := range []provider.RecordSet{
		geoSet(t, "app.gslb.test", "A", "ap", false, []string{"203.0.113.1"}, "203.0.113.0/24"),
		geoSet(t, "app.gslb.test", "A", "eu", true, []string{"192.0.2.1"}, "AT"),
		geoSet(t, "app.gslb.test", "A", "an", false, []string{"192.0.2.1"}, "continent:AN"),
		geoSet(t, "app.gslb.test", "TXT", "eu", true, []string{"hello"}, "DE"),
	} {
		before := fake.Count("changes.create")
		err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate, After: &rs}})
		if !errors.Is(err, provider.ErrNotCapable) {
			t.Errorf("%s %v: %v, want ErrNotCapable", rs.Type, rs.ProviderSpecific, err)
		}
		if fake.Count("changes.create") != before {
			t.Errorf("%v: a request was sent", rs.ProviderSpecific)
		}
	}
	// A tag whose every region a country of another tag takes answers nowhere.
	oc := geoSet(t, "app.gslb.test", "A", "oc", false, []string{"192.0.2.1"}, "continent:OC")
	au := geoSet(t, "app.gslb.test", "A", "au", false, []string{"192.0.2.2"}, "AU")
	err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate, After: &oc}, {Action: provider.ActionCreate, After: &au}})
	if !errors.Is(err, provider.ErrNotCapable) || !strings.Contains(err.Error(), `"oc"`) {
		t.Errorf("a shadowed tag: %v, want ErrNotCapable naming oc", err)
	}
}

// TestGeoSets_ForeignRoutingPolicyLeftAlone: a routing-policy set another tool wrote (no
// companion) is not listed and not overwritten: a geo set at its name and type is refused
// (InvalidChange, naming it), and the set is as it was.
func TestGeoSets_ForeignRoutingPolicyLeftAlone(t *testing.T) {
	fake, p, z := setupGeo(t)
	ctx := context.Background()
	svc, err := dns.NewService(ctx, option.WithEndpoint(fake.URL+"/"), option.WithHTTPClient(fake.Client()))
	if err != nil {
		t.Fatal(err)
	}
	foreign := &dns.ResourceRecordSet{Name: "app.gslb.test.", Type: "A", Ttl: 60, RoutingPolicy: &dns.RRSetRoutingPolicy{Geo: &dns.RRSetRoutingPolicyGeoPolicy{
		Items: []*dns.RRSetRoutingPolicyGeoPolicyGeoPolicyItem{{Location: "europe-west1", Rrdatas: []string{"192.0.2.200"}}}}}}
	if _, err := svc.Changes.Create(project, z.ID, &dns.Change{Additions: []*dns.ResourceRecordSet{foreign}}).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	if got := listGeo(t, p, z.ID, "app.gslb.test"); len(got) != 0 {
		t.Fatalf("the foreign routing-policy set is listed: %v", got)
	}
	eu := geoSet(t, "app.gslb.test", "A", "eu", true, []string{"192.0.2.1"}, "DE")
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate, After: &eu}}); !errors.Is(err, provider.ErrInvalidChange) ||
		!strings.Contains(err.Error(), "did not write") {
		t.Fatalf("a geo set over a foreign routing policy: %v, want ErrInvalidChange", err)
	}
	if got := geoItems(fake, z.ID, "app.gslb.test", "A"); !reflect.DeepEqual(got, []string{"ttl=60 rrdatas=[]", "europe-west1 192.0.2.200"}) {
		t.Fatalf("the foreign set became %v", got)
	}
	// Another name's geo sets are written beside it.
	other := geoSet(t, "api.gslb.test", "A", "eu", true, []string{"192.0.2.1"}, "DE")
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate, After: &other}}); err != nil {
		t.Fatal(err)
	}
	// The zone drains both (exact deletions of routing-policy sets).
	if err := p.DeleteZone(ctx, z.ID); err != nil {
		t.Fatalf("DeleteZone with routing-policy sets: %v", err)
	}
}

// TestGeoSets_DriftIsRewritten: a routing-policy set changed behind dnsplane's back (an item's
// rrdatas edited) is listed with the drift label, so the plan rewrites it, and the rewrite
// replaces the edited set exactly.
func TestGeoSets_DriftIsRewritten(t *testing.T) {
	fake, p, z := setupGeo(t)
	ctx := context.Background()
	eu := geoSet(t, "app.gslb.test", "A", "eu", true, []string{"192.0.2.1"}, "DE")
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate, After: &eu}}); err != nil {
		t.Fatal(err)
	}
	svc, err := dns.NewService(ctx, option.WithEndpoint(fake.URL+"/"), option.WithHTTPClient(fake.Client()))
	if err != nil {
		t.Fatal(err)
	}
	r, err := svc.ResourceRecordSets.List(project, z.ID).Name("app.gslb.test.").Type("A").Context(ctx).Do()
	if err != nil || len(r.Rrsets) != 1 {
		t.Fatal(err, r)
	}
	cur := r.Rrsets[0]
	edited := &dns.ResourceRecordSet{Name: cur.Name, Type: cur.Type, Ttl: cur.Ttl, RoutingPolicy: &dns.RRSetRoutingPolicy{Geo: &dns.RRSetRoutingPolicyGeoPolicy{
		Items: []*dns.RRSetRoutingPolicyGeoPolicyGeoPolicyItem{{Location: "europe-west3", Rrdatas: []string{"192.0.2.66"}}}}}}
	if _, err := svc.Changes.Create(project, z.ID, &dns.Change{Deletions: []*dns.ResourceRecordSet{cur}, Additions: []*dns.ResourceRecordSet{edited}}).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	listed := listGeo(t, p, z.ID, "app.gslb.test")["A/eu"]
	if listed.Equal(eu) {
		t.Fatal("the edited set is listed as the one written: the plan would never repair it")
	}
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionUpdate, Before: &listed, After: &eu}}); err != nil {
		t.Fatal(err)
	}
	if g := listGeo(t, p, z.ID, "app.gslb.test")["A/eu"]; !g.Equal(eu) {
		t.Fatalf("after the rewrite listed %+v, want %+v", g, eu)
	}
	if got := geoItems(fake, z.ID, "app.gslb.test", "A"); len(got) != 1+len(gcpRegionCount) {
		t.Fatalf("after the rewrite %d items", len(got)-1)
	}
}

var gcpRegionCount = clouddnsfake.Regions()

// TestGeoSets_SplitBatches: the guard splits a large batch; the geo sets of one name in two
// batches still end as one policy holding every tag (each batch reads the current set).
func TestGeoSets_SplitBatches(t *testing.T) {
	fake, raw, z := setupGeo(t)
	p := guard.New(raw, guard.Options{})
	ctx := context.Background()
	var changes []provider.Change
	for i := range 999 {
		rs := provider.RecordSet{Name: fmt.Sprintf("h%04d.gslb.test", i), Type: "A", TTL: 60, Targets: []string{fmt.Sprintf("10.0.%d.%d", i/256, i%256)}}
		changes = append(changes, provider.Change{Action: provider.ActionCreate, After: &rs})
	}
	de := geoSet(t, "app.gslb.test", "A", "de", false, []string{"192.0.2.1"}, "DE")
	us := geoSet(t, "app.gslb.test", "A", "us", true, []string{"198.51.100.1"}, "US")
	changes = append(changes, provider.Change{Action: provider.ActionCreate, After: &de}, provider.Change{Action: provider.ActionCreate, After: &us})
	if err := p.ApplyChanges(ctx, z.ID, changes); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.ChangeSizes()); n < 2 {
		t.Fatalf("%d requests: the batch was not split", n)
	}
	got := listGeo(t, raw, z.ID, "app.gslb.test")
	if !got["A/de"].Equal(de) || !got["A/us"].Equal(us) || len(got) != 2 {
		t.Fatalf("listed %v", got)
	}
}
