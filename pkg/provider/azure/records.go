package azure

import (
	"context"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns"
	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

var supportedTypes = map[string]bool{"A": true, "AAAA": true, "CNAME": true, "TXT": true, "NS": true, "MX": true, "SRV": true, "CAA": true, "PTR": true}

func relName(name, zone string) string {
	if name == zone {
		return "@"
	}
	return strings.TrimSuffix(name, "."+zone)
}

func absName(rel, zone string) string {
	rel = dnswire.Dotless(rel)
	if rel == "@" || rel == "" {
		return zone
	}
	return rel + "." + zone
}

// toProps converts a canonical, validated set into Azure's JSON shape.
func toProps(rs provider.RecordSet) (*armdns.RecordSetProperties, error) {
	p := &armdns.RecordSetProperties{TTL: toPtr(rs.TTL)}
	rrs, err := provider.ToRRs(rs)
	if err != nil {
		return nil, err
	}
	for i, rr := range rrs {
		switch v := rr.(type) {
		case *dns.A:
			p.ARecords = append(p.ARecords, &armdns.ARecord{IPv4Address: toPtr(v.A.String())})
		case *dns.AAAA:
			p.AaaaRecords = append(p.AaaaRecords, &armdns.AaaaRecord{IPv6Address: toPtr(v.AAAA.String())})
		case *dns.CNAME:
			p.CnameRecord = &armdns.CnameRecord{Cname: toPtr(rs.Targets[i])}
		case *dns.NS:
			p.NsRecords = append(p.NsRecords, &armdns.NsRecord{Nsdname: toPtr(rs.Targets[i])})
		case *dns.PTR:
			p.PtrRecords = append(p.PtrRecords, &armdns.PtrRecord{Ptrdname: toPtr(rs.Targets[i])})
		case *dns.MX:
			p.MxRecords = append(p.MxRecords, &armdns.MxRecord{Preference: toPtr(int32(v.Preference)), Exchange: toPtr(dnswire.Dotless(v.Mx))})
		case *dns.SRV:
			p.SrvRecords = append(p.SrvRecords, &armdns.SrvRecord{Priority: toPtr(int32(v.Priority)), Weight: toPtr(int32(v.Weight)),
				Port: toPtr(int32(v.Port)), Target: toPtr(dnswire.Dotless(v.Target))})
		case *dns.CAA:
			p.CaaRecords = append(p.CaaRecords, &armdns.CaaRecord{Flags: toPtr(int32(v.Flag)), Tag: toPtr(v.Tag), Value: toPtr(v.Value)})
		case *dns.TXT:
			var chunks []*string
			for _, c := range provider.SplitTXT(rs.Targets[i]) {
				chunks = append(chunks, toPtr(c))
			}
			p.TxtRecords = append(p.TxtRecords, &armdns.TxtRecord{Value: chunks})
		default:
			return nil, fmt.Errorf("%w: %s: type not supported by Azure DNS", provider.ErrNotCapable, rs.Key())
		}
	}
	return p, nil
}

func canon(rtype, v string) string {
	if c, err := provider.CanonicalTarget(rtype, v); err == nil {
		return c
	}
	return v
}

// fromSet converts an Azure record set into canonical form; ok is false for
// types dnsplane does not model (alias sets without records).
func fromSet(s *armdns.RecordSet, zone string) (provider.RecordSet, bool) {
	if s == nil || s.Properties == nil {
		return provider.RecordSet{}, false
	}
	t := deref(s.Type)
	t = strings.ToUpper(t[strings.LastIndex(t, "/")+1:])
	p := s.Properties
	rs := provider.RecordSet{Name: absName(deref(s.Name), zone), Type: t, TTL: deref(p.TTL)}
	add := func(v string) { rs.Targets = append(rs.Targets, canon(t, v)) }
	switch t {
	case "A":
		for _, r := range p.ARecords {
			add(deref(r.IPv4Address))
		}
	case "AAAA":
		for _, r := range p.AaaaRecords {
			add(deref(r.IPv6Address))
		}
	case "CNAME":
		if p.CnameRecord != nil {
			add(deref(p.CnameRecord.Cname))
		}
	case "NS":
		for _, r := range p.NsRecords {
			add(deref(r.Nsdname))
		}
	case "PTR":
		for _, r := range p.PtrRecords {
			add(deref(r.Ptrdname))
		}
	case "MX":
		for _, r := range p.MxRecords {
			add(fmt.Sprintf("%d %s.", deref(r.Preference), strings.TrimSuffix(deref(r.Exchange), ".")))
		}
	case "SRV":
		for _, r := range p.SrvRecords {
			add(fmt.Sprintf("%d %d %d %s.", deref(r.Priority), deref(r.Weight), deref(r.Port), strings.TrimSuffix(deref(r.Target), ".")))
		}
	case "CAA":
		for _, r := range p.CaaRecords {
			c := &dns.CAA{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeCAA, Class: dns.ClassINET}, Flag: uint8(deref(r.Flags)), Tag: deref(r.Tag), Value: deref(r.Value)}
			rs.Targets = append(rs.Targets, provider.TargetFromRR(c))
		}
	case "TXT":
		for _, r := range p.TxtRecords {
			var b strings.Builder
			for _, c := range r.Value {
				b.WriteString(deref(c))
			}
			rs.Targets = append(rs.Targets, b.String())
		}
	case "SOA":
		if r := p.SoaRecord; r != nil {
			add(fmt.Sprintf("%s. %s. %d %d %d %d %d", strings.TrimSuffix(deref(r.Host), "."), strings.TrimSuffix(deref(r.Email), "."),
				deref(r.SerialNumber), deref(r.RefreshTime), deref(r.RetryTime), deref(r.ExpireTime), deref(r.MinimumTTL)))
		}
	default:
		return provider.RecordSet{}, false
	}
	if len(rs.Targets) == 0 {
		return provider.RecordSet{}, false // alias record set (targetResource)
	}
	return rs, true
}

