package google

import (
	"context"
	"fmt"
	"strings"

	dns "google.golang.org/api/dns/v1"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// encodeValue spells a canonical target as Cloud DNS rrdata: TXT/SPF as
// quoted 255-byte character-strings (RFC 1035 §5.1 escapes), domain names
// absolute, with a trailing dot.
func encodeValue(rtype, target string) string {
	return provider.PresentationValue(rtype, target, provider.EscapeTXT)
}

// decodeTXT joins quoted character-strings into the logical value, undoing \X and \DDD
// (decimal, RFC 1035 §5.1) escapes. Unquoted words are taken as character-strings too.
func decodeTXT(v string) string { return provider.ParseQuotedTXT(v, 10) }

func toRR(rs provider.RecordSet) *dns.ResourceRecordSet {
	rr := &dns.ResourceRecordSet{Name: dnswire.Fqdn(rs.Name), Type: rs.Type, Ttl: rs.TTL, ForceSendFields: []string{"Ttl"}}
	for _, t := range rs.Targets {
		rr.Rrdatas = append(rr.Rrdatas, encodeValue(rs.Type, t))
	}
	return rr
}

func fromRR(rr *dns.ResourceRecordSet) provider.RecordSet {
	rs := provider.RecordSet{Name: dnswire.Dotless(rr.Name), Type: strings.ToUpper(rr.Type), TTL: rr.Ttl}
	for _, v := range rr.Rrdatas {
		rs.Targets = append(rs.Targets, provider.TargetOfValue(rs.Type, v, 10))
	}
	return rs
}

func (p *Provider) listRaw(ctx context.Context, zone string) ([]*dns.ResourceRecordSet, error) {
	call := p.svc.ResourceRecordSets.List(p.project, zone)
	if p.pageSize > 0 {
		call = call.MaxResults(p.pageSize)
	}
	fetch := func(ctx context.Context, token string) (*dns.ResourceRecordSetsListResponse, error) {
		return call.PageToken(token).Context(ctx).Do()
	}
	return listPages(ctx, p.timeout, "resourceRecordSets.list", fetch, func(r *dns.ResourceRecordSetsListResponse) ([]*dns.ResourceRecordSet, string) {
		return r.Rrsets, r.NextPageToken
	})
}

// ListRecordSets lists every record set of the zone, apex SOA and NS included. A record set
// with a geo routing policy and its companion TXT is listed as the geo sets they hold (one per
// geo tag, unfoldGeo); the companion itself is not listed. Other sets with a routing policy
// (another owner's) are left out.
func (p *Provider) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	if zoneID == "" {
		return nil, fmt.Errorf("%w: empty zone ID", provider.ErrZoneNotFound)
	}
	raw, err := p.listRaw(ctx, zoneID)
	if err != nil {
		return nil, err
	}
	companions := map[provider.RecordSetKey][]geoTag{} // by the name and type they describe
	hidden := map[*dns.ResourceRecordSet]bool{}
	for _, rr := range raw {
		if strings.ToUpper(rr.Type) != "TXT" {
			continue
		}
		if name, rtype, ok := parseCompanionName(rr.Name); ok {
			if tags, ok := parseCompanion(rr, rtype); ok {
				companions[provider.RecordSetKey{Name: name, Type: rtype}] = tags
				hidden[rr] = true
			}
		}
	}
	out := make([]provider.RecordSet, 0, len(raw))
	for _, rr := range raw {
		switch {
		case hidden[rr]:
		case rr.RoutingPolicy != nil:
			k := provider.RecordSetKey{Name: dnswire.Dotless(rr.Name), Type: strings.ToUpper(rr.Type)}
			if tags, ours := companions[k]; ours && rr.RoutingPolicy.Geo != nil {
				out = append(out, unfoldGeo(rr, tags)...)
			}
		default:
			out = append(out, fromRR(rr))
		}
	}
	return out, nil
}

