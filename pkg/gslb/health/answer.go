package health

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// answer computes res's per-family answers from res.Targets: for each family, the strategy over
// the family's Up candidates by geo tag, or over all of the family's candidates when none is Up
// (NoHealthyTargetsA / NoHealthyTargetsAAAA); then marks the served targets.
func answer(in Input, res *Result) error {
	decided := map[netip.Addr]Verdict{}
	for _, d := range res.Targets {
		decided[d.Target] = d.Decision
	}
	witness := witnesses(in)
	st := gslb.Strategy{Type: in.Strategy, PrimaryGeoTag: in.PrimaryGeoTag, Weights: in.Weights,
		GeoRegions: in.GeoRegions, DefaultGeoTag: in.DefaultGeoTag}
	for _, v4 := range []bool{true, false} {
		up, all := map[string][]string{}, map[string][]string{}
		for geo, ts := range in.Candidates {
			if witness[geo] {
				continue
			}
			for _, a := range ts {
				v, ok := decided[a]
				if !ok || a.Is4() != v4 {
					continue
				}
				all[geo] = append(all[geo], a.String())
				if v == Up {
					up[geo] = append(up[geo], a.String())
				}
			}
		}
		none := len(all) > 0 && len(up) == 0
		if none {
			up = all
		}
		ans, err := st.Compute(up) // never empty for a family with a target (gslb.Strategy.Compute)
		if err != nil {
			return err
		}
		if v4 {
			res.AnswerA, res.NoHealthyTargetsA = ans, none
		} else {
			res.AnswerAAAA, res.NoHealthyTargetsAAAA = ans, none
		}
	}
	markServed(res)
	return nil
}

// servedSet returns every target ans serves (plain, weighted or geo).
func servedSet(ans gslb.Answer) map[string]bool {
	served := map[string]bool{}
	for _, t := range ans.AllTargets() {
		served[t] = true
	}
	return served
}

// markServed sets Served on each of res.Targets that its family's answer serves, and lists
// them in res.ServedA and res.ServedAAAA.
func markServed(res *Result) {
	a, aaaa := servedSet(res.AnswerA), servedSet(res.AnswerAAAA)
	for i := range res.Targets {
		t := &res.Targets[i]
		s := t.Target.String()
		switch {
		case t.Target.Is4() && a[s]:
			t.Served = true
			res.ServedA = append(res.ServedA, s)
		case !t.Target.Is4() && aaaa[s]:
			t.Served = true
			res.ServedAAAA = append(res.ServedAAAA, s)
		}
	}
}

// mergeAnswers joins an IPv4 and an IPv6 answer into one: plain targets concatenated (IPv4
// first, so still sorted); weighted and geo sets joined by geo tag (the higher weight, the
// union of regions and targets), sorted by geo tag.
func mergeAnswers(a4, a6 gslb.Answer) gslb.Answer {
	var out gslb.Answer
	if ts := append(slices.Clone(a4.Targets), a6.Targets...); len(ts) > 0 {
		out.Targets = ts
	}
	for _, w := range append(slices.Clone(a4.Weighted), a6.Weighted...) {
		i := slices.IndexFunc(out.Weighted, func(x gslb.WeightedSet) bool { return x.GeoTag == w.GeoTag })
		if i < 0 {
			out.Weighted = append(out.Weighted, gslb.WeightedSet{GeoTag: w.GeoTag, Weight: w.Weight, Targets: slices.Clone(w.Targets)})
			continue
		}
		out.Weighted[i].Weight = max(out.Weighted[i].Weight, w.Weight)
		out.Weighted[i].Targets = append(out.Weighted[i].Targets, w.Targets...)
	}
	for _, g := range append(slices.Clone(a4.Geo), a6.Geo...) {
		i := slices.IndexFunc(out.Geo, func(x gslb.GeoSet) bool { return x.GeoTag == g.GeoTag })
		if i < 0 {
			out.Geo = append(out.Geo, gslb.GeoSet{GeoTag: g.GeoTag, Regions: slices.Clone(g.Regions), Default: g.Default, Targets: slices.Clone(g.Targets)})
			continue
		}
		out.Geo[i].Targets = append(out.Geo[i].Targets, g.Targets...)
		for _, r := range g.Regions {
			if !slices.Contains(out.Geo[i].Regions, r) {
				out.Geo[i].Regions = append(out.Geo[i].Regions, r)
			}
		}
		slices.Sort(out.Geo[i].Regions)
	}
	slices.SortFunc(out.Weighted, func(x, y gslb.WeightedSet) int { return cmp.Compare(x.GeoTag, y.GeoTag) })
	slices.SortFunc(out.Geo, func(x, y gslb.GeoSet) int { return cmp.Compare(x.GeoTag, y.GeoTag) })
	return out
}