type current struct {
	rs   provider.RecordSet
	etag string
}

func (p *Provider) listRaw(ctx context.Context, zone string) (map[provider.RecordSetKey]current, []provider.RecordSet, error) {
	m := map[provider.RecordSetKey]current{}
	var list []provider.RecordSet
	pager := p.sets.NewListAllByDNSZonePager(p.rg, zone, &armdns.RecordSetsClientListAllByDNSZoneOptions{Top: &p.top})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, nil, mapErr("RecordSets.ListAllByDnsZone", err)
		}
		for _, s := range page.Value {
			if rs, ok := fromSet(s, zone); ok {
				m[rs.Key()] = current{rs: rs, etag: deref(s.Etag)}
				list = append(list, rs)
			}
		}
	}
	return m, list, nil
}

// ListRecordSets lists every record set of the zone (apex SOA and NS
// included), following nextLink pages. Alias record sets are left out.
func (p *Provider) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	_, list, err := p.listRaw(ctx, zoneName(zoneID))
	return list, err
}

// validate is the SideCheck of Azure DNS: the common rules without weighted routing, no
// provider-specific properties, the types Azure serves, one CNAME target, and properties toProps
// can build.
func validate(action provider.Action, zone, which string, rs provider.RecordSet) (provider.RecordSet, error) {
	c, err := provider.ValidateChangeSet(action, which, &rs, zone, provider.Capabilities{}) // no weighted routing
	if err != nil {
		return c, err
	}
	switch {
	case len(c.ProviderSpecific) > 0:
		return c, fmt.Errorf("%w: %s: provider-specific properties", provider.ErrNotCapable, c.Key())
	case !supportedTypes[c.Type]:
		return c, fmt.Errorf("%w: %s: type %s not supported", provider.ErrNotCapable, c.Key(), c.Type)
	case c.Type == "CNAME" && len(c.Targets) != 1:
		return c, fmt.Errorf("%w: %s: a CNAME set holds one target", provider.ErrInvalidChange, c.Key())
	}
	if _, err := toProps(c); err != nil {
		return c, err
	}
	return c, nil
}