// validate is the SideCheck of Cloud DNS: a geo set's (validateGeo), else the common rules
// without weighted routing, and no provider-specific properties.
func validate(action provider.Action, zone, which string, rs provider.RecordSet) (provider.RecordSet, error) {
	if isGeoSet(rs) {
		return validateGeo(action, zone, which, rs)
	}
	c, err := provider.ValidateChangeSet(action, which, &rs, zone, provider.Capabilities{}) // no weighted routing
	if err == nil && len(c.ProviderSpecific) > 0 {
		err = fmt.Errorf("%w: %s: provider-specific properties", provider.ErrNotCapable, c.Key())
	}
	return c, err
}

// group is the deletions and additions of one request.
type group struct {
	deletions, additions []*dns.ResourceRecordSet
}

// ApplyChanges validates all changes (provider.ValidateChanges), then writes them with one
// changes.create, atomic: Before as exact deletions, After as additions. The geo sets of a name
// and type are applied to the routing-policy set that holds them (applyGeo): the set and its
// companion are read, the changes applied to the geo tags they hold, and the set and companion
// replaced whole (exact deletions of what was read, additions of the new) in the same request.
// It never splits: a change over Cloud DNS's per-change limits (Capabilities) is rejected by
// Cloud DNS; pkg/provider/guard sends batches within them.
func (p *Provider) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	mz, err := p.getRaw(ctx, zoneID)
	if err != nil {
		return err
	}
	zone := dnswire.Dotless(mz.DnsName)
	canon, err := provider.ValidateChanges(changes, func(action provider.Action, which string, rs provider.RecordSet) (provider.RecordSet, error) {
		return validate(action, zone, which, rs)
	})
	if err != nil {
		return err
	}
	if len(canon) == 0 {
		return nil
	}
	var g group
	geoChanges := map[provider.RecordSetKey][]provider.Change{} // by name and type
	var geoKeys []provider.RecordSetKey
	for _, c := range canon {
		side := c.After
		if side == nil {
			side = c.Before
		}
		if isGeoSet(*side) || (c.Before != nil && isGeoSet(*c.Before)) {
			if c.Before != nil && c.After != nil && (isGeoSet(*c.Before) != isGeoSet(*c.After) || c.Before.Key() != c.After.Key()) {
				return fmt.Errorf("%w: %s: an update turns a set into a geo set or back, or changes its geo tag; delete and create instead", provider.ErrInvalidChange, side.Key())
			}
			k := provider.RecordSetKey{Name: side.Name, Type: side.Type}
			if _, seen := geoChanges[k]; !seen {
				geoKeys = append(geoKeys, k)
			}
			geoChanges[k] = append(geoChanges[k], c)
			continue
		}
		if c.Before != nil {
			g.deletions = append(g.deletions, toRR(*c.Before))
		}
		if c.After != nil {
			g.additions = append(g.additions, toRR(*c.After))
		}
	}
	for _, k := range geoKeys {
		if err := p.applyGeo(ctx, mz.Name, k, geoChanges[k], &g); err != nil {
			return err
		}
	}
	if len(g.deletions)+len(g.additions) == 0 {
		return nil
	}
	return p.send(ctx, mz.Name, g)
}

// geoState is what a name and type hold of geo routing: the routing-policy set and the
// companion TXT as listed (nil when absent), and the geo tags the companion holds.
type geoState struct {
	set, companion *dns.ResourceRecordSet
	tags           []geoTag
	sets           []provider.RecordSet // the geo sets as ListRecordSets gives them
}

