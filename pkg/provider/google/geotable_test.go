package google

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dnsplane/dnsplane/internal/testing/clouddnsfake"
	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// TestGCPRegions_TableIsTheFakesList: the table is sorted, has no duplicate, and names exactly
// the regions clouddnsfake accepts as locations; every country and continent code is one
// geo.ParseRegion accepts.
func TestGCPRegions_TableIsTheFakesList(t *testing.T) {
	var names []string
	for _, r := range gcpRegions {
		names = append(names, r.name)
		if _, err := geo.ParseRegion(r.country); err != nil {
			t.Errorf("%s: country %q: %v", r.name, r.country, err)
		}
		if _, err := geo.ParseRegion(geo.ContinentPrefix + r.continent); err != nil {
			t.Errorf("%s: continent %q: %v", r.name, r.continent, err)
		}
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("table not sorted or with duplicates: %v", names)
	}
	fake := clouddnsfake.Regions()
	slices.Sort(fake)
	if !slices.Equal(names, fake) {
		t.Errorf("table %v\nfake  %v", names, fake)
	}
}

// regionsOf returns the sorted regions of gcpRegions whose country (or continent, for
// "continent:XX") is code.
func regionsOf(code string) []string {
	var out []string
	for _, r := range gcpRegions {
		if c, ok := strings.CutPrefix(code, geo.ContinentPrefix); ok && r.continent == c || r.country == code {
			out = append(out, r.name)
		}
	}
	return out
}

// TestGeoLocations_Table: each case maps region keys (per tag) to locations by dnsplane's rule,
// country over continent over default, or fails NotCapable / InvalidChange.
func TestGeoLocations_Table(t *testing.T) {
	all := func() []string {
		var out []string
		for _, r := range gcpRegions {
			out = append(out, r.name)
		}
		return out
	}()
	minus := func(a []string, b ...[]string) []string {
		return slices.DeleteFunc(slices.Clone(a), func(s string) bool {
			for _, x := range b {
				if slices.Contains(x, s) {
					return true
				}
			}
			return false
		})
	}
	// Every country the brief's table names, and each country's regions.
	countries := map[string][]string{
		"DE": {"europe-west10", "europe-west3"}, "FR": {"europe-west9"}, "GB": {"europe-west2"}, "NL": {"europe-west4"},
		"BE": {"europe-west1"}, "FI": {"europe-north1"}, "IT": {"europe-west12", "europe-west8"}, "ES": {"europe-southwest1"},
		"PL": {"europe-central2"}, "CH": {"europe-west6"}, "SE": {"europe-north2"},
		"US": {"us-central1", "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west2", "us-west3", "us-west4"},
		"CA": {"northamerica-northeast1", "northamerica-northeast2"}, "MX": {"northamerica-south1"},
		"BR": {"southamerica-east1"}, "CL": {"southamerica-west1"},
		"JP": {"asia-northeast1", "asia-northeast2"}, "KR": {"asia-northeast3"}, "IN": {"asia-south1", "asia-south2"},
		"SG": {"asia-southeast1"}, "ID": {"asia-southeast2"}, "TH": {"asia-southeast3"}, "TW": {"asia-east1"}, "HK": {"asia-east2"},
		"AU": {"australia-southeast1", "australia-southeast2"},
		"IL": {"me-west1"}, "QA": {"me-central1"}, "SA": {"me-central2"}, "ZA": {"africa-south1"},
	}
	for code, want := range countries {
		got, err := geoLocations([]geo.Set{{Tag: "t", Regions: []string{code}}})
		if err != nil {
			t.Errorf("%s: %v", code, err)
			continue
		}
		if locs := sortedLocations(got); !slices.Equal(locs, want) {
			t.Errorf("%s -> %v, want %v", code, locs, want)
		}
	}
	continents := map[string]int{"AF": 1, "AS": 13, "EU": 13, "NA": 12, "OC": 2, "SA": 2}
	for c, n := range continents {
		got, err := geoLocations([]geo.Set{{Tag: "t", Regions: []string{"continent:" + c}}})
		if err != nil || len(got) != n {
			t.Errorf("continent:%s -> %d locations (%v), want %d", c, len(got), err, n)
		}
	}
	total := 0
	for _, n := range continents {
		total += n
	}
	if total != len(gcpRegions) {
		t.Errorf("continents cover %d regions, the table has %d", total, len(gcpRegions))
	}

	type want map[string][]string // tag -> locations
	cases := []struct {
		name string
		tags []geo.Set
		want want
		err  error
	}{
		{"country over continent over default", []geo.Set{
			{Tag: "de", Regions: []string{"DE"}},
			{Tag: "eu", Regions: []string{"continent:EU"}},
			{Tag: "us", Regions: []string{"continent:NA", "BR"}},
			{Tag: "world", Default: true},
		}, want{
			"de":    regionsOf("DE"),
			"eu":    minus(regionsOf("continent:EU"), regionsOf("DE")),
			"us":    slices.Sorted(slices.Values(append(regionsOf("continent:NA"), "southamerica-east1"))),
			"world": minus(all, regionsOf("continent:EU"), regionsOf("continent:NA"), []string{"southamerica-east1"}),
		}, nil},
		{"the default with regions of its own", []geo.Set{
			{Tag: "eu", Regions: []string{"FR"}, Default: true},
			{Tag: "ap", Regions: []string{"JP"}},
		}, want{"eu": minus(all, regionsOf("JP")), "ap": regionsOf("JP")}, nil},
		{"no default: only the regions named", []geo.Set{{Tag: "us", Regions: []string{"US"}}},
			want{"us": regionsOf("US")}, nil},
		{"a default left with no region", []geo.Set{
			{Tag: "all", Regions: []string{"continent:AF", "continent:AS", "continent:EU", "continent:NA", "continent:OC", "continent:SA"}},
			{Tag: "rest", Default: true},
		}, want{"all": all}, nil},
		{"a CIDR", []geo.Set{{Tag: "ap", Regions: []string{"203.0.113.0/24"}}}, nil, provider.ErrNotCapable},
		{"an IPv6 CIDR", []geo.Set{{Tag: "ap", Regions: []string{"2001:db8::/32"}}}, nil, provider.ErrNotCapable},
		{"a country without a region", []geo.Set{{Tag: "eu", Regions: []string{"AT"}}}, nil, provider.ErrNotCapable},
		{"another country without a region", []geo.Set{{Tag: "sa", Regions: []string{"AR"}}}, nil, provider.ErrNotCapable},
		{"Antarctica", []geo.Set{{Tag: "an", Regions: []string{"continent:AN"}}}, nil, provider.ErrNotCapable},
		{"a tag shadowed by countries", []geo.Set{
			{Tag: "oc", Regions: []string{"continent:OC"}},
			{Tag: "au", Regions: []string{"AU"}},
		}, nil, provider.ErrNotCapable},
		{"a region in two tags", []geo.Set{
			{Tag: "a", Regions: []string{"DE"}},
			{Tag: "b", Regions: []string{"DE", "FR"}},
		}, nil, provider.ErrInvalidChange},
		{"two defaults", []geo.Set{{Tag: "a", Regions: []string{"DE"}, Default: true}, {Tag: "b", Default: true}}, nil, provider.ErrInvalidChange},
	}
	for _, c := range cases {
		got, err := geoLocations(c.tags)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: %v, want %v", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		byTag := want{}
		for _, loc := range sortedLocations(got) {
			byTag[got[loc]] = append(byTag[got[loc]], loc)
		}
		for tag := range c.want {
			slices.Sort(c.want[tag])
		}
		if !maps.EqualFunc(byTag, c.want, func(a, b []string) bool { return slices.Equal(a, b) }) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, byTag, c.want)
		}
	}
}

