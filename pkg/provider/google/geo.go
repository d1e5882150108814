package google

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	dns "google.golang.org/api/dns/v1"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Geo sets on Cloud DNS (docs/providers.md, "Geo on Route 53 and Cloud DNS"). The geo sets of
// one name and type (one per geo tag, pkg/geo's labels in ProviderSpecific, the tag as set
// identifier) are written as ONE Cloud DNS record set with a geo routing policy
// (ResourceRecordSet.routingPolicy.geo.items[]: a location, a Google Cloud region, and the
// rrdatas answered to the clients Cloud DNS places there; no plain rrdatas), its locations from
// geoLocations, its TTL the smallest of the tags'. Cloud DNS answers each client from the item of
// its location, else from the nearest item: "nearest", not dnsplane's "most specific region".
//
// The items cannot be read back as geo sets (many region keys share a location, and the default
// takes every location left), so beside the set a companion TXT record set, at
// companionName(name, type), holds one value per geo tag (encodeEntry: the tag, its TTL, whether
// it is the default, its region keys and its targets), written and deleted in the same change as
// the set. Listing folds the set and its companion back into the geo sets; a routing-policy set
// without a companion that parses is another owner's and is neither listed nor written.

// companionPrefix starts the first label of a companion's name: "dp-geo-<type>" (lower case),
// which the registry's "dp-<type>-<hash>-<suffix>" never is (no 10-character hash).
const companionPrefix = "dp-geo-"

// companionTTL is the TTL of a companion TXT record set, in seconds.
const companionTTL = 300

// entryVersion starts every companion value.
const entryVersion = "dnsplane-geo/1"

// driftLabel marks the geo sets of a routing-policy set that differs from what its companion
// says (a console edit, a region table that changed): the plan sees sets unlike the desired ones
// and rewrites them whole.
const driftLabel = "dnsplane.io/geo-clouddns-drift"

// geoTypes are the record types written as geo sets here (what a Gslb publishes).
var geoTypes = [...]string{"A", "AAAA", "CNAME"}

// companionName is the owner of the companion TXT of name and rtype: "dp-geo-<type>." before the
// name, or, for a wildcard "*.rest", "dp-geo-<type>-wildcard.rest" (a "*" label may only lead a
// name, RFC 4592 §2.1.1).
func companionName(name, rtype string) string {
	n := dnswire.Dotless(name)
	t := strings.ToLower(rtype)
	if rest, ok := strings.CutPrefix(n, "*."); ok {
		return companionPrefix + t + "-wildcard." + rest
	}
	return companionPrefix + t + "." + n
}

// parseCompanionName is companionName's inverse: false for a name that is no companion name.
func parseCompanionName(n string) (name, rtype string, ok bool) {
	n = dnswire.Dotless(n)
	first, rest, found := strings.Cut(n, ".")
	t, found2 := strings.CutPrefix(first, companionPrefix)
	if !found || !found2 || rest == "" {
		return "", "", false
	}
	if base, wild := strings.CutSuffix(t, "-wildcard"); wild {
		t, rest = base, "*."+rest
	}
	rtype = strings.ToUpper(t)
	if !slices.Contains(geoTypes[:], rtype) {
		return "", "", false
	}
	return rest, rtype, true
}

// encodeEntry is a geo tag's companion value: "dnsplane-geo/1 tag=<tag> ttl=<seconds>
// default=<true|false> regions=<key,...> targets=<target,...>", the tag query-escaped (RFC 3986
// percent-encoding, as net/url's QueryEscape), region keys and targets as written (neither holds
// a comma nor a space).
func encodeEntry(t geoTag) string {
	return fmt.Sprintf("%s tag=%s ttl=%d default=%t regions=%s targets=%s", entryVersion, url.QueryEscape(t.set.Tag), t.ttl,
		t.set.Default, strings.Join(t.set.Regions, ","), strings.Join(t.targets, ","))
}

// parseEntry reads encodeEntry's value for a record type; an error for anything else.
func parseEntry(v, rtype string) (geoTag, error) {
	f := strings.Split(v, " ")
	if len(f) != 6 || f[0] != entryVersion {
		return geoTag{}, fmt.Errorf("not a %s value", entryVersion)
	}
	val := func(i int, k string) (string, error) {
		s, ok := strings.CutPrefix(f[i], k+"=")
		if !ok {
			return "", fmt.Errorf("field %d is not %s=", i, k)
		}
		return s, nil
	}
	var t geoTag
	var vals [5]string
	for i, k := range [...]string{"tag", "ttl", "default", "regions", "targets"} {
		s, err := val(i+1, k)
		if err != nil {
			return geoTag{}, err
		}
		vals[i] = s
	}
	tag, err := url.QueryUnescape(vals[0])
	if err != nil || tag == "" {
		return geoTag{}, fmt.Errorf("bad tag %q", vals[0])
	}
	t.set.Tag = tag
	if t.ttl, err = strconv.ParseInt(vals[1], 10, 64); err != nil || t.ttl < 0 || t.ttl > provider.MaxTTL {
		return geoTag{}, fmt.Errorf("bad ttl %q", vals[1])
	}
	if t.set.Default, err = strconv.ParseBool(vals[2]); err != nil {
		return geoTag{}, fmt.Errorf("bad default %q", vals[2])
	}
	if vals[3] != "" {
		for _, k := range strings.Split(vals[3], ",") {
			if _, err := geo.ParseRegion(k); err != nil {
				return geoTag{}, err
			}
			t.set.Regions = append(t.set.Regions, k)
		}
	}
	slices.Sort(t.set.Regions)
	if vals[4] == "" {
		return geoTag{}, fmt.Errorf("no targets")
	}
	for _, s := range strings.Split(vals[4], ",") {
		c, err := provider.CanonicalTarget(rtype, s)
		if err != nil {
			return geoTag{}, err
		}
		t.targets = append(t.targets, c)
	}
	slices.Sort(t.targets)
	return t, nil
}

