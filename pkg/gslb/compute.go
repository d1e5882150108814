package gslb

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
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
		return Answer{}, fmt.Errorf("unknown gslb strategy %q (want %s, %s or %s)", strategy, RoundRobin, Failover, Weighted)
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
