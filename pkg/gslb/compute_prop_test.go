package gslb_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// propInput is one generated input of Compute.
type propInput struct {
	targets map[string][]string
	s       gslb.Strategy
}

func (in propInput) String() string {
	return fmt.Sprintf("targets=%v primary=%q weights=%v regions=%v default=%q",
		in.targets, in.s.PrimaryGeoTag, in.s.Weights, in.s.GeoRegions, in.s.DefaultGeoTag)
}

// genInput draws targets of both families (shared between tags at times, with blanks), weights
// that are missing, 0, negative or positive, and geo regions and a default that may name tags
// without targets.
func genInput(rng *rand.Rand) propInput {
	tags := []string{"ap", "eu", "sa", "us", "zz"}
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	addrs := []string{"192.0.2.1", "192.0.2.2", "198.51.100.1", "203.0.113.7", "10.0.0.1",
		"2001:db8::1", "2001:DB8::2", "2001:db8::a", "fd00::1", "2001:db8:1::1", " ", ""}
	in := propInput{targets: map[string][]string{}, s: gslb.Strategy{Weights: map[string]int32{}, GeoRegions: map[string]string{}}}
	for _, tag := range tags {
		if rng.IntN(4) == 0 {
			continue // a silent tag
		}
		var ts []string
		for range rng.IntN(4) {
			ts = append(ts, pick(addrs))
		}
		in.targets[tag] = ts
		switch rng.IntN(4) {
		case 0: // missing from weights
		case 1:
			in.s.Weights[tag] = 0
		case 2:
			in.s.Weights[tag] = -rng.Int32N(5)
		default:
			in.s.Weights[tag] = 1 + rng.Int32N(100)
		}
	}
	named := append(slices.Clone(tags), "mars") // mars never has targets
	for _, region := range []string{"DE", "FR", "US", "JP", "BR", "continent:OC", "192.0.2.0/24"} {
		if rng.IntN(2) == 0 {
			in.s.GeoRegions[region] = pick(named)
		}
	}
	in.s.DefaultGeoTag, in.s.PrimaryGeoTag = pick(named), pick(named)
	return in
}

// family is 4, 6 or 0 (not an address) for a canonical target.
func family(t string) int {
	a, err := netip.ParseAddr(t)
	switch {
	case err != nil:
		return 0
	case a.Is4():
		return 4
	}
	return 6
}

// ofFamily returns the canonical, sorted, unique targets of ts in family f.
func ofFamily(ts []string, f int) []string {
	var out []string
	for _, t := range ts {
		a, err := netip.ParseAddr(t)
		if err == nil && family(a.String()) == f {
			out = append(out, a.String())
		}
	}
	slices.SortFunc(out, func(a, b string) int { return netip.MustParseAddr(a).Compare(netip.MustParseAddr(b)) })
	return slices.Compact(out)
}

// TestCompute_NeverEmptyPerFamily is the property "a family that has a candidate is never
// answered empty", per strategy and family, over generated inputs (a seeded generator: a
// failure names the run's seed and input), with what each strategy may serve for a family:
// failover the primary's targets of the family while it has some; weighted only a tag's own
// targets, under its weight when some tag with a weight > 0 has targets of the family; geo, for
// every tag, one tag's targets of the family (its own, else the default's, else one other
// tag's), never a union of several.
func TestCompute_NeverEmptyPerFamily(t *testing.T) {
	const runs = 4000
	for i := range runs {
		rng := rand.New(rand.NewPCG(48, uint64(i)))
		in := genInput(rng)
		for _, typ := range []string{gslb.RoundRobin, gslb.Failover, gslb.Weighted, gslb.Geo} {
			s := in.s
			s.Type = typ
			ans, err := s.Compute(in.targets)
			if err != nil {
				t.Fatalf("run %d (seed 48,%d) %s: %v\ninput: %v", i, i, typ, err, in)
			}
			for _, f := range []int{4, 6} {
				if why := checkFamily(in, typ, f, ans); why != "" {
					t.Fatalf("run %d (seed 48,%d) %s IPv%d: %s\ninput:  %v\nanswer: %+v", i, i, typ, f, why, in, ans)
				}
			}
		}
	}
}

// checkFamily returns why ans breaks the property for family f, or "".
func checkFamily(in propInput, typ string, f int, ans gslb.Answer) string {
	cands := map[string][]string{}
	var all []string
	for tag, ts := range in.targets {
		if c := ofFamily(ts, f); len(c) > 0 {
			cands[tag] = c
			all = append(all, c...)
		}
	}
	all = ofFamily(all, f)
	switch typ {
	case gslb.RoundRobin:
		return sameSet("targets", ofFamily(ans.Targets, f), all)
	case gslb.Failover:
		got := ofFamily(ans.Targets, f)
		if p := cands[in.s.PrimaryGeoTag]; len(p) > 0 {
			return sameSet("the primary's targets", got, p)
		}
		return sameSet("every other tag's targets", got, all)
	case gslb.Weighted:
		return checkWeighted(in, cands, f, ans.Weighted)
	}
	return checkGeo(in, cands, f, ans.Geo)
}

func checkWeighted(in propInput, cands map[string][]string, f int, sets []gslb.WeightedSet) string {
	anyWeight := false
	for tag := range cands {
		anyWeight = anyWeight || in.s.Weights[tag] > 0
	}
	served := 0
	for _, ws := range sets {
		got := ofFamily(ws.Targets, f)
		if len(got) == 0 {
			continue
		}
		served++
		if ws.Weight <= 0 {
			return fmt.Sprintf("set %s has weight %d", ws.GeoTag, ws.Weight)
		}
		if anyWeight && int64(in.s.Weights[ws.GeoTag]) != ws.Weight {
			return fmt.Sprintf("set %s has weight %d, its weight is %d", ws.GeoTag, ws.Weight, in.s.Weights[ws.GeoTag])
		}
		if why := sameSet("set "+ws.GeoTag, got, cands[ws.GeoTag]); why != "" {
			return why
		}
	}
	if len(cands) > 0 && served == 0 {
		return "no weighted set serves the family, which has candidates"
	}
	return ""
}

func checkGeo(in propInput, cands map[string][]string, f int, sets []gslb.GeoSet) string {
	for _, gs := range sets {
		got := ofFamily(gs.Targets, f)
		if len(cands) == 0 {
			if len(got) > 0 {
				return fmt.Sprintf("set %s serves %v without candidates", gs.GeoTag, got)
			}
			continue
		}
		if len(got) == 0 {
			return fmt.Sprintf("set %s is empty in a family with candidates", gs.GeoTag)
		}
		want, ok := cands[gs.GeoTag]
		if !ok {
			want, ok = cands[in.s.DefaultGeoTag]
		}
		if !ok {
			for _, other := range cands {
				if slices.Equal(got, other) {
					want, ok = other, true
				}
			}
			if !ok {
				return fmt.Sprintf("set %s serves %v, no single tag's targets", gs.GeoTag, got)
			}
		}
		if why := sameSet("set "+gs.GeoTag, got, want); why != "" {
			return why
		}
	}
	if len(cands) > 0 && len(sets) == 0 {
		return "no geo set, with candidates"
	}
	return ""
}

func sameSet(what string, got, want []string) string {
	if !slices.Equal(got, want) {
		return fmt.Sprintf("%s: served %v, want %v", what, got, want)
	}
	return ""
}
