package aws_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// geoSet is a geo set as the Gslb controller publishes it (pkg/geo's labels).
func geoSet(t *testing.T, name, tag string, dflt bool, targets []string, regions ...string) provider.RecordSet {
	t.Helper()
	kv, err := geo.EncodeLabels(geo.Set{Tag: tag, Regions: regions, Default: dflt})
	if err != nil {
		t.Fatal(err)
	}
	ps := map[string]string{}
	for _, p := range kv {
		ps[p[0]] = p[1]
	}
	return provider.RecordSet{Name: name, Type: "A", TTL: 30, Targets: targets, SetIdentifier: tag, ProviderSpecific: ps}
}

// geolocations renders the fake's record sets of name as "setID location values" lines.
func geolocations(fake *route53fake.Server, zoneID, name string) []string {
	var out []string
	for _, r := range fake.RecordSets(zoneID) {
		if r.Name != name+"." {
			continue
		}
		loc := "-"
		if g := r.GeoLocation; g != nil {
			loc = fmt.Sprintf("continent=%s country=%s", g.ContinentCode, g.CountryCode)
		}
		var vals []string
		for _, v := range r.Records {
			vals = append(vals, v.Value)
		}
		out = append(out, fmt.Sprintf("%s %s ttl=%d %v", r.SetIdentifier, loc, *r.TTL, vals))
	}
	slices.Sort(out)
	return out
}

// TestGeoSets_WrittenAsRoute53Geolocation: a geo set is written as one Route 53
// geolocation record set per region (Route 53 API Reference, GeoLocation: CountryCode,
// ContinentCode, and CountryCode "*" for the default location), listed back as the geo set
// that was written, updated and deleted exactly; a CIDR region is NotCapable.
func TestGeoSets_WrittenAsRoute53Geolocation(t *testing.T) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	ctx := context.Background()
	p := newProvider(t, fake, nil)
	if !p.Capabilities().GeoRouting {
		t.Fatal("Route 53 does not declare GeoRouting")
	}
	z, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "gslb.test", CallerReference: "ref-geo"})
	if err != nil {
		t.Fatal(err)
	}
	const name = "app.gslb.test"
	eu := geoSet(t, name, "eu", true, []string{"192.0.2.1"}, "DE", "continent:EU")
	us := geoSet(t, name, "us", false, []string{"198.51.100.1", "198.51.100.2"}, "continent:NA")
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate, After: &eu}, {Action: provider.ActionCreate, After: &us}}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"eu/* continent= country=* ttl=30 [192.0.2.1]",
		"eu/DE continent= country=DE ttl=30 [192.0.2.1]",
		"eu/continent:EU continent=EU country= ttl=30 [192.0.2.1]",
		"us/continent:NA continent=NA country= ttl=30 [198.51.100.1 198.51.100.2]",
	}
	if got := geolocations(fake, z.ID, name); !reflect.DeepEqual(got, want) {
		t.Fatalf("Route 53 holds\n%v\nwant\n%v", got, want)
	}
	list := func() map[string]provider.RecordSet {
		t.Helper()
		sets, err := p.ListRecordSets(ctx, z.ID)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]provider.RecordSet{}
		for _, rs := range sets {
			if rs.Name == name {
				slices.Sort(rs.Targets)
				out[rs.SetIdentifier] = rs
			}
		}
		return out
	}
	got := list()
	if len(got) != 2 || !reflect.DeepEqual(got["eu"], eu) || !reflect.DeepEqual(got["us"], us) {
		t.Fatalf("listed %+v\nwant %+v and %+v", got, eu, us)
	}

	// An update moves eu from continent:EU to FR: the old locations go, the new come.
	eu2 := geoSet(t, name, "eu", true, []string{"192.0.2.1"}, "DE", "FR")
	before := got["eu"]
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionUpdate, Before: &before, After: &eu2}}); err != nil {
		t.Fatal(err)
	}
	want = []string{
		"eu/* continent= country=* ttl=30 [192.0.2.1]",
		"eu/DE continent= country=DE ttl=30 [192.0.2.1]",
		"eu/FR continent= country=FR ttl=30 [192.0.2.1]",
		"us/continent:NA continent=NA country= ttl=30 [198.51.100.1 198.51.100.2]",
	}
	if got := geolocations(fake, z.ID, name); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the update Route 53 holds\n%v\nwant\n%v", got, want)
	}
	if got := list(); !reflect.DeepEqual(got["eu"], eu2) {
		t.Fatalf("listed eu %+v, want %+v", got["eu"], eu2)
	}

	// Cost: one element per record of each geolocation record set.
	if e, _ := p.RequestCost(provider.Change{Action: provider.ActionCreate, After: &eu2}); e != 3 {
		t.Errorf("RequestCost of a 3-location geo set of one record = %d, want 3", e)
	}

	usNow := list()["us"]
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionDelete, Before: &usNow}}); err != nil {
		t.Fatal(err)
	}
	if got := geolocations(fake, z.ID, name); len(got) != 3 {
		t.Fatalf("after deleting us: %v", got)
	}

	// A CIDR region has no geolocation equivalent.
	ap := geoSet(t, name, "ap", false, []string{"203.0.113.1"}, "203.0.113.0/24")
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate, After: &ap}}); !errors.Is(err, provider.ErrNotCapable) {
		t.Fatalf("a CIDR region: %v, want ErrNotCapable", err)
	}
	// Route 53 refuses a weighted set beside geolocation ones of the same name and type.
	w := int64(10)
	weighted := provider.RecordSet{Name: name, Type: "A", TTL: 30, Targets: []string{"192.0.2.9"}, SetIdentifier: "w", Weight: &w}
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate, After: &weighted}}); err == nil {
		t.Fatal("a weighted set beside geolocation sets was written")
	}
}
