package gslb

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/dnsplane/dnsplane/pkg/geo"
)

// Strategy types, equal to the API's spec.strategy.type values.
const (
	// RoundRobin serves every healthy target of every geo tag (the embedded server rotates
	// their order per query).
	RoundRobin = "roundRobin"
	// Failover serves the primary geo tag's healthy targets while it has any, else every other
	// geo tag's.
	Failover = "failover"
	// Weighted serves one record set per geo tag, chosen per query by weight.
	Weighted = "weighted"
	// Geo serves one record set per geo tag, chosen per query by the client's region
	// (docs/design.md, "Geo answers (issue 34)").
	Geo = "geo"
)

// Answer is what <host> should serve.
type Answer struct {
	// Targets for roundRobin and failover: one record set (A and AAAA targets together,
	// sorted, deduplicated). Empty (nil) when no geo tag has healthy targets.
	Targets []string
	// Weighted: one record set per geo tag with targets, SetIdentifier = geo tag, with its
	// weight; sorted by geo tag. Empty (nil) for the other strategies, or when no geo tag
	// has both targets and a weight > 0.
	Weighted []WeightedSet
	// Geo: one record set per geo tag that geoRegions or defaultGeoTag names, with the
	// targets its clients get after the fallback order (geo.Resolve); sorted by geo tag. Empty
	// (nil) for the other strategies, or when no geo tag has healthy targets.
	Geo []GeoSet
}

// GeoSet is one geo tag's record set under the geo strategy.
type GeoSet struct {
	// GeoTag is the set's identifier.
	GeoTag string
	// Regions are the geoRegions keys that map to GeoTag, sorted.
	Regions []string
	// Default: GeoTag is the defaultGeoTag.
	Default bool
	// Targets are what GeoTag's clients get: its own healthy targets, else the default's,
	// else every other tag's (geo.Resolve); sorted, deduplicated, never empty.
	Targets []string
}

// Strategy is spec.strategy, as Compute reads it.
type Strategy struct {
	// Type is RoundRobin, Failover, Weighted or Geo.
	Type string
	// PrimaryGeoTag is failover's primary.
	PrimaryGeoTag string
	// Weights are weighted's, by geo tag.
	Weights map[string]int32
	// GeoRegions (region key -> geo tag) and DefaultGeoTag are geo's.
	GeoRegions    map[string]string
	DefaultGeoTag string
}

// Compute is Compute(s.Type, ...) for every strategy, geo included: geo answers with a GeoSet
// per geo tag of s.GeoRegions and s.DefaultGeoTag (geo.Tags), each with its regions and the
// targets of geo.Resolve over the healthy targets; none when no tag has a healthy target. An
// empty DefaultGeoTag or an invalid region key (geo.ParseRegion) is an error.
func (s Strategy) Compute(targets map[string][]string) (Answer, error) {
	if s.Type != Geo {
		return Compute(s.Type, s.PrimaryGeoTag, s.Weights, targets)
	}
	if s.DefaultGeoTag == "" {
		return Answer{}, fmt.Errorf("gslb strategy %s: no default geo tag", Geo)
	}
	regionsOf := map[string][]string{}
	for key, tag := range s.GeoRegions {
		if _, err := geo.ParseRegion(key); err != nil {
			return Answer{}, fmt.Errorf("gslb strategy %s: %w", Geo, err)
		}
		if tag == "" {
			return Answer{}, fmt.Errorf("gslb strategy %s: region %s has an empty geo tag", Geo, key)
		}
		regionsOf[tag] = append(regionsOf[tag], key)
	}
	healthy := map[string][]string{}
	for tag, ts := range targets {
		if ts = sortTargets(ts); len(ts) > 0 {
			healthy[tag] = ts
		}
	}
	if len(healthy) == 0 {
		return Answer{}, nil
	}
	resolved := geo.Resolve(s.GeoRegions, s.DefaultGeoTag, healthy)
	var sets []GeoSet
	for _, tag := range geo.Tags(s.GeoRegions, s.DefaultGeoTag) {
		regions := regionsOf[tag]
		slices.Sort(regions)
		sets = append(sets, GeoSet{GeoTag: tag, Regions: regions, Default: tag == s.DefaultGeoTag, Targets: sortTargets(resolved[tag])})
	}
	return Answer{Geo: sets}, nil
}

