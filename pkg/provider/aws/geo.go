package aws

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Geo sets on Route 53 (docs/providers.md, "Geo on Route 53 and Cloud DNS"). A geo set (one geo tag's
// record set, its regions in pkg/geo's labels) is written as Route 53 geolocation routing: one
// ResourceRecordSet per region, each with the set's records and TTL, its GeoLocation and the
// set identifier "<geo tag>/<region>":
//   - a country "DE": GeoLocation{CountryCode: "DE"};
//   - a continent "continent:EU": GeoLocation{ContinentCode: "EU"};
//   - the default geo tag, besides its regions: GeoLocation{CountryCode: "*"} as "<tag>/*",
//     Route 53's default location (the clients that match no other).
//
// Route 53 matches the most specific location first (subdivision, country, continent, then the
// default), as dnsplane's own rule does. A CIDR region is NotCapable: Route 53's IP-based
// routing needs a CIDR collection and cannot share a name and type with geolocation record
// sets. Listing folds the record sets of one name, type and geo tag back into one geo set.

// geoSep separates the geo tag from the region in a Route 53 set identifier.
const geoSep = "/"

// geoDefaultRegion is the region part of the default location's set identifier.
const geoDefaultRegion = "*"

// isGeoSet: rs carries pkg/geo's labels.
func isGeoSet(rs provider.RecordSet) bool {
	_, ok := rs.ProviderSpecific[geo.LabelTag]
	return ok
}

// validateGeo checks a geo set for Route 53: its labels decode, its set identifier is its geo
// tag, it has no weight, no region is a CIDR, and each Route 53 set identifier fits 128
// characters. It returns the decoded set.
func validateGeo(rs provider.RecordSet) (geo.Set, error) {
	set, _, err := geo.DecodeLabels(rs.ProviderSpecific)
	if err != nil {
		return geo.Set{}, fmt.Errorf("%w: %s: %w", provider.ErrInvalidChange, rs.Key(), err)
	}
	for k := range rs.ProviderSpecific {
		if !strings.HasPrefix(k, "dnsplane.io/geo-") {
			return geo.Set{}, fmt.Errorf("%w: %s: providerSpecific %q beside geo routing", provider.ErrNotCapable, rs.Key(), k)
		}
	}
	switch {
	case rs.SetIdentifier != set.Tag:
		return geo.Set{}, fmt.Errorf("%w: %s: a geo set's set identifier must be its geo tag %q", provider.ErrInvalidChange, rs.Key(), set.Tag)
	case rs.Weight != nil:
		return geo.Set{}, fmt.Errorf("%w: %s: a geo set has no weight", provider.ErrInvalidChange, rs.Key())
	case len(set.Regions) == 0 && !set.Default:
		return geo.Set{}, fmt.Errorf("%w: %s: a geo set without regions", provider.ErrInvalidChange, rs.Key())
	}
	for _, key := range set.Regions {
		r, _ := geo.ParseRegion(key) // DecodeLabels checked it
		if r.Kind == geo.KindCIDR {
			return geo.Set{}, fmt.Errorf("%w: %s: region %s: Route 53 routes by CIDR only through a CIDR collection, which cannot share a name with geolocation record sets", provider.ErrNotCapable, rs.Key(), key)
		}
		if len(set.Tag)+len(geoSep)+len(key) > 128 {
			return geo.Set{}, fmt.Errorf("%w: %s: set identifier %s%s%s longer than 128 characters", provider.ErrInvalidChange, rs.Key(), set.Tag, geoSep, key)
		}
	}
	return set, nil
}

// geoRRs returns the Route 53 geolocation record sets of the geo set rs (validated), sorted by
// set identifier.
func geoRRs(rs provider.RecordSet) []*types.ResourceRecordSet {
	set, _, _ := geo.DecodeLabels(rs.ProviderSpecific)
	regions := slices.Clone(set.Regions)
	if set.Default {
		regions = append(regions, geoDefaultRegion)
	}
	plain := rs
	plain.SetIdentifier, plain.ProviderSpecific, plain.Weight = "", nil, nil
	var out []*types.ResourceRecordSet
	for _, key := range regions {
		rr := toRR(plain, "")
		rr.SetIdentifier = aws.String(set.Tag + geoSep + key)
		loc := &types.GeoLocation{}
		switch r, _ := geo.ParseRegion(key); {
		case key == geoDefaultRegion:
			loc.CountryCode = aws.String("*")
		case r.Kind == geo.KindContinent:
			loc.ContinentCode = aws.String(r.Code)
		default:
			loc.CountryCode = aws.String(r.Code)
		}
		rr.GeoLocation = loc
		out = append(out, rr)
	}
	slices.SortFunc(out, func(a, b *types.ResourceRecordSet) int { return cmp.Compare(*a.SetIdentifier, *b.SetIdentifier) })
	return out
}

// geoRegionOf returns the region key of a listed geolocation record set, and its geo tag,
// from its set identifier and location; false when the set is not one geoRRs writes.
func geoRegionOf(rr types.ResourceRecordSet) (tag, region string, ok bool) {
	g := rr.GeoLocation
	id := aws.ToString(rr.SetIdentifier)
	i := strings.LastIndex(id, geoSep)
	if g == nil || i <= 0 || aws.ToString(g.SubdivisionCode) != "" {
		return "", "", false
	}
	tag, region = id[:i], id[i+len(geoSep):]
	switch {
	case aws.ToString(g.CountryCode) == "*":
		return tag, geoDefaultRegion, region == geoDefaultRegion
	case aws.ToString(g.ContinentCode) != "":
		return tag, geo.ContinentPrefix + aws.ToString(g.ContinentCode), region == geo.ContinentPrefix+aws.ToString(g.ContinentCode)
	case aws.ToString(g.CountryCode) != "":
		return tag, aws.ToString(g.CountryCode), region == aws.ToString(g.CountryCode)
	}
	return "", "", false
}

// foldGeo folds the listed geolocation record sets that geoRRs wrote (converted by fromRR,
// in the order listed) into one geo set per name, type and geo tag, labelled as written; the
// other sets pass unchanged. A group whose members differ in records or TTL is folded with
// the first member's, so that the plan sees a difference and rewrites it.
func foldGeo(raw []types.ResourceRecordSet, conv []provider.RecordSet) []provider.RecordSet {
	type key struct{ name, typ, tag string }
	groups := map[key]*geo.Set{}
	first := map[key]int{}
	var out []provider.RecordSet
	for i, rr := range raw {
		tag, region, ok := geoRegionOf(rr)
		if !ok {
			out = append(out, conv[i])
			continue
		}
		k := key{conv[i].Name, conv[i].Type, tag}
		g := groups[k]
		if g == nil {
			g = &geo.Set{Tag: tag}
			groups[k] = g
			first[k] = len(out)
			rs := conv[i]
			rs.SetIdentifier = tag
			out = append(out, rs)
		} else if !sameTargets(out[first[k]], conv[i]) {
			out[first[k]].Targets = nil // a difference: the plan rewrites the set
		}
		if region == geoDefaultRegion {
			g.Default = true
		} else {
			g.Regions = append(g.Regions, region)
		}
	}
	for k, g := range groups {
		kv, err := geo.EncodeLabels(*g)
		if err != nil {
			continue // cannot be: at most what a geo set held
		}
		ps := map[string]string{}
		for _, p := range kv {
			ps[p[0]] = p[1]
		}
		out[first[k]].ProviderSpecific = ps
	}
	return out
}

func sameTargets(a, b provider.RecordSet) bool {
	x, y := slices.Clone(a.Targets), slices.Clone(b.Targets)
	slices.Sort(x)
	slices.Sort(y)
	return a.TTL == b.TTL && slices.Equal(x, y)
}
