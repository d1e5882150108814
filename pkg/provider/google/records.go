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
	err := call.Pages(ctx, func(r *dns.ResourceRecordSetsListResponse) error {
		all = append(all, r.Rrsets...)
		return nil
	})
	if err != nil {
		return nil, mapErr("resourceRecordSets.list", err)
	}
	return all, nil
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

func validate(ch provider.Change, zone, which string, rs *provider.RecordSet) (provider.RecordSet, error) {
	c, err := provider.ValidateChangeSet(ch.Action, which, rs, zone, provider.Capabilities{}) // no weighted routing
	if err == nil && len(c.ProviderSpecific) > 0 {
		err = fmt.Errorf("%w: %s: provider-specific properties", provider.ErrNotCapable, c.Key())
	}
	return c, err
}

// group is the deletions and additions of one provider.Change, never split.
type group struct {
	deletions, additions []*dns.ResourceRecordSet
}

// ApplyChanges validates all changes, then writes them with one
// changes.create per batch: Before as exact deletions, After as additions.
func (p *Provider) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	mz, err := p.getRaw(ctx, zoneID)
	if err != nil {
		return err
	}
	zone := provider.CanonicalName(mz.DnsName)
	canon := make([]provider.Change, 0, len(changes))
	groups := make([]group, 0, len(changes))
	for _, ch := range changes {
		var (
			c   = provider.Change{Action: ch.Action}
			g   group
			err error
		)
		switch ch.Action {
		case provider.ActionCreate:
			var a provider.RecordSet
			if a, err = validate(ch, zone, "After", ch.After); err == nil {
				c.After = &a
				g.additions = []*dns.ResourceRecordSet{toRR(a)}
			}
		case provider.ActionDelete:
			var b provider.RecordSet
			if b, err = validate(ch, zone, "Before", ch.Before); err == nil {
				c.Before = &b
				g.deletions = []*dns.ResourceRecordSet{toRR(b)}
			}
		case provider.ActionUpdate:
			var a, b provider.RecordSet
			if b, err = validate(ch, zone, "Before", ch.Before); err == nil {
				if a, err = validate(ch, zone, "After", ch.After); err == nil {
					if a.Key() != b.Key() {
						err = fmt.Errorf("%w: update changes the key %s to %s", provider.ErrInvalidChange, b.Key(), a.Key())
					}
					c.Before, c.After = &b, &a
					g.deletions = []*dns.ResourceRecordSet{toRR(b)}
					g.additions = []*dns.ResourceRecordSet{toRR(a)}
				}
			}
		default:
			err = fmt.Errorf("%w: unknown action %q", provider.ErrInvalidChange, ch.Action)
		}
		if err != nil {
			return err
		}
		canon = append(canon, c)
		groups = append(groups, g)
	}
	if len(canon) == 0 {
		return nil
	}
	// SplitBatches by the declared capabilities, then make sure of the exact
	// bytes sent (trailing dots are extra).
	var batches [][]group
	off := 0
	for _, b := range provider.SplitBatches(canon, p.Capabilities()) {
		batches = append(batches, splitExact(groups[off:off+len(b)])...)
		off += len(b)
	}
	return p.send(ctx, mz.Name, batches)
}

func cost(rs []*dns.ResourceRecordSet) (sets, bytes int) {
	for _, r := range rs {
		for _, d := range r.Rrdatas {
			bytes += len(d)
		}
	}
	return len(rs), bytes
}

// splitExact packs groups (kept whole, in order) into requests within the
// Cloud DNS per-change limits, by the exact rrdata sent.
func splitExact(groups []group) [][]group {
	var out [][]group
	var cur []group
	adds, dels, size := 0, 0, 0
	for _, g := range groups {
		d, db := cost(g.deletions)
		a, ab := cost(g.additions)
		if len(cur) > 0 && (adds+a > maxAdditions || dels+d > maxDeletions || size+db+ab > maxRrdataBytes) {
			out = append(out, cur)
			cur, adds, dels, size = nil, 0, 0, 0
		}
		cur = append(cur, g)
		adds, dels, size = adds+a, dels+d, size+db+ab
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func (p *Provider) send(ctx context.Context, zone string, batches [][]group) error {
	for i, b := range batches {
		c := &dns.Change{}
		for _, g := range b {
			c.Deletions = append(c.Deletions, g.deletions...)
			c.Additions = append(c.Additions, g.additions...)
		}
		if _, err := p.svc.Changes.Create(p.project, zone, c).Context(ctx).Do(); err != nil {
			err = mapErr("changes.create", err)
			if i > 0 {
				return fmt.Errorf("request %d of %d (earlier requests applied): %w", i+1, len(batches), err)
			}
			return err
		}
	}
	return nil
}