// WeightedSet is one geo tag's record set under the weighted strategy.
type WeightedSet struct {
	// GeoTag is the set's identifier (external-dns SetIdentifier).
	GeoTag string
	// Weight is the geo tag's weight from spec.strategy.weights, > 0; relative to the sum of
	// the weights of the sets served.
	Weight int64
	// Targets are the geo tag's healthy targets, sorted, deduplicated, never empty.
	Targets []string
}

// Compute returns the strategy's answer over healthy targets by geo tag: this cluster's and
// every peer's (a silent peer simply has no entry or an empty one). Targets are addresses as
// strings; IP addresses are canonicalised (netip), and every set is sorted (IPv4 before IPv6,
// by address; anything that is not an IP after, by string) and deduplicated.
//
//   - roundRobin: the sorted union of all geo tags' targets.
//   - failover: the targets of primaryGeoTag while it has any, else the sorted union of all
//     other geo tags' targets. An empty primaryGeoTag is an error.
//   - weighted: a WeightedSet for each geo tag that has targets and a weight > 0 in weights,
//     sorted by geo tag. A geo tag missing from weights has weight 0 and, like one with weight
//     0 (or negative), is left out; weights of geo tags without targets are ignored.
//
// primaryGeoTag is used only by failover, weights only by weighted. An unknown strategy is an
// error.
func Compute(strategy, primaryGeoTag string, weights map[string]int32, targets map[string][]string) (Answer, error) {
	switch strategy {
	case RoundRobin:
		var all []string
		for _, ts := range targets {
			all = append(all, ts...)
		}
		return Answer{Targets: sortTargets(all)}, nil
	case Failover:
		if primaryGeoTag == "" {
			return Answer{}, fmt.Errorf("gslb strategy %s: no primary geo tag", Failover)
		}
		if primary := sortTargets(targets[primaryGeoTag]); len(primary) > 0 {
			return Answer{Targets: primary}, nil
		}
		var others []string
		for tag, ts := range targets {
			if tag != primaryGeoTag {
				others = append(others, ts...)
			}
		}
		return Answer{Targets: sortTargets(others)}, nil
	case Weighted:
		var sets []WeightedSet
		for tag, ts := range targets {
			w := weights[tag]
			ts = sortTargets(ts)
			if w <= 0 || len(ts) == 0 {
				continue
			}
			sets = append(sets, WeightedSet{GeoTag: tag, Weight: int64(w), Targets: ts})
		}
		slices.SortFunc(sets, func(a, b WeightedSet) int { return strings.Compare(a.GeoTag, b.GeoTag) })
		return Answer{Weighted: sets}, nil
	default:
		return Answer{}, fmt.Errorf("unknown gslb strategy %q (want %s, %s, %s or %s)", strategy, RoundRobin, Failover, Weighted, Geo)
	}
}

// sortTargets returns a new slice of ts, canonicalised, sorted and deduplicated, or nil when
// ts has no non-empty target. IP addresses come first, in netip.Addr order (IPv4 before IPv6,
// numerically); other strings after, in string order.
func sortTargets(ts []string) []string {
	type target struct {
		addr netip.Addr // zero when s is not an IP address
		s    string
	}
	list := make([]target, 0, len(ts))
	for _, s := range ts {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		t := target{s: s}
		if a, err := netip.ParseAddr(s); err == nil {
			t = target{addr: a, s: a.String()}
		}
		list = append(list, t)
	}
	if len(list) == 0 {
		return nil
	}
	slices.SortFunc(list, func(a, b target) int {
		switch {
		case a.addr.IsValid() && b.addr.IsValid():
			return a.addr.Compare(b.addr)
		case a.addr.IsValid():
			return -1
		case b.addr.IsValid():
			return 1
		}
		return strings.Compare(a.s, b.s)
	})
	out := make([]string, 0, len(list))
	for i, t := range list {
		if i > 0 && t.s == list[i-1].s {
			continue
		}
		out = append(out, t.s)
	}
	return out
}
