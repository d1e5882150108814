package gslb

import (
	"slices"
	"testing"
)

func TestAnswer_AllTargetsJoinsEverySetSortedOnce(t *testing.T) {
	a := Answer{
		Targets:  []string{"192.0.2.2"},
		Weighted: []WeightedSet{{GeoTag: "eu", Weight: 1, Targets: []string{"192.0.2.1", "2001:db8::1"}}},
		Geo:      []GeoSet{{GeoTag: "us", Targets: []string{"192.0.2.1", "192.0.2.3"}}},
	}
	want := []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "2001:db8::1"}
	if got := a.AllTargets(); !slices.Equal(got, want) {
		t.Fatalf("AllTargets %v, want %v", got, want)
	}
	if got := (Answer{}).AllTargets(); len(got) != 0 {
		t.Fatalf("an empty answer's targets %v", got)
	}
}