// parseCompanion reads a listed companion TXT set's geo tags, sorted by tag; false when any
// value is not encodeEntry's, or a tag repeats (then the set is not ours).
func parseCompanion(rr *dns.ResourceRecordSet, rtype string) ([]geoTag, bool) {
	if rr == nil || len(rr.Rrdatas) == 0 || rr.RoutingPolicy != nil {
		return nil, false
	}
	var tags []geoTag
	for _, v := range rr.Rrdatas {
		t, err := parseEntry(decodeTXT(v), rtype)
		if err != nil {
			return nil, false
		}
		tags = append(tags, t)
	}
	slices.SortFunc(tags, func(a, b geoTag) int { return cmp.Compare(a.set.Tag, b.set.Tag) })
	for i := 1; i < len(tags); i++ {
		if tags[i].set.Tag == tags[i-1].set.Tag {
			return nil, false
		}
	}
	return tags, true
}

// geoTagOf returns the geo tag of a canonical, validated geo set.
func geoTagOf(rs provider.RecordSet) geoTag {
	s, _, _ := geo.DecodeLabels(rs.ProviderSpecific)
	t := geoTag{set: s, ttl: rs.TTL, targets: slices.Clone(rs.Targets)}
	slices.Sort(t.targets)
	return t
}

// buildGeo returns the Cloud DNS record set of name and rtype with the geo routing policy of
// tags (at least one), items sorted by location, and its companion TXT; errors as geoLocations'.
func buildGeo(name, rtype string, tags []geoTag) (set, companion *dns.ResourceRecordSet, err error) {
	tags = slices.Clone(tags)
	slices.SortFunc(tags, func(a, b geoTag) int { return cmp.Compare(a.set.Tag, b.set.Tag) })
	sets := make([]geo.Set, 0, len(tags))
	byTag := map[string]geoTag{}
	ttl := int64(-1)
	for _, t := range tags {
		sets = append(sets, t.set)
		byTag[t.set.Tag] = t
		if ttl < 0 || t.ttl < ttl {
			ttl = t.ttl
		}
	}
	locs, err := geoLocations(sets)
	if err != nil {
		return nil, nil, fmt.Errorf("%s/%s: %w", dnswire.Dotless(name), rtype, err)
	}
	pol := &dns.RRSetRoutingPolicyGeoPolicy{}
	for _, loc := range sortedLocations(locs) {
		item := &dns.RRSetRoutingPolicyGeoPolicyGeoPolicyItem{Location: loc}
		for _, target := range byTag[locs[loc]].targets {
			item.Rrdatas = append(item.Rrdatas, encodeValue(rtype, target))
		}
		pol.Items = append(pol.Items, item)
	}
	set = &dns.ResourceRecordSet{Name: dnswire.Fqdn(name), Type: rtype, Ttl: ttl, ForceSendFields: []string{"Ttl"},
		RoutingPolicy: &dns.RRSetRoutingPolicy{Geo: pol}}
	companion = &dns.ResourceRecordSet{Name: dnswire.Fqdn(companionName(name, rtype)), Type: "TXT", Ttl: companionTTL}
	for _, t := range tags {
		companion.Rrdatas = append(companion.Rrdatas, encodeValue("TXT", encodeEntry(t)))
	}
	return set, companion, nil
}

