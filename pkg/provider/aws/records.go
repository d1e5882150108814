package aws

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Route 53 limits per ChangeResourceRecordSets request.
const (
	maxElements = 1000
	maxChars    = 32000
)

// encodeValue spells a canonical target as Route 53 does: TXT/SPF as quoted
// 255-byte character-strings, domain names with a trailing dot.
func encodeValue(rtype, target string) string {
	return provider.PresentationValue(rtype, target, escapeTXT)
}

// escapeTXT escapes " and \ with a backslash, and bytes outside printable
// ASCII as \ddd (octal), as Route 53 requires.
func escapeTXT(s string) string { return provider.EscapeTXTBase(s, 8) }

// decodeTXT joins Route 53's quoted character-strings, undoing \" \\ and \ddd (octal) escapes.
func decodeTXT(v string) string { return provider.ParseQuotedTXT(v, 8) }

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// decodeName turns Route 53's \ddd (octal) escapes back into characters and
// lower-cases the name, keeping the trailing dot.
func decodeName(n string) string {
	if strings.Contains(n, `\`) {
		var b strings.Builder
		for i := 0; i < len(n); i++ {
			if n[i] == '\\' && i+3 < len(n) && isOctal(n[i+1]) && isOctal(n[i+2]) && isOctal(n[i+3]) {
				v, _ := strconv.ParseUint(n[i+1:i+4], 8, 8)
				b.WriteByte(byte(v))
				i += 3
				continue
			}
			b.WriteByte(n[i])
		}
		n = b.String()
	}
	return dnswire.Fqdn(n)
}

// toRR builds Route 53's ResourceRecordSet from a validated set: an alias
// (ProviderSpecific "alias" = "true", see validateAlias) becomes an AliasTarget
// with no TTL and no ResourceRecords, as the Route 53 API Reference requires.
func toRR(rs provider.RecordSet, zoneID string) *types.ResourceRecordSet {
	rr := &types.ResourceRecordSet{Name: aws.String(dnswire.Fqdn(rs.Name)), Type: types.RRType(rs.Type)}
	if rs.SetIdentifier != "" {
		rr.SetIdentifier = aws.String(rs.SetIdentifier)
		rr.Weight = rs.Weight
	}
	if rs.ProviderSpecific[KeyAlias] == "true" && len(rs.Targets) == 1 {
		tz := rs.ProviderSpecific[KeyTargetHostedZone]
		if tz == "" {
			tz = zoneID
		}
		rr.AliasTarget = &types.AliasTarget{DNSName: aws.String(dnswire.Fqdn(rs.Targets[0])),
			HostedZoneId: aws.String(tz), EvaluateTargetHealth: rs.ProviderSpecific[KeyEvaluateTargetHealth] != "false"}
		return rr
	}
	rr.TTL = aws.Int64(rs.TTL)
	for _, t := range rs.Targets {
		rr.ResourceRecords = append(rr.ResourceRecords, types.ResourceRecord{Value: aws.String(encodeValue(rs.Type, t))})
	}
	return rr
}

// fromRR converts a listed ResourceRecordSet of zone zoneID to canonical form. An alias is read
// as one target, the canonical alias DNS name, TTL 0, and ProviderSpecific in its shortest form,
// the form validate gives a written alias: "alias", plus "aws/evaluate-target-health" only when
// "false" and "aws/target-hosted-zone" only when another zone, so that an endpoint written with
// external-dns' short form (alias "true" alone) equals what is listed.
func fromRR(rr types.ResourceRecordSet, zoneID string) provider.RecordSet {
	rs := provider.RecordSet{Name: dnswire.Dotless(decodeName(aws.ToString(rr.Name))), Type: string(rr.Type),
		TTL: aws.ToInt64(rr.TTL), SetIdentifier: aws.ToString(rr.SetIdentifier)}
	if rr.Weight != nil {
		w := *rr.Weight
		rs.Weight = &w
	}
	if at := rr.AliasTarget; at != nil {
		rs.TTL = 0
		rs.Targets = []string{dnswire.Dotless(decodeName(aws.ToString(at.DNSName)))}
		rs.ProviderSpecific = aliasKeys(strconv.FormatBool(at.EvaluateTargetHealth), stripZoneID(aws.ToString(at.HostedZoneId)), zoneID)
		return rs
	}
	for _, r := range rr.ResourceRecords {
		rs.Targets = append(rs.Targets, provider.TargetOfValue(rs.Type, aws.ToString(r.Value), 8))
	}
	return rs
}

func (p *Provider) listRaw(ctx context.Context, zoneID string) ([]types.ResourceRecordSet, error) {
	in := &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zoneID), MaxItems: aws.Int32(p.pageSize)}
	var all []types.ResourceRecordSet
	for {
		out, err := p.client.ListResourceRecordSets(ctx, in)
		if err != nil {
			return nil, mapErr("ListResourceRecordSets", err)
		}
		all = append(all, out.ResourceRecordSets...)
		if !out.IsTruncated {
			return all, nil
		}
		in.StartRecordName, in.StartRecordType, in.StartRecordIdentifier = out.NextRecordName, out.NextRecordType, out.NextRecordIdentifier
	}
}

// ListRecordSets lists every record set of the zone, the apex SOA and NS
// included. Alias record sets are listed as fromRR describes.
func (p *Provider) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	raw, err := p.listRaw(ctx, stripZoneID(zoneID))
	if err != nil {
		return nil, err
	}
	conv := make([]provider.RecordSet, 0, len(raw))
	for _, rr := range raw {
		conv = append(conv, fromRR(rr, stripZoneID(zoneID)))
	}
	return foldGeo(raw, conv), nil
}

// validate checks one side of a change and returns it in canonical form, its
// ProviderSpecific normalised (see the Key constants): "aws/weight" moved into
// Weight, and an alias given all three alias keys.
func (p *Provider) validate(action provider.Action, zone, zoneID, which string, rs provider.RecordSet) (provider.RecordSet, error) {
	in := rs.Clone()
	if isGeoSet(in) {
		if _, err := validateGeo(in); err != nil {
			return in, err
		}
		labels := in.ProviderSpecific
		in.ProviderSpecific = nil
		c, err := provider.ValidateChangeSet(action, which, &in, zone, p.Capabilities())
		c.ProviderSpecific = labels
		return c, err
	}
	alias := false
	for k, v := range in.ProviderSpecific {
		switch k {
		case KeyAlias:
			switch v {
			case "true":
				alias = true
			case "false":
				delete(in.ProviderSpecific, k)
			default:
				return in, fmt.Errorf("%w: %s: providerSpecific %q must be \"true\" or \"false\", not %q", provider.ErrInvalidChange, in.Key(), k, v)
			}
		case KeyWeight:
			w, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || w < 0 || w > 255 {
				return in, fmt.Errorf("%w: %s: providerSpecific %q must be an integer 0..255, not %q", provider.ErrInvalidChange, in.Key(), k, v)
			}
			if in.Weight != nil && *in.Weight != w {
				return in, fmt.Errorf("%w: %s: providerSpecific %q (%d) differs from weight %d", provider.ErrInvalidChange, in.Key(), k, w, *in.Weight)
			}
			in.Weight = &w
			delete(in.ProviderSpecific, k)
		case KeyEvaluateTargetHealth, KeyTargetHostedZone:
		default:
			if strings.HasPrefix(k, "aws/") {
				return in, fmt.Errorf("%w: %s: unknown Route 53 providerSpecific %q (known: %s, %s, %s, %s)", provider.ErrInvalidChange,
					in.Key(), k, KeyAlias, KeyEvaluateTargetHealth, KeyTargetHostedZone, KeyWeight)
			}
			return in, fmt.Errorf("%w: %s: provider-specific property %q", provider.ErrNotCapable, in.Key(), k)
		}
	}
	var (
		c   provider.RecordSet
		err error
	)
	if alias {
		c, err = validateAlias(action, zone, zoneID, which, in, p.Capabilities())
	} else {
		for _, k := range []string{KeyEvaluateTargetHealth, KeyTargetHostedZone} {
			if _, ok := in.ProviderSpecific[k]; ok {
				return in, fmt.Errorf("%w: %s: providerSpecific %q needs %q = \"true\"", provider.ErrInvalidChange, in.Key(), k, KeyAlias)
			}
		}
		c, err = provider.ValidateChangeSet(action, which, &in, zone, p.Capabilities())
	}
	if err != nil {
		return c, err
	}
	switch {
	case c.SetIdentifier != "" && c.Weight == nil:
		return c, fmt.Errorf("%w: %s: a set identifier needs a weight (only weighted routing is supported)", provider.ErrInvalidChange, c.Key())
	case c.Weight != nil && *c.Weight > 255:
		return c, fmt.Errorf("%w: %s: weight %d outside Route 53's 0..255", provider.ErrInvalidChange, c.Key(), *c.Weight)
	case len(c.SetIdentifier) > 128:
		return c, fmt.Errorf("%w: %s: set identifier longer than 128 characters", provider.ErrInvalidChange, c.Key())
	}
	return c, nil
}

// validateAlias checks an alias set (Route 53 API Reference, AliasTarget):
// type A or AAAA, exactly one target (the alias DNS name) and TTL 0 (an alias
// has no TTL of its own). It fills the defaults: "aws/evaluate-target-health"
// "true", "aws/target-hosted-zone" this zone's ID (an alias to a record of the
// same zone).
func validateAlias(action provider.Action, zone, zoneID, which string, in provider.RecordSet, caps provider.Capabilities) (provider.RecordSet, error) {
	t := strings.ToUpper(strings.TrimSpace(in.Type))
	switch {
	case t != "A" && t != "AAAA":
		return in, fmt.Errorf("%w: %s: Route 53 alias records must be type A or AAAA here, not %q", provider.ErrInvalidChange, in.Key(), in.Type)
	case len(in.Targets) != 1:
		return in, fmt.Errorf("%w: %s: a Route 53 alias has exactly one target (the alias DNS name), not %d", provider.ErrInvalidChange, in.Key(), len(in.Targets))
	case in.TTL != 0:
		return in, fmt.Errorf("%w: %s: Route 53 alias records have no TTL: set recordTTL 0, not %d", provider.ErrInvalidChange, in.Key(), in.TTL)
	}
	eth := in.ProviderSpecific[KeyEvaluateTargetHealth]
	switch eth {
	case "":
		eth = "true"
	case "true", "false":
	default:
		return in, fmt.Errorf("%w: %s: providerSpecific %q must be \"true\" or \"false\", not %q", provider.ErrInvalidChange, in.Key(), KeyEvaluateTargetHealth, eth)
	}
	tz := stripZoneID(strings.TrimSpace(in.ProviderSpecific[KeyTargetHostedZone]))
	if tz == "" {
		tz = zoneID
	}
	// The target is a domain name: canonicalise it as a CNAME's.
	in.Type = "CNAME"
	c, err := provider.ValidateChangeSet(action, which, &in, zone, caps)
	c.Type = t
	if err != nil {
		return c, err
	}
	c.ProviderSpecific = aliasKeys(eth, tz, zoneID)
	return c, nil
}

// aliasKeys is an alias's ProviderSpecific in its shortest form: defaults (evaluate target
// health "true", the target in zone zoneID itself) are left out.
func aliasKeys(eth, targetZone, zoneID string) map[string]string {
	ps := map[string]string{KeyAlias: "true"}
	if eth == "false" {
		ps[KeyEvaluateTargetHealth] = "false"
	}
	if targetZone != "" && targetZone != zoneID {
		ps[KeyTargetHostedZone] = targetZone
	}
	return ps
}

// ApplyChanges validates all changes (provider.ValidateChanges, then Route 53's own rules), then
// writes them in one ChangeResourceRecordSets request, atomic: an Update is an exact DELETE of
// Before and a CREATE of After. It never splits: a batch over Route 53's limits (Capabilities,
// RequestCost) is rejected by Route 53 as ErrInvalidChange; pkg/provider/guard sends batches
// within them.
func (p *Provider) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	zoneID = stripZoneID(zoneID)
	zone, err := p.zoneName(ctx, zoneID)
	if err != nil {
		return err
	}
	canon, err := provider.ValidateChanges(changes, func(action provider.Action, which string, rs provider.RecordSet) (provider.RecordSet, error) {
		return p.validate(action, zone, zoneID, which, rs)
	})
	if err != nil {
		return err
	}
	if len(canon) == 0 {
		return nil
	}
	batch := make([]types.Change, 0, len(canon))
	for _, c := range canon {
		if c.Before != nil {
			for _, rr := range rrsOf(*c.Before, zoneID) {
				batch = append(batch, types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: rr})
			}
		}
		if c.After != nil {
			for _, rr := range rrsOf(*c.After, zoneID) {
				batch = append(batch, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: rr})
			}
		}
	}
	return p.send(ctx, zoneID, batch)
}

// rrsOf returns what a canonical set is written as: a geo set's geolocation record sets
// (geoRRs), else the one toRR builds.
func rrsOf(rs provider.RecordSet, zoneID string) []*types.ResourceRecordSet {
	if isGeoSet(rs) {
		return geoRRs(rs)
	}
	return []*types.ResourceRecordSet{toRR(rs, zoneID)}
}

// RequestCost implements provider.RequestSizer: a set costs what toRR sends, provider.SetCost
// except for an alias (ProviderSpecific "alias" "true", one target), which is an AliasTarget
// with no Value element: one element, no value characters. An Update costs its DELETE plus its
// CREATE (Route 53 API Reference, ChangeResourceRecordSets: "each ResourceRecord element" and
// "the sum of the number of characters (including spaces) in all Value elements"). A geo set
// costs each of its geolocation record sets (geoRRs).
func (p *Provider) RequestCost(ch provider.Change) (elements, valueBytes int) {
	side := func(rs *provider.RecordSet) (int, int) {
		if rs != nil && rs.ProviderSpecific[KeyAlias] == "true" && len(rs.Targets) == 1 {
			return 1, 0
		}
		e, b := provider.SetCost(rs)
		if rs != nil && isGeoSet(*rs) {
			n := len(geoRRs(*rs)) // one geolocation record set per region
			return n * e, n * b
		}
		return e, b
	}
	switch ch.Action {
	case provider.ActionCreate:
		return side(ch.After)
	case provider.ActionDelete:
		return side(ch.Before)
	case provider.ActionUpdate:
		be, bb := side(ch.Before)
		ae, ab := side(ch.After)
		return be + ae, bb + ab
	}
	return 0, 0
}

// send writes batch as one ChangeResourceRecordSets request, then, with WaitForSync, waits until
// Route 53 reports it INSYNC.
func (p *Provider) send(ctx context.Context, zoneID string, batch []types.Change) error {
	out, err := p.client.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(zoneID), ChangeBatch: &types.ChangeBatch{Changes: batch}})
	if err != nil {
		return mapErr("ChangeResourceRecordSets", err)
	}
	if p.wait && out.ChangeInfo != nil {
		return p.waitInSync(ctx, aws.ToString(out.ChangeInfo.Id))
	}
	if out.ChangeInfo != nil && out.ChangeInfo.Status != types.ChangeStatusInsync {
		at := uint32(p.now().Unix())
		p.mu.Lock()
		p.pending[zoneID] = append(p.pending[zoneID], pendingChange{id: aws.ToString(out.ChangeInfo.Id), at: at})
		p.submitted[zoneID] = at
		p.mu.Unlock()
	}
	return nil
}

// Submitted implements provider.ChangeSync: the second of this process's last change to the
// zone, 0 when none.
func (p *Provider) Submitted(zoneID string) uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.submitted[stripZoneID(zoneID)]
}

// ChangeSyncName implements provider.ChangeSync.
func (p *Provider) ChangeSyncName() string { return "Route 53" }

// InSync implements provider.ChangeSync: one GetChange per pending change of the zone, oldest
// first, until one is still PENDING; the INSYNC ones are forgotten. A change Route 53 no longer
// knows (NoSuchChange: its history is kept for a while) counts as INSYNC. Concurrent calls for
// one zone may ask about the same change twice; the answer is the same.
func (p *Provider) InSync(ctx context.Context, zoneID string) (uint32, error) {
	zoneID = stripZoneID(zoneID)
	for {
		p.mu.Lock()
		q := p.pending[zoneID]
		if len(q) == 0 {
			p.mu.Unlock()
			// The second before this one: a write later in this second is not covered.
			return uint32(p.now().Unix()) - 1, nil
		}
		oldest := q[0]
		p.mu.Unlock()
		out, err := p.client.GetChange(ctx, &route53.GetChangeInput{Id: aws.String(oldest.id)})
		var nsc *types.NoSuchChange
		switch {
		case errors.As(err, &nsc):
		case err != nil:
			return 0, mapErr("GetChange", err)
		case out.ChangeInfo == nil || out.ChangeInfo.Status != types.ChangeStatusInsync:
			return oldest.at - 1, nil
		}
		p.mu.Lock()
		if q := p.pending[zoneID]; len(q) > 0 && q[0].id == oldest.id {
			p.pending[zoneID] = q[1:]
		}
		p.mu.Unlock()
	}
}

func (p *Provider) waitInSync(ctx context.Context, id string) error {
	for {
		out, err := p.client.GetChange(ctx, &route53.GetChangeInput{Id: aws.String(id)})
		if err != nil {
			return mapErr("GetChange", err)
		}
		if out.ChangeInfo != nil && out.ChangeInfo.Status == types.ChangeStatusInsync {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(p.poll):
		}
	}
}

// zoneName returns the hosted zone's canonical name, from memory after the first GetHostedZone
// (a hosted zone's name never changes; a deleted zone then fails at ChangeResourceRecordSets with
// NoSuchHostedZone, mapped to ErrZoneNotFound).
func (p *Provider) zoneName(ctx context.Context, zoneID string) (string, error) {
	if v, ok := p.names.Load(zoneID); ok {
		return v.(string), nil
	}
	hz, err := p.client.GetHostedZone(ctx, &route53.GetHostedZoneInput{Id: aws.String(zoneID)})
	if err != nil {
		return "", mapErr("GetHostedZone", err)
	}
	zone := dnswire.Dotless(aws.ToString(hz.HostedZone.Name))
	p.names.Store(zoneID, zone)
	return zone, nil
}