// readGeo reads the routing-policy set of k and its companion. A routing-policy set whose
// companion does not parse (another owner's), or a companion name holding a TXT set that is not
// a companion, is provider.ErrInvalidChange, not a conflict to re-plan: dnsplane writes neither,
// and the change is refused until that data goes.
func (p *Provider) readGeo(ctx context.Context, zone string, k provider.RecordSetKey) (geoState, error) {
	var st geoState
	list := func(name, rtype string) (*dns.ResourceRecordSet, error) {
		cctx, cancel := context.WithTimeout(ctx, p.timeout)
		defer cancel()
		r, err := p.svc.ResourceRecordSets.List(p.project, zone).Name(dnswire.Fqdn(name)).Type(rtype).Context(cctx).Do()
		if err != nil {
			return nil, mapErr("resourceRecordSets.list", err)
		}
		for _, rr := range r.Rrsets {
			if dnswire.Dotless(rr.Name) == dnswire.Dotless(name) && strings.EqualFold(rr.Type, rtype) {
				return rr, nil
			}
		}
		return nil, nil
	}
	set, err := list(k.Name, k.Type)
	if err != nil {
		return st, err
	}
	comp, err := list(companionName(k.Name, k.Type), "TXT")
	if err != nil {
		return st, err
	}
	if comp != nil {
		tags, ok := parseCompanion(comp, k.Type)
		if !ok {
			return st, fmt.Errorf("%w: %s/TXT holds data that is not dnsplane's geo companion of %s/%s; it is left alone", provider.ErrInvalidChange,
				companionName(k.Name, k.Type), k.Name, k.Type)
		}
		st.companion, st.tags = comp, tags
	}
	if set != nil && set.RoutingPolicy != nil {
		if set.RoutingPolicy.Geo == nil || comp == nil {
			return st, fmt.Errorf("%w: %s/%s holds a Cloud DNS routing policy that dnsplane did not write; it is left alone", provider.ErrInvalidChange, k.Name, k.Type)
		}
		st.set = set
		st.sets = unfoldGeo(set, st.tags)
	} else {
		st.tags = nil // an orphan companion: replaced (or deleted) with the rest
	}
	return st, nil
}

// applyGeo adds to g the deletions and additions that apply changes (the geo sets of one name
// and type, validated) to what the name and type hold now (readGeo): every Before must equal the
// geo set now listed for its tag, a created tag must not exist (provider.ErrConflict otherwise,
// as the exact deletions would be); the new policy is built from the tags after the changes
// (buildGeo), and written as the exact deletion of the current set and companion and the
// addition of the new ones; with no tag left, both are deleted.
func (p *Provider) applyGeo(ctx context.Context, zone string, k provider.RecordSetKey, changes []provider.Change, g *group) error {
	st, err := p.readGeo(ctx, zone, k)
	if err != nil {
		return err
	}
	now := map[string]provider.RecordSet{}
	for _, rs := range st.sets {
		now[rs.SetIdentifier] = rs
	}
	tags := map[string]geoTag{}
	for _, t := range st.tags {
		tags[t.set.Tag] = t
	}
	for _, c := range changes {
		if c.Before != nil {
			cur, ok := now[c.Before.SetIdentifier]
			if !ok || !cur.Equal(*c.Before) {
				return fmt.Errorf("%w: %s is not as the change expects (stale)", provider.ErrConflict, c.Before.Key())
			}
			delete(now, c.Before.SetIdentifier)
			delete(tags, c.Before.SetIdentifier)
		}
		if c.After != nil {
			if _, exists := now[c.After.SetIdentifier]; exists {
				return fmt.Errorf("%w: %s exists", provider.ErrConflict, c.After.Key())
			}
			now[c.After.SetIdentifier] = *c.After
			tags[c.After.SetIdentifier] = geoTagOf(*c.After)
		}
	}
	for _, rr := range []*dns.ResourceRecordSet{st.set, st.companion} {
		if rr != nil { // deleted exactly as listed
			g.deletions = append(g.deletions, &dns.ResourceRecordSet{Name: rr.Name, Type: rr.Type, Ttl: rr.Ttl, Rrdatas: rr.Rrdatas,
				RoutingPolicy: rr.RoutingPolicy, ForceSendFields: []string{"Ttl"}})
		}
	}
	if len(tags) == 0 {
		return nil
	}
	list := make([]geoTag, 0, len(tags))
	for _, t := range tags {
		list = append(list, t)
	}
	set, comp, err := buildGeo(k.Name, k.Type, list)
	if err != nil {
		return err
	}
	g.additions = append(g.additions, set, comp)
	return nil
}

// send writes g as one changes.create.
func (p *Provider) send(ctx context.Context, zone string, g group) error {
	c := &dns.Change{Deletions: g.deletions, Additions: g.additions}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if _, err := p.svc.Changes.Create(p.project, zone, c).Context(ctx).Do(); err != nil {
		return mapErr("changes.create", err)
	}
	return nil
}