// TestCompanion_RoundTrip: a companion name and value read back as written; other names and
// values are not companions.
func TestCompanion_RoundTrip(t *testing.T) {
	for _, c := range []struct{ name, typ, want string }{
		{"app.gslb.test", "A", "dp-geo-a.app.gslb.test"},
		{"gslb.test", "AAAA", "dp-geo-aaaa.gslb.test"},
		{"*.gslb.test", "CNAME", "dp-geo-cname-wildcard.gslb.test"},
	} {
		got := companionName(c.name, c.typ)
		if got != c.want {
			t.Errorf("companionName(%s, %s) = %s, want %s", c.name, c.typ, got, c.want)
		}
		if n, typ, ok := parseCompanionName(got + "."); !ok || n != c.name || typ != c.typ {
			t.Errorf("parseCompanionName(%s) = %s %s %v", got, n, typ, ok)
		}
		if provider.IsRegistryName(got) {
			t.Errorf("%s parses as a registry name", got)
		}
	}
	for _, n := range []string{"dp-geo-mx.x.test", "dp-geo.x.test", "geo-a.x.test", "dp-geo-a", "dp-a-abcdefghij-x.x.test"} {
		if _, _, ok := parseCompanionName(n); ok {
			t.Errorf("%s parsed as a companion name", n)
		}
	}
	tag := geoTag{set: geo.Set{Tag: "eu west=1", Regions: []string{"DE", "continent:EU"}, Default: true}, ttl: 30, targets: []string{"192.0.2.1", "192.0.2.2"}}
	v := encodeEntry(tag)
	got, err := parseEntry(v, "A")
	if err != nil || !reflect.DeepEqual(got, tag) {
		t.Fatalf("parseEntry(%q) = %+v, %v; want %+v", v, got, err, tag)
	}
	for _, bad := range []string{"", "dnsplane-geo/2 tag=a ttl=1 default=false regions=DE targets=192.0.2.1", "v=spf1 -all",
		"dnsplane-geo/1 tag=a ttl=1 default=false regions=XX1 targets=192.0.2.1", "dnsplane-geo/1 tag=a ttl=1 default=false regions=DE targets=",
		"dnsplane-geo/1 tag= ttl=1 default=false regions=DE targets=192.0.2.1", "dnsplane-geo/1 tag=a ttl=x default=false regions=DE targets=192.0.2.1"} {
		if _, err := parseEntry(bad, "A"); err == nil {
			t.Errorf("parseEntry(%q) accepted", bad)
		}
	}
}
