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
	// (docs/design.md, "Geo answers").
	Geo = "geo"
)

// Answer is what <host> should serve. Every strategy decides each address family (IPv4,
// IPv6, and names that are no IP address) on its own, over that family's targets alone: a
// family with a target is never left out of the answer, and one family's fallback never pulls
// in another's.
type Answer struct {
	// Targets for roundRobin and failover: one record set (A and AAAA targets together,
	// sorted, deduplicated). Empty (nil) only when no geo tag has a target.
	Targets []string
	// Weighted: one record set per geo tag that serves a family, SetIdentifier = geo tag, with
	// its weight; sorted by geo tag. Empty (nil) for the other strategies, or when no geo tag
	// has a target.
	Weighted []WeightedSet
	// Geo: one record set per geo tag that geoRegions or defaultGeoTag names, with the
	// targets its clients get after the fallback order (geo.Resolve, per family); sorted by
	// geo tag. Empty (nil) for the other strategies, or when no geo tag has a target.
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
	// Targets are what GeoTag's clients get, per family: its own targets of the family, else
	// the default's, else those of the first geo tag (in geo tag order) that has some (geo.Resolve);
	// sorted, deduplicated, never empty.
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
// per geo tag of s.GeoRegions and s.DefaultGeoTag (geo.Tags), each with its regions and, per
// family, the targets of geo.Resolve over that family's targets; none when no tag has a
// target. An empty DefaultGeoTag or an invalid region key (geo.ParseRegion) is an error.
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
	served := map[string][]string{}
	for _, fam := range byFamily(targets) {
		if len(fam) == 0 {
			continue
		}
		for tag, ts := range geo.Resolve(s.GeoRegions, s.DefaultGeoTag, fam) {
			served[tag] = append(served[tag], ts...)
		}
	}
	if len(served) == 0 {
		return Answer{}, nil
	}
	var sets []GeoSet
	for _, tag := range geo.Tags(s.GeoRegions, s.DefaultGeoTag) {
		regions := regionsOf[tag]
		slices.Sort(regions)
		sets = append(sets, GeoSet{GeoTag: tag, Regions: regions, Default: tag == s.DefaultGeoTag, Targets: sortTargets(served[tag])})
	}
	return Answer{Geo: sets}, nil
}

// WeightedSet is one geo tag's record set under the weighted strategy.
type WeightedSet struct {
	// GeoTag is the set's identifier (external-dns SetIdentifier).
	GeoTag string
	// Weight is the geo tag's weight from spec.strategy.weights, or 1 for a geo tag served
	// without a weight > 0 (see Compute); > 0, relative to the sum of the weights of the sets
	// of the asked family.
	Weight int64
	// Targets are the geo tag's targets that it serves, sorted, deduplicated, never empty.
	Targets []string
}

// Compute returns the strategy's answer over healthy targets by geo tag: this cluster's and
// every peer's (a silent peer simply has no entry or an empty one). Targets are addresses as
// strings; IP addresses are canonicalised (netip), and every set is sorted (IPv4 before IPv6,
// by address; anything that is not an IP after, by string) and deduplicated. Each family
// (IPv4, IPv6, other) is decided on its own, so a family with a target is always served:
//
//   - roundRobin: the sorted union of all geo tags' targets.
//   - failover: per family, the primaryGeoTag's targets of the family while it has any, else
//     the union of every other geo tag's targets of the family. An empty primaryGeoTag is an
//     error.
//   - weighted: per family, the geo tags that have targets of the family and a weight > 0
//     (a geo tag missing from weights has weight 0); when no such tag has one, every geo tag
//     with targets of the family, each with weight 1 (an even split). A WeightedSet per geo tag
//     holds the targets of every family it serves, sorted by geo tag. A tag served under its
//     weight in one family is never the fallback of another (a fallback family has no tag
//     with a weight > 0), so a set's one weight holds for each of its families.
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
		var all []string
		for _, fam := range byFamily(targets) {
			all = append(all, failover(primaryGeoTag, fam)...)
		}
		return Answer{Targets: sortTargets(all)}, nil
	case Weighted:
		return Answer{Weighted: weighted(weights, targets)}, nil
	default:
		return Answer{}, fmt.Errorf("unknown gslb strategy %q (want %s, %s, %s or %s)", strategy, RoundRobin, Failover, Weighted, Geo)
	}
}

// failover returns, of fam (one family's targets by geo tag), the primary's targets while it
// has any, else every other geo tag's.
func failover(primary string, fam map[string][]string) []string {
	if ts := fam[primary]; len(ts) > 0 {
		return ts
	}
	var others []string
	for _, ts := range fam {
		others = append(others, ts...)
	}
	return others
}

// weighted returns the weighted strategy's sets (Compute): per family, the geo tags with a
// weight > 0, else every geo tag with weight 1; merged per geo tag, sorted by geo tag.
func weighted(weights map[string]int32, targets map[string][]string) []WeightedSet {
	byTag := map[string]*WeightedSet{}
	for _, fam := range byFamily(targets) {
		anyWeight := false
		for tag := range fam {
			anyWeight = anyWeight || weights[tag] > 0
		}
		for tag, ts := range fam {
			w := int64(weights[tag])
			switch {
			case !anyWeight:
				w = 1
			case w <= 0:
				continue
			}
			if byTag[tag] == nil {
				byTag[tag] = &WeightedSet{GeoTag: tag, Weight: w}
			}
			byTag[tag].Targets = append(byTag[tag].Targets, ts...)
		}
	}
	var sets []WeightedSet
	for _, ws := range byTag {
		ws.Targets = sortTargets(ws.Targets)
		sets = append(sets, *ws)
	}
	slices.SortFunc(sets, func(a, b WeightedSet) int { return strings.Compare(a.GeoTag, b.GeoTag) })
	return sets
}

// Target families, for byFamily.
const (
	familyIPv4 = iota
	familyIPv6
	familyOther // a target that is no IP address
	families
)

// byFamily splits targets (geo tag -> targets) by family: for each family, the geo tags with
// targets of that family, each with them canonicalised, sorted and deduplicated
// (sortTargets). A geo tag without a target of a family has no entry in that family's map.
func byFamily(targets map[string][]string) [families]map[string][]string {
	var out [families]map[string][]string
	for f := range out {
		out[f] = map[string][]string{}
	}
	for tag, ts := range targets {
		for _, t := range sortTargets(ts) {
			f := familyOther
			if a, err := netip.ParseAddr(t); err == nil {
				f = familyIPv6
				if a.Is4() {
					f = familyIPv4
				}
			}
			out[f][tag] = append(out[f][tag], t)
		}
	}
	return out
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

// AllTargets returns every target a serves: its plain, weighted and geo sets' targets together,
// sorted and deduplicated.
func (a Answer) AllTargets() []string {
	out := slices.Clone(a.Targets)
	for _, ws := range a.Weighted {
		out = append(out, ws.Targets...)
	}
	for _, gs := range a.Geo {
		out = append(out, gs.Targets...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
