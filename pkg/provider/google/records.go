package google

import (
	"context"
	"fmt"
	"strings"

	dns "google.golang.org/api/dns/v1"

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
	rr := &dns.ResourceRecordSet{Name: provider.Fqdn(rs.Name), Type: rs.Type, Ttl: rs.TTL, ForceSendFields: []string{"Ttl"}}
	for _, t := range rs.Targets {
		rr.Rrdatas = append(rr.Rrdatas, encodeValue(rs.Type, t))
	}
	return rr
}

func fromRR(rr *dns.ResourceRecordSet) provider.RecordSet {
	rs := provider.RecordSet{Name: provider.CanonicalName(rr.Name), Type: strings.ToUpper(rr.Type), TTL: rr.Ttl}
	for _, v := range rr.Rrdatas {
		if rs.Type == "TXT" || rs.Type == "SPF" {
			v = decodeTXT(v)
		} else if c, err := provider.CanonicalTarget(rs.Type, v); err == nil {
			v = c
		}
		rs.Targets = append(rs.Targets, v)
	}
	return rs
}

func (p *Provider) listRaw(ctx context.Context, zone string) ([]*dns.ResourceRecordSet, error) {
	var all []*dns.ResourceRecordSet
	call := p.svc.ResourceRecordSets.List(p.project, zone)
	if p.pageSize > 0 {
		call = call.MaxResults(p.pageSize)
	}
	for token := ""; ; {
		cctx, cancel := context.WithTimeout(ctx, p.timeout)
		r, err := call.PageToken(token).Context(cctx).Do()
		cancel()
		if err != nil {
			return nil, mapErr("resourceRecordSets.list", err)
		}
		all = append(all, r.Rrsets...)
		if token = r.NextPageToken; token == "" {
			return all, nil
		}
	}
}

// ListRecordSets lists every record set of the zone, apex SOA and NS
// included. Sets with a routing policy are not supported and left out.
func (p *Provider) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	if zoneID == "" {
		return nil, fmt.Errorf("%w: empty zone ID", provider.ErrZoneNotFound)
	}
	raw, err := p.listRaw(ctx, zoneID)
	if err != nil {
		return nil, err
	}
	out := make([]provider.RecordSet, 0, len(raw))
	for _, rr := range raw {
		if rr.RoutingPolicy != nil {
			continue
		}
		out = append(out, fromRR(rr))
	}
	return out, nil
}

// validate is the SideCheck of Cloud DNS: the common rules without weighted routing, and no
// provider-specific properties.
func validate(action provider.Action, zone, which string, rs provider.RecordSet) (provider.RecordSet, error) {
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
// changes.create, atomic: Before as exact deletions, After as additions. It never splits: a
// change over Cloud DNS's per-change limits (Capabilities) is rejected by Cloud DNS;
// pkg/provider/guard sends batches within them.
func (p *Provider) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	mz, err := p.getRaw(ctx, zoneID)
	if err != nil {
		return err
	}
	zone := provider.CanonicalName(mz.DnsName)
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
	for _, c := range canon {
		if c.Before != nil {
			g.deletions = append(g.deletions, toRR(*c.Before))
		}
		if c.After != nil {
			g.additions = append(g.additions, toRR(*c.After))
		}
	}
	return p.send(ctx, mz.Name, g)
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
