package gslb_test

import (
	"reflect"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

func TestCompute_Strategies(t *testing.T) {
	eu := []string{"192.0.2.1"}
	us := []string{"198.51.100.1", "2001:db8::1"}
	ap := []string{"203.0.113.1"}
	tests := []struct {
		name     string
		strategy string
		primary  string
		weights  map[string]int32
		targets  map[string][]string
		want     gslb.Answer
		wantErr  bool
	}{
		// roundRobin
		{name: "roundRobin: nil targets", strategy: gslb.RoundRobin, want: gslb.Answer{}},
		{name: "roundRobin: only empty entries", strategy: gslb.RoundRobin,
			targets: map[string][]string{"eu": nil, "us": {}}, want: gslb.Answer{}},
		{name: "roundRobin: one geo tag", strategy: gslb.RoundRobin,
			targets: map[string][]string{"eu": eu}, want: gslb.Answer{Targets: []string{"192.0.2.1"}}},
		{name: "roundRobin: sorted union, IPv4 before IPv6", strategy: gslb.RoundRobin,
			targets: map[string][]string{"us": us, "eu": eu, "ap": ap, "silent": nil},
			want:    gslb.Answer{Targets: []string{"192.0.2.1", "198.51.100.1", "203.0.113.1", "2001:db8::1"}}},
		{name: "roundRobin: numeric order, duplicates across geo tags removed, canonical", strategy: gslb.RoundRobin,
			targets: map[string][]string{"eu": {"10.0.0.10", "10.0.0.2", "2001:DB8:0::1"}, "us": {"10.0.0.2", "2001:db8::1"}},
			want:    gslb.Answer{Targets: []string{"10.0.0.2", "10.0.0.10", "2001:db8::1"}}},
		{name: "roundRobin: ignores primary and weights", strategy: gslb.RoundRobin, primary: "eu",
			weights: map[string]int32{"eu": 100}, targets: map[string][]string{"eu": eu, "us": us},
			want: gslb.Answer{Targets: []string{"192.0.2.1", "198.51.100.1", "2001:db8::1"}}},

		// failover
		{name: "failover: primary healthy serves only primary", strategy: gslb.Failover, primary: "eu",
			targets: map[string][]string{"eu": {"192.0.2.1", "2001:db8::9"}, "us": us, "ap": ap}, want: gslb.Answer{Targets: []string{"192.0.2.1", "2001:db8::9"}}},
		{name: "failover: per family, the primary's IPv4 and the others' IPv6 the primary lacks", strategy: gslb.Failover, primary: "eu",
			targets: map[string][]string{"eu": eu, "us": us, "ap": ap}, want: gslb.Answer{Targets: []string{"192.0.2.1", "2001:db8::1"}}},
		{name: "failover: primary empty fails over to the union of others", strategy: gslb.Failover, primary: "eu",
			targets: map[string][]string{"eu": {}, "us": us, "ap": ap},
			want:    gslb.Answer{Targets: []string{"198.51.100.1", "203.0.113.1", "2001:db8::1"}}},
		{name: "failover: primary missing fails over", strategy: gslb.Failover, primary: "eu",
			targets: map[string][]string{"us": us}, want: gslb.Answer{Targets: []string{"198.51.100.1", "2001:db8::1"}}},
		{name: "failover: primary not among peers at all", strategy: gslb.Failover, primary: "mars",
			targets: map[string][]string{"eu": eu, "us": us},
			want:    gslb.Answer{Targets: []string{"192.0.2.1", "198.51.100.1", "2001:db8::1"}}},
		{name: "failover: nobody healthy", strategy: gslb.Failover, primary: "eu",
			targets: map[string][]string{"eu": nil, "us": nil}, want: gslb.Answer{}},
		{name: "failover: nil targets", strategy: gslb.Failover, primary: "eu", want: gslb.Answer{}},
		{name: "failover: primary sorted and deduplicated", strategy: gslb.Failover, primary: "eu",
			targets: map[string][]string{"eu": {"192.0.2.9", "192.0.2.1", "192.0.2.9"}, "us": us},
			want:    gslb.Answer{Targets: []string{"192.0.2.1", "192.0.2.9", "2001:db8::1"}}},
		{name: "failover: ignores weights", strategy: gslb.Failover, primary: "us", weights: map[string]int32{"eu": 100},
			targets: map[string][]string{"eu": eu, "us": us}, want: gslb.Answer{Targets: []string{"198.51.100.1", "2001:db8::1"}}},
		{name: "failover: no primary geo tag is an error", strategy: gslb.Failover,
			targets: map[string][]string{"eu": eu}, wantErr: true},

		// weighted
		{name: "weighted: one set per geo tag, sorted by geo tag", strategy: gslb.Weighted,
			weights: map[string]int32{"eu": 70, "us": 30},
			targets: map[string][]string{"us": us, "eu": eu},
			want: gslb.Answer{Weighted: []gslb.WeightedSet{
				{GeoTag: "eu", Weight: 70, Targets: []string{"192.0.2.1"}},
				{GeoTag: "us", Weight: 30, Targets: []string{"198.51.100.1", "2001:db8::1"}},
			}}},
		{name: "weighted: geo tag without weight left out of a family a weighted tag serves", strategy: gslb.Weighted,
			weights: map[string]int32{"eu": 70},
			targets: map[string][]string{"eu": eu, "us": us},
			want: gslb.Answer{Weighted: []gslb.WeightedSet{{GeoTag: "eu", Weight: 70, Targets: eu},
				{GeoTag: "us", Weight: 1, Targets: []string{"2001:db8::1"}}}}},
		{name: "weighted: zero and negative weights left out of a family a weighted tag serves", strategy: gslb.Weighted,
			weights: map[string]int32{"eu": 0, "us": -5, "ap": 1},
			targets: map[string][]string{"eu": eu, "us": us, "ap": ap},
			want: gslb.Answer{Weighted: []gslb.WeightedSet{{GeoTag: "ap", Weight: 1, Targets: ap},
				{GeoTag: "us", Weight: 1, Targets: []string{"2001:db8::1"}}}}},
		{name: "weighted: weight 0 serves when no weighted tag has a target", strategy: gslb.Weighted,
			weights: map[string]int32{"eu": 100, "us": 0},
			targets: map[string][]string{"eu": nil, "us": us},
			want:    gslb.Answer{Weighted: []gslb.WeightedSet{{GeoTag: "us", Weight: 1, Targets: []string{"198.51.100.1", "2001:db8::1"}}}}},
		{name: "weighted: geo tag without targets left out", strategy: gslb.Weighted,
			weights: map[string]int32{"eu": 70, "us": 30, "ap": 10},
			targets: map[string][]string{"eu": nil, "us": us},
			want: gslb.Answer{Weighted: []gslb.WeightedSet{
				{GeoTag: "us", Weight: 30, Targets: []string{"198.51.100.1", "2001:db8::1"}}}}},
		{name: "weighted: no weights at all, an even split", strategy: gslb.Weighted,
			targets: map[string][]string{"eu": eu, "us": us}, want: gslb.Answer{Weighted: []gslb.WeightedSet{
				{GeoTag: "eu", Weight: 1, Targets: eu}, {GeoTag: "us", Weight: 1, Targets: us}}}},
		{name: "weighted: no targets at all", strategy: gslb.Weighted,
			weights: map[string]int32{"eu": 70, "us": 30}, want: gslb.Answer{}},
		{name: "weighted: targets sorted and deduplicated within a set", strategy: gslb.Weighted,
			weights: map[string]int32{"eu": 2147483647},
			targets: map[string][]string{"eu": {"2001:db8::2", "192.0.2.3", "192.0.2.3", ""}},
			want: gslb.Answer{Weighted: []gslb.WeightedSet{
				{GeoTag: "eu", Weight: 2147483647, Targets: []string{"192.0.2.3", "2001:db8::2"}}}}},
		{name: "weighted: ignores primary", strategy: gslb.Weighted, primary: "us",
			weights: map[string]int32{"eu": 1}, targets: map[string][]string{"eu": eu, "us": {"198.51.100.1"}},
			want: gslb.Answer{Weighted: []gslb.WeightedSet{{GeoTag: "eu", Weight: 1, Targets: eu}}}},

		// unknown
		{name: "unknown strategy", strategy: "geoip", targets: map[string][]string{"eu": eu}, wantErr: true},
		{name: "empty strategy", strategy: "", targets: map[string][]string{"eu": eu}, wantErr: true},
		{name: "strategy is case-sensitive", strategy: "RoundRobin", targets: map[string][]string{"eu": eu}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := gslb.Compute(tt.strategy, tt.primary, tt.weights, tt.targets)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Compute = %+v, nil; want an error", got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Compute = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestCompute_DoesNotModifyInputs(t *testing.T) {
	targets := map[string][]string{"eu": {"192.0.2.9", "192.0.2.1"}, "us": {"198.51.100.1"}}
	for _, s := range []string{gslb.RoundRobin, gslb.Failover, gslb.Weighted} {
		if _, err := gslb.Compute(s, "eu", map[string]int32{"eu": 1, "us": 1}, targets); err != nil {
			t.Fatal(err)
		}
	}
	if got := targets["eu"]; got[0] != "192.0.2.9" || got[1] != "192.0.2.1" {
		t.Fatalf("input reordered: %v", got)
	}
}

// TestStrategyCompute_Geo: one set per geo tag that a region or the default names,
// with its regions and the targets of the fallback order.
func TestStrategyCompute_Geo(t *testing.T) {
	s := gslb.Strategy{Type: gslb.Geo, DefaultGeoTag: "eu", GeoRegions: map[string]string{"DE": "eu", "continent:NA": "us", "203.0.113.0/24": "ap", "FR": "eu"}}
	for _, tc := range []struct {
		name    string
		targets map[string][]string
		want    []gslb.GeoSet
	}{{
		name:    "every tag healthy; targets canonicalised",
		targets: map[string][]string{"eu": {"192.0.2.2", "192.0.2.1"}, "us": {"198.51.100.1"}, "ap": {"203.0.113.9"}},
		want: []gslb.GeoSet{
			{GeoTag: "ap", Regions: []string{"203.0.113.0/24"}, Targets: []string{"203.0.113.9"}},
			{GeoTag: "eu", Regions: []string{"DE", "FR"}, Default: true, Targets: []string{"192.0.2.1", "192.0.2.2"}},
			{GeoTag: "us", Regions: []string{"continent:NA"}, Targets: []string{"198.51.100.1"}},
		},
	}, {
		name:    "per family: a tag without IPv6 gets the default's, then the first tag's, never every tag's",
		targets: map[string][]string{"eu": {"192.0.2.1"}, "us": {"198.51.100.1", "2001:DB8::1"}, "ap": {"2001:db8::2"}},
		want: []gslb.GeoSet{
			{GeoTag: "ap", Regions: []string{"203.0.113.0/24"}, Targets: []string{"192.0.2.1", "2001:db8::2"}},
			{GeoTag: "eu", Regions: []string{"DE", "FR"}, Default: true, Targets: []string{"192.0.2.1", "2001:db8::2"}},
			{GeoTag: "us", Regions: []string{"continent:NA"}, Targets: []string{"198.51.100.1", "2001:db8::1"}},
		},
	}, {
		name:    "us and ap silent: the default's",
		targets: map[string][]string{"eu": {"192.0.2.1"}, "us": nil},
		want: []gslb.GeoSet{
			{GeoTag: "ap", Regions: []string{"203.0.113.0/24"}, Targets: []string{"192.0.2.1"}},
			{GeoTag: "eu", Regions: []string{"DE", "FR"}, Default: true, Targets: []string{"192.0.2.1"}},
			{GeoTag: "us", Regions: []string{"continent:NA"}, Targets: []string{"192.0.2.1"}},
		},
	}, {
		name:    "the default silent: the first tag's in tag order",
		targets: map[string][]string{"us": {"198.51.100.1"}, "ap": {"203.0.113.9"}},
		want: []gslb.GeoSet{
			{GeoTag: "ap", Regions: []string{"203.0.113.0/24"}, Targets: []string{"203.0.113.9"}},
			{GeoTag: "eu", Regions: []string{"DE", "FR"}, Default: true, Targets: []string{"203.0.113.9"}},
			{GeoTag: "us", Regions: []string{"continent:NA"}, Targets: []string{"198.51.100.1"}},
		},
	}, {
		name:    "nothing healthy: no set",
		targets: map[string][]string{"eu": {" "}, "us": nil},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Compute(tc.targets)
			if err != nil || !reflect.DeepEqual(got.Geo, tc.want) || got.Targets != nil || got.Weighted != nil {
				t.Fatalf("Compute = %+v, %v\nwant Geo %+v", got, err, tc.want)
			}
		})
	}
	for name, bad := range map[string]gslb.Strategy{
		"no default":     {Type: gslb.Geo, GeoRegions: map[string]string{"DE": "eu"}},
		"invalid region": {Type: gslb.Geo, DefaultGeoTag: "eu", GeoRegions: map[string]string{"de": "eu"}},
		"empty tag":      {Type: gslb.Geo, DefaultGeoTag: "eu", GeoRegions: map[string]string{"DE": ""}},
	} {
		if _, err := bad.Compute(map[string][]string{"eu": {"192.0.2.1"}}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// The other strategies go through Compute unchanged.
	if got, err := (gslb.Strategy{Type: gslb.Failover, PrimaryGeoTag: "us"}).Compute(map[string][]string{"us": {"192.0.2.1"}}); err != nil || !reflect.DeepEqual(got.Targets, []string{"192.0.2.1"}) {
		t.Fatalf("failover via Strategy: %+v, %v", got, err)
	}
}
