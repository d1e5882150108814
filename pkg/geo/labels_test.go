package geo

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func toMap(kv [][2]string) map[string]string {
	m := map[string]string{}
	for _, p := range kv {
		m[p[0]] = p[1]
	}
	return m
}

func TestLabels_RoundTrip(t *testing.T) {
	var many []string
	for i := range 256 {
		// The longest canonical IPv6 CIDRs: 43 bytes each.
		many = append(many, fmt.Sprintf("2001:db8:ffff:ffff:ffff:ffff:ff%02x:ff00/120", i))
	}
	slices.Sort(many)
	for _, s := range []Set{
		{Tag: "eu", Regions: []string{"DE", "FR", "continent:EU"}, Default: true},
		{Tag: "us", Regions: []string{"continent:NA"}},
		{Tag: "only-default", Default: true},
		{Tag: "v6", Regions: many},
	} {
		kv, err := EncodeLabels(s)
		if err != nil {
			t.Fatalf("EncodeLabels(%s): %v", s.Tag, err)
		}
		for _, p := range kv {
			if len(p[1]) > MaxLabelValue {
				t.Errorf("%s: label %s is %d bytes", s.Tag, p[0], len(p[1]))
			}
		}
		if len(kv) > 16 {
			t.Errorf("%s: %d labels, more than providerSpecific holds", s.Tag, len(kv))
		}
		got, ok, err := DecodeLabels(toMap(kv))
		if !ok || err != nil || got.Tag != s.Tag || got.Default != s.Default || !reflect.DeepEqual(got.Regions, s.Regions) {
			t.Errorf("round trip of %s (%d regions): %s %d regions, default %v, ok=%v err=%v", s.Tag, len(s.Regions), got.Tag, len(got.Regions), got.Default, ok, err)
		}
	}
	kv, _ := EncodeLabels(Set{Tag: "v6", Regions: many})
	if m := toMap(kv); m[LabelRegions+".1"] == "" || strings.Contains(m[LabelRegions], "  ") {
		t.Errorf("256 IPv6 regions were not split over several labels: %d labels", len(kv))
	}
}

func TestEncodeLabels_TooManyRegions(t *testing.T) {
	var huge []string
	for i := range 2000 {
		huge = append(huge, fmt.Sprintf("2001:db8:ffff:ffff:ffff:ffff:%x:0/112", i))
	}
	if _, err := EncodeLabels(Set{Tag: "x", Regions: huge}); err == nil {
		t.Fatal("2,000 regions were encoded; want an error")
	}
}

func TestDecodeLabels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		ok     bool
		bad    bool
		want   Set
	}{
		{name: "no labels: no geo set", labels: nil},
		{name: "weight labels only: no geo set", labels: map[string]string{"aws/weight": "10"}},
		{name: "empty tag", labels: map[string]string{LabelTag: ""}, ok: true, bad: true},
		{name: "invalid region", labels: map[string]string{LabelTag: "eu", LabelRegions: "DE de"}, ok: true, bad: true},
		{name: "default without regions", labels: map[string]string{LabelTag: "eu", LabelDefault: "true"}, ok: true, want: Set{Tag: "eu", Default: true}},
		{name: "unsorted and spaced", labels: map[string]string{LabelTag: "eu", LabelRegions: " FR  DE "}, ok: true, want: Set{Tag: "eu", Regions: []string{"DE", "FR"}}},
		{name: "a gap stops the continuation", labels: map[string]string{LabelTag: "eu", LabelRegions: "DE", LabelRegions + ".2": "FR"}, ok: true, want: Set{Tag: "eu", Regions: []string{"DE"}}},
		{name: "default flag other than true", labels: map[string]string{LabelTag: "eu", LabelDefault: "yes"}, ok: true, want: Set{Tag: "eu"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := DecodeLabels(tc.labels)
			if ok != tc.ok || (err != nil) != tc.bad {
				t.Fatalf("DecodeLabels = %+v, ok=%v, err=%v", got, ok, err)
			}
			if !tc.bad && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("DecodeLabels = %+v, want %+v", got, tc.want)
			}
		})
	}
}