// ApplyChanges validates every change (provider.ValidateChanges), reads the
// touched record sets and their ETags, checks every precondition against
// them, then writes one conditional request per change, in order: Azure DNS
// has no batch API (Capabilities.BatchWrites false), so the guard sends one
// change per call.
func (p *Provider) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	zone := zoneName(zoneID)
	if zone == "" {
		return fmt.Errorf("%w: empty zone ID", provider.ErrZoneNotFound)
	}
	if _, err := p.zones.Get(ctx, p.rg, zone, nil); err != nil {
		return mapErr("Zones.Get", err)
	}
	canonical, err := provider.ValidateChanges(changes, func(action provider.Action, which string, rs provider.RecordSet) (provider.RecordSet, error) {
		return validate(action, zone, which, rs)
	})
	if err != nil {
		return err
	}
	if len(canonical) == 0 {
		return nil
	}
	state, err := p.read(ctx, zone, canonical)
	if err != nil {
		return err
	}
	// Check every precondition on a simulated state before writing.
	sim := map[provider.RecordSetKey]*provider.RecordSet{}
	for k, c := range state {
		rs := c.rs
		sim[k] = &rs
	}
	for _, c := range canonical {
		k := c.Key()
		cur := sim[k]
		switch c.Action {
		case provider.ActionCreate:
			if cur != nil {
				return fmt.Errorf("azure: %w: create of %s: the set exists", provider.ErrConflict, k)
			}
			sim[k] = c.After
		case provider.ActionUpdate, provider.ActionDelete:
			if cur == nil || !cur.Equal(*c.Before) {
				return fmt.Errorf("azure: %w: %s %s: current set differs from Before", provider.ErrConflict, c.Action, k)
			}
			sim[k] = c.After
			if c.Action == provider.ActionDelete {
				delete(sim, k)
			}
		}
	}
	etags := map[provider.RecordSetKey]string{}
	for k, c := range state {
		etags[k] = c.etag
	}
	for i, c := range canonical {
		if err := p.write(ctx, zone, c, etags); err != nil {
			if i > 0 {
				return fmt.Errorf("change %d of %d (earlier changes applied): %w", i+1, len(canonical), err)
			}
			return err
		}
	}
	return nil
}

// read returns the current sets (with ETags) of the changes' keys.
func (p *Provider) read(ctx context.Context, zone string, changes []provider.Change) (map[provider.RecordSetKey]current, error) {
	keys := map[provider.RecordSetKey]bool{}
	for _, c := range changes {
		keys[c.Key()] = true
	}
	if len(keys) > getThreshold {
		m, _, err := p.listRaw(ctx, zone)
		return m, err
	}
	m := map[provider.RecordSetKey]current{}
	for k := range keys {
		resp, err := p.sets.Get(ctx, p.rg, zone, relName(k.Name, zone), armdns.RecordType(k.Type), nil)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, mapErr("RecordSets.Get", err)
		}
		if rs, ok := fromSet(&resp.RecordSet, zone); ok {
			m[k] = current{rs: rs, etag: deref(resp.Etag)}
		}
	}
	return m, nil
}

func (p *Provider) write(ctx context.Context, zone string, c provider.Change, etags map[provider.RecordSetKey]string) error {
	k := c.Key()
	rel, rtype := relName(k.Name, zone), armdns.RecordType(k.Type)
	if c.Action == provider.ActionDelete {
		etag := etags[k]
		_, err := p.sets.Delete(ctx, p.rg, zone, rel, rtype, &armdns.RecordSetsClientDeleteOptions{IfMatch: &etag})
		delete(etags, k)
		return mapSetErr("RecordSets.Delete", err)
	}
	props, err := toProps(*c.After)
	if err != nil {
		return err
	}
	opts := &armdns.RecordSetsClientCreateOrUpdateOptions{}
	if c.Action == provider.ActionCreate {
		opts.IfNoneMatch = toPtr("*")
	} else {
		opts.IfMatch = toPtr(etags[k])
	}
	resp, err := p.sets.CreateOrUpdate(ctx, p.rg, zone, rel, rtype, armdns.RecordSet{Properties: props}, opts)
	if err != nil {
		return mapSetErr("RecordSets.CreateOrUpdate", err)
	}
	etags[k] = deref(resp.Etag)
	return nil
}

// mapSetErr is mapErr for record-set writes: 404 there means the zone is
// gone.
func mapSetErr(op string, err error) error { return mapErr(op, err) }
