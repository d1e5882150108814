package google

import (
	"fmt"
	"slices"

	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// gcpRegion is one Google Cloud region, where it is: the ISO 3166-1 alpha-2 code of its country
// and the MaxMind continent code of that country (as GeoIP2 "continent.code" places it: Israel,
// Qatar and Saudi Arabia in AS).
type gcpRegion struct {
	name, country, continent string
}

// gcpRegions are the Google Cloud regions a Cloud DNS geo routing policy item may name as its
// location (RRSetRoutingPolicyGeoPolicyGeoPolicyItem.location: "The geo-location granularity is a
// GCP region"), from Google Cloud's region lists (cloud.google.com, "Geography and regions"; the
// product location pages list the same names: Compute Engine regions and zones, BigQuery
// locations, Infrastructure Manager locations, Vertex AI's regional endpoints for
// africa-south1), as of 2026-12. Sorted by name. A region Google adds later is simply not used:
// the clients nearest to it get the nearest listed item.
var gcpRegions = [...]gcpRegion{
	{"africa-south1", "ZA", "AF"},           // Johannesburg
	{"asia-east1", "TW", "AS"},              // Changhua County
	{"asia-east2", "HK", "AS"},              // Hong Kong
	{"asia-northeast1", "JP", "AS"},         // Tokyo
	{"asia-northeast2", "JP", "AS"},         // Osaka
	{"asia-northeast3", "KR", "AS"},         // Seoul
	{"asia-south1", "IN", "AS"},             // Mumbai
	{"asia-south2", "IN", "AS"},             // Delhi
	{"asia-southeast1", "SG", "AS"},         // Singapore
	{"asia-southeast2", "ID", "AS"},         // Jakarta
	{"asia-southeast3", "TH", "AS"},         // Bangkok
	{"australia-southeast1", "AU", "OC"},    // Sydney
	{"australia-southeast2", "AU", "OC"},    // Melbourne
	{"europe-central2", "PL", "EU"},         // Warsaw
	{"europe-north1", "FI", "EU"},           // Hamina
	{"europe-north2", "SE", "EU"},           // Stockholm
	{"europe-southwest1", "ES", "EU"},       // Madrid
	{"europe-west1", "BE", "EU"},            // St. Ghislain
	{"europe-west10", "DE", "EU"},           // Berlin
	{"europe-west12", "IT", "EU"},           // Turin
	{"europe-west2", "GB", "EU"},            // London
	{"europe-west3", "DE", "EU"},            // Frankfurt
	{"europe-west4", "NL", "EU"},            // Eemshaven
	{"europe-west6", "CH", "EU"},            // Zurich
	{"europe-west8", "IT", "EU"},            // Milan
	{"europe-west9", "FR", "EU"},            // Paris
	{"me-central1", "QA", "AS"},             // Doha
	{"me-central2", "SA", "AS"},             // Dammam
	{"me-west1", "IL", "AS"},                // Tel Aviv
	{"northamerica-northeast1", "CA", "NA"}, // Montréal
	{"northamerica-northeast2", "CA", "NA"}, // Toronto
	{"northamerica-south1", "MX", "NA"},     // Querétaro
	{"southamerica-east1", "BR", "SA"},      // São Paulo
	{"southamerica-west1", "CL", "SA"},      // Santiago
	{"us-central1", "US", "NA"},             // Council Bluffs, Iowa
	{"us-east1", "US", "NA"},                // Moncks Corner, South Carolina
	{"us-east4", "US", "NA"},                // Ashburn, Virginia
	{"us-east5", "US", "NA"},                // Columbus, Ohio
	{"us-south1", "US", "NA"},               // Dallas
	{"us-west1", "US", "NA"},                // The Dalles, Oregon
	{"us-west2", "US", "NA"},                // Los Angeles
	{"us-west3", "US", "NA"},                // Salt Lake City
	{"us-west4", "US", "NA"},                // Las Vegas
}

// geoTag is one geo tag's part of a name and type's Cloud DNS geo routing policy.
type geoTag struct {
	set     geo.Set // the tag, its region keys (sorted) and whether it is the default
	ttl     int64
	targets []string // canonical (provider.CanonicalTarget), sorted
}

// geoLocations maps the geo tags of one name and type to Cloud DNS geo items: location (a Google
// Cloud region) -> geo tag. Each region of gcpRegions goes to the tag dnsplane's own rule would
// give a client standing there (docs/providers.md, "Geo on Route 53 and Cloud DNS"): the tag of its country's region
// key, else of its continent's, else the default tag, else none. So a country key takes every
// region in that country, a continent key every region of the continent that no country key
// takes, and the default every region left (the emulation of a default: Cloud DNS answers a
// client from the item of its nearest region, so only a region left without an item would
// send its clients to a neighbour's tag).
//
// Errors (wrapping provider.ErrNotCapable unless said): a CIDR region key (Cloud DNS locates
// clients by Google Cloud region only); a country with no Google Cloud region, or a continent
// with none (AN), since no location stands for its clients; a tag other than the default that
// gets no location (every region of its keys is taken by a more specific key of another tag);
// ErrInvalidChange for a region key in two tags, or two default tags.
func geoLocations(tags []geo.Set) (map[string]string, error) {
	countries, continents := map[string]bool{}, map[string]bool{}
	for _, r := range gcpRegions {
		countries[r.country], continents[r.continent] = true, true
	}
	byCountry, byContinent := map[string]string{}, map[string]string{}
	owner := map[string]string{} // region key -> tag
	dflt := ""
	for _, t := range tags {
		if t.Default {
			if dflt != "" {
				return nil, fmt.Errorf("%w: geo tags %q and %q are both the default", provider.ErrInvalidChange, dflt, t.Tag)
			}
			dflt = t.Tag
		}
		for _, key := range t.Regions {
			if prev, dup := owner[key]; dup {
				return nil, fmt.Errorf("%w: region %s is in geo tags %q and %q", provider.ErrInvalidChange, key, prev, t.Tag)
			}
			owner[key] = t.Tag
			r, err := geo.ParseRegion(key)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", provider.ErrInvalidChange, err)
			}
			switch r.Kind {
			case geo.KindCIDR:
				return nil, fmt.Errorf("%w: region %s of geo tag %q: Cloud DNS geo routing locates clients by Google Cloud region, not by CIDR", provider.ErrNotCapable, key, t.Tag)
			case geo.KindCountry:
				if !countries[r.Code] {
					return nil, fmt.Errorf("%w: region %s of geo tag %q: Cloud DNS geo routing answers by Google Cloud region, and %s has none (its clients get the nearest region's answer)", provider.ErrNotCapable, key, t.Tag, r.Code)
				}
				byCountry[r.Code] = t.Tag
			case geo.KindContinent:
				if !continents[r.Code] {
					return nil, fmt.Errorf("%w: region %s of geo tag %q: Cloud DNS geo routing answers by Google Cloud region, and continent %s has none", provider.ErrNotCapable, key, t.Tag, r.Code)
				}
				byContinent[r.Code] = t.Tag
			}
		}
	}
	out := map[string]string{}
	used := map[string]bool{}
	for _, r := range gcpRegions {
		tag, ok := byCountry[r.country]
		if !ok {
			tag, ok = byContinent[r.continent]
		}
		if !ok && dflt != "" {
			tag, ok = dflt, true
		}
		if ok {
			out[r.name] = tag
			used[tag] = true
		}
	}
	for _, t := range tags {
		if !used[t.Tag] && !t.Default {
			return nil, fmt.Errorf("%w: geo tag %q would answer no Cloud DNS location: every Google Cloud region of its regions %v is taken by a country of another geo tag", provider.ErrNotCapable, t.Tag, t.Regions)
		}
	}
	return out, nil
}

// checkRegions reports the first region key of s that no Cloud DNS location can stand for
// (geoLocations' NotCapable errors that one set shows alone).
func checkRegions(s geo.Set) error {
	_, err := geoLocations([]geo.Set{{Tag: s.Tag, Regions: s.Regions, Default: true}})
	return err
}

// sortedLocations returns the locations of m sorted.
func sortedLocations(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for loc := range m {
		out = append(out, loc)
	}
	slices.Sort(out)
	return out
}
