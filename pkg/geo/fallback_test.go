package geo

import (
	"reflect"
	"testing"
)

func TestResolve_FallbackOrder(t *testing.T) {
	regions := map[string]string{"DE": "eu", "continent:NA": "us", "203.0.113.0/24": "ap"}
	for _, tc := range []struct {
		name    string
		healthy map[string][]string
		want    map[string][]string
	}{{
		name:    "every tag healthy: each its own",
		healthy: map[string][]string{"eu": {"192.0.2.2", "192.0.2.1"}, "us": {"198.51.100.1"}, "ap": {"203.0.113.9"}},
		want:    map[string][]string{"eu": {"192.0.2.1", "192.0.2.2"}, "us": {"198.51.100.1"}, "ap": {"203.0.113.9"}},
	}, {
		name:    "us down: the default's",
		healthy: map[string][]string{"eu": {"192.0.2.1"}, "ap": {"203.0.113.9"}},
		want:    map[string][]string{"eu": {"192.0.2.1"}, "us": {"192.0.2.1"}, "ap": {"203.0.113.9"}},
	}, {
		name:    "us down, empty list: the default's",
		healthy: map[string][]string{"eu": {"192.0.2.1"}, "us": {}, "ap": {"203.0.113.9"}},
		want:    map[string][]string{"eu": {"192.0.2.1"}, "us": {"192.0.2.1"}, "ap": {"203.0.113.9"}},
	}, {
		name:    "the default down: the first tag's in tag order, not every tag's together",
		healthy: map[string][]string{"us": {"198.51.100.1"}, "ap": {"203.0.113.9"}},
		want:    map[string][]string{"eu": {"203.0.113.9"}, "us": {"198.51.100.1"}, "ap": {"203.0.113.9"}},
	}, {
		name:    "the default down, the first tag in order empty: the next one's",
		healthy: map[string][]string{"ap": {}, "us": {"198.51.100.1"}, "zz": {"192.0.2.9"}},
		want:    map[string][]string{"eu": {"198.51.100.1"}, "us": {"198.51.100.1"}, "ap": {"198.51.100.1"}},
	}, {
		name:    "default and us down: ap's for both",
		healthy: map[string][]string{"ap": {"203.0.113.9"}},
		want:    map[string][]string{"eu": {"203.0.113.9"}, "us": {"203.0.113.9"}, "ap": {"203.0.113.9"}},
	}, {
		name:    "a healthy tag no region names counts in the last step",
		healthy: map[string][]string{"sa": {"192.0.2.77"}},
		want:    map[string][]string{"eu": {"192.0.2.77"}, "us": {"192.0.2.77"}, "ap": {"192.0.2.77"}},
	}, {
		name:    "shared targets are listed once",
		healthy: map[string][]string{"us": {"192.0.2.1"}, "ap": {"192.0.2.1", "2001:db8::1"}},
		want:    map[string][]string{"eu": {"192.0.2.1", "2001:db8::1"}, "us": {"192.0.2.1"}, "ap": {"192.0.2.1", "2001:db8::1"}},
	}, {
		name:    "nothing healthy: nil for every tag (the caller's never-empty rule)",
		healthy: map[string][]string{},
		want:    map[string][]string{"eu": nil, "us": nil, "ap": nil},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Resolve(regions, "eu", tc.healthy); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Resolve = %v\nwant      %v", got, tc.want)
			}
		})
	}
}

func TestTags(t *testing.T) {
	got := Tags(map[string]string{"DE": "eu", "FR": "eu", "US": "us"}, "ap")
	if want := []string{"ap", "eu", "us"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Tags = %v, want %v", got, want)
	}
	if got := Tags(nil, "eu"); !reflect.DeepEqual(got, []string{"eu"}) {
		t.Fatalf("Tags(nil, eu) = %v", got)
	}
}