// samePolicy reports whether the listed routing-policy set a answers as b does: the same TTL,
// and the same geo items (location and records, in any order), nothing else.
func samePolicy(a, b *dns.ResourceRecordSet) bool {
	items := func(rr *dns.ResourceRecordSet) (map[string]string, bool) {
		p := rr.RoutingPolicy
		if p == nil || p.Geo == nil || p.Wrr != nil || p.PrimaryBackup != nil || p.Geo.EnableFencing || len(rr.Rrdatas) > 0 {
			return nil, false
		}
		m := map[string]string{}
		for _, it := range p.Geo.Items {
			if it == nil || it.HealthCheckedTargets != nil {
				return nil, false
			}
			c := fromRR(&dns.ResourceRecordSet{Name: rr.Name, Type: rr.Type, Rrdatas: it.Rrdatas}).Targets
			slices.Sort(c)
			m[it.Location] = strings.Join(c, "\n")
		}
		return m, len(m) == len(p.Geo.Items)
	}
	x, okA := items(a)
	y, okB := items(b)
	if !okA || !okB || a.Ttl != b.Ttl || len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if w, ok := y[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// unfoldGeo returns the geo sets, sorted by tag, of a listed routing-policy set and the geo tags
// its companion holds: each tag's set with its TTL, targets and labels. When the set does not
// answer as the companion says (samePolicy against buildGeo), every set carries driftLabel.
func unfoldGeo(set *dns.ResourceRecordSet, tags []geoTag) []provider.RecordSet {
	name, rtype := dnswire.Dotless(set.Name), strings.ToUpper(set.Type)
	want, _, err := buildGeo(name, rtype, tags)
	drift := err != nil || !samePolicy(set, want)
	out := make([]provider.RecordSet, 0, len(tags))
	for _, t := range tags {
		ps := map[string]string{}
		kv, _ := geo.EncodeLabels(t.set) // at most what a geo set held
		for _, p := range kv {
			ps[p[0]] = p[1]
		}
		if drift {
			ps[driftLabel] = "true"
		}
		out = append(out, provider.RecordSet{Name: name, Type: rtype, TTL: t.ttl, Targets: slices.Clone(t.targets),
			SetIdentifier: t.set.Tag, ProviderSpecific: ps})
	}
	return out
}

// isGeoSet: rs carries pkg/geo's labels.
func isGeoSet(rs provider.RecordSet) bool {
	_, ok := rs.ProviderSpecific[geo.LabelTag]
	return ok
}

// validateGeo is the SideCheck of a geo set: pkg/geo's labels decode; no other provider-specific
// property than theirs (and driftLabel, on a listed set); the set identifier is the geo tag; no
// weight; regions or the default flag; a type of geoTypes; every region key has a Cloud DNS
// location (checkRegions); and the common rules (provider.ValidateChangeSet).
func validateGeo(action provider.Action, zone, which string, rs provider.RecordSet) (provider.RecordSet, error) {
	set, _, err := geo.DecodeLabels(rs.ProviderSpecific)
	if err != nil {
		return rs, fmt.Errorf("%w: %s: %w", provider.ErrInvalidChange, rs.Key(), err)
	}
	for k := range rs.ProviderSpecific {
		if !strings.HasPrefix(k, "dnsplane.io/geo-") {
			return rs, fmt.Errorf("%w: %s: providerSpecific %q beside geo routing", provider.ErrNotCapable, rs.Key(), k)
		}
	}
	switch {
	case rs.SetIdentifier != set.Tag:
		return rs, fmt.Errorf("%w: %s: a geo set's set identifier must be its geo tag %q", provider.ErrInvalidChange, rs.Key(), set.Tag)
	case rs.Weight != nil:
		return rs, fmt.Errorf("%w: %s: a geo set has no weight", provider.ErrInvalidChange, rs.Key())
	case len(set.Regions) == 0 && !set.Default:
		return rs, fmt.Errorf("%w: %s: a geo set without regions", provider.ErrInvalidChange, rs.Key())
	case !slices.Contains(geoTypes[:], strings.ToUpper(rs.Type)):
		return rs, fmt.Errorf("%w: %s: geo routing here is for %v sets", provider.ErrNotCapable, rs.Key(), geoTypes)
	}
	if err := checkRegions(set); err != nil {
		return rs, fmt.Errorf("%s: %w", rs.Key(), err)
	}
	return provider.ValidateChangeSet(action, which, &rs, zone, provider.Capabilities{GeoRouting: true})
}

// RequestCost implements provider.RequestSizer. A plain change costs provider.ChangeCost. A
// change of a geo set replaces the whole routing-policy set of its name and type and the
// companion (applyGeo): at most two deletions and two additions, which Cloud DNS counts as 4
// record sets (at least what it counts against its 1,000 additions and 1,000 deletions); and
// for each side, twice (the deletion of the current set and the addition of the new) the
// side's rrdata bytes on every location of gcpRegions, plus its companion value. That bounds the
// set's bytes when its tags have no more targets than this one (a Gslb's tags hold one target
// per cluster); the other tags are not known here, and a change Cloud DNS refuses for its
// rrdata quota is retried alone by the zone writer.
func (p *Provider) RequestCost(ch provider.Change) (elements, valueBytes int) {
	geoSide := func(rs *provider.RecordSet) bool { return rs != nil && isGeoSet(*rs) }
	if !geoSide(ch.Before) && !geoSide(ch.After) {
		return provider.ChangeCost(ch)
	}
	for _, rs := range []*provider.RecordSet{ch.Before, ch.After} {
		if rs == nil {
			continue
		}
		_, b := provider.SetCost(rs)
		entry := provider.ValueBytes("TXT", encodeEntry(geoTagOf(*rs)))
		valueBytes += 2 * (len(gcpRegions)*b + entry)
	}
	return 4, valueBytes
}
