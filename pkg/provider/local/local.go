package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// FaultPoint names a point in an operation where Options.FaultHook runs.
type FaultPoint string

// The fault points. "after" points run once the effect is persisted, so an
// error returned there looks, to the caller, like a crash right after the
// write: the write happened, the call failed.
const (
	FaultBeforeZoneCreate   FaultPoint = "before-zone-create"
	FaultAfterZoneCreate    FaultPoint = "after-zone-create"
	FaultBeforeApplyChanges FaultPoint = "before-apply-changes" // once per batch
	FaultAfterApplyChanges  FaultPoint = "after-apply-changes"  // once per batch
	FaultBeforeZoneDelete   FaultPoint = "before-zone-delete"
	FaultAfterZoneDelete    FaultPoint = "after-zone-delete"
)

// FaultHook is called at each FaultPoint with the zone name (canonical). A
// non-nil error aborts the operation at that point and is returned to the
// caller, wrapped. It must be safe for concurrent use.
type FaultHook func(ctx context.Context, point FaultPoint, zone string) error

// Options configures a Provider.
type Options struct {
	// FaultHook, when set, is called at every FaultPoint. Tests only.
	FaultHook FaultHook
	// Ready, when set, gates every call: while it returns an error (a store still loading from
	// its zone objects, zonestore.Syncer.Ready), calls fail with ErrNotReady wrapping it,
	// rather than report a zone that is not loaded yet as missing.
	Ready func() error
}

// ErrNotReady: the store is not loaded yet (Options.Ready); retry later.
var ErrNotReady = errors.New("the local zone store is not loaded yet")

// Provider implements provider.Provider over a zonedb.Store.
type Provider struct {
	store *zonedb.Store
	hook  FaultHook
	ready func() error
}

var _ provider.Provider = (*Provider)(nil)

// New returns a provider writing to store. New zones get NS ns1.<zone> with
// glue to the store's zonedb.StoreOptions.NameServerAddrs (the embedded
// server's listen IP).
func New(store *zonedb.Store, opts Options) *Provider {
	return &Provider{store: store, hook: opts.FaultHook, ready: opts.Ready}
}

// check returns ctx's error, or ErrNotReady while Options.Ready fails.
func (p *Provider) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.ready != nil {
		if err := p.ready(); err != nil {
			return fmt.Errorf("%w: %w", ErrNotReady, err)
		}
	}
	return nil
}

// ZoneID returns the ID of the zone with that name: the canonical zone name
// itself ("c1.example.test"), stable across restarts and re-creation.
func ZoneID(zoneName string) string { return dnswire.Dotless(zoneName) }

// Capabilities: unlimited atomic batches, conditional writes, weighted
// routing, zone creation and online signing.
func (p *Provider) Capabilities() provider.Capabilities {
	return provider.Capabilities{
		BatchWrites:       true,
		ConditionalWrites: true,
		WeightedRouting:   true,
		GeoRouting:        true,
		CreateZones:       true,
		SignsOnline:       true,
	}
}

func (p *Provider) fault(ctx context.Context, point FaultPoint, zone string) error {
	if p.hook == nil {
		return nil
	}
	if err := p.hook(ctx, point, zone); err != nil {
		return fmt.Errorf("fault at %s: %w", point, err)
	}
	return nil
}

// EnsureZone creates the zone, or returns it when it exists with the same
// caller reference (tags are not updated then). A zone of that name with
// another caller reference, or none (a hand-written zone file), gives
// provider.ErrZoneConflict. An empty caller reference or a bad name gives
// provider.ErrInvalidChange.
func (p *Provider) EnsureZone(ctx context.Context, spec provider.ZoneSpec) (provider.Zone, error) {
	if err := p.check(ctx); err != nil {
		return provider.Zone{}, err
	}
	name, err := provider.ValidateName(spec.Name)
	if err != nil {
		return provider.Zone{}, fmt.Errorf("ensure zone %s: %w", spec.Name, err)
	}
	if strings.HasPrefix(name, "*") || spec.CallerReference == "" {
		return provider.Zone{}, fmt.Errorf("ensure zone %s: %w: zone names cannot be wildcards and a caller reference is required", name, provider.ErrInvalidChange)
	}
	if err := p.fault(ctx, FaultBeforeZoneCreate, name); err != nil {
		return provider.Zone{}, fmt.Errorf("ensure zone %s: %w", name, err)
	}
	zi, err := p.store.CreateZone(name, zonedb.ZoneMeta{ID: ZoneID(name), CallerReference: spec.CallerReference, Tags: maps.Clone(spec.Tags)})
	switch {
	case errors.Is(err, zonedb.ErrZoneExists):
		zi, err = p.store.Zone(name)
		if err != nil {
			return provider.Zone{}, fmt.Errorf("ensure zone %s: %w", name, mapErr(err))
		}
		if zi.Meta.CallerReference != spec.CallerReference {
			return provider.Zone{}, fmt.Errorf("ensure zone %s: %w (existing caller reference %q)", name, provider.ErrZoneConflict, zi.Meta.CallerReference)
		}
		return toZone(zi), nil
	case err != nil:
		return provider.Zone{}, fmt.Errorf("ensure zone %s: %w", name, mapErr(err))
	}
	if err := p.fault(ctx, FaultAfterZoneCreate, name); err != nil {
		return provider.Zone{}, fmt.Errorf("ensure zone %s: %w", name, err)
	}
	return toZone(zi), nil
}

// GetZone returns the zone with that ID (see ZoneID), or
// provider.ErrZoneNotFound.
func (p *Provider) GetZone(ctx context.Context, id string) (provider.Zone, error) {
	if err := p.check(ctx); err != nil {
		return provider.Zone{}, err
	}
	zi, err := p.zone(id)
	if err != nil {
		return provider.Zone{}, fmt.Errorf("get zone %s: %w", id, err)
	}
	return toZone(zi), nil
}

// zone looks up an ID, which must be canonical.
func (p *Provider) zone(id string) (zonedb.ZoneInfo, error) {
	if id == "" || ZoneID(id) != id {
		return zonedb.ZoneInfo{}, provider.ErrZoneNotFound
	}
	zi, err := p.store.Zone(id)
	if err != nil {
		return zonedb.ZoneInfo{}, mapErr(err)
	}
	return zi, nil
}

// ListZones returns every zone of the store, sorted by name.
func (p *Provider) ListZones(ctx context.Context) ([]provider.Zone, error) {
	if err := p.check(ctx); err != nil {
		return nil, err
	}
	infos := p.store.Zones()
	out := make([]provider.Zone, 0, len(infos))
	for _, zi := range infos {
		out = append(out, toZone(zi))
	}
	return out, nil
}

// DeleteZone removes the zone, its records and its files at once (the store
// deletes atomically, so there is no separate record deletion).
func (p *Provider) DeleteZone(ctx context.Context, id string) error {
	if err := p.check(ctx); err != nil {
		return err
	}
	zi, err := p.zone(id)
	if err != nil {
		return fmt.Errorf("delete zone %s: %w", id, err)
	}
	name := dnswire.Dotless(zi.Origin)
	if err := p.fault(ctx, FaultBeforeZoneDelete, name); err != nil {
		return fmt.Errorf("delete zone %s: %w", id, err)
	}
	if err := p.store.DeleteZone(zi.Origin); err != nil {
		return fmt.Errorf("delete zone %s: %w", id, mapErr(err))
	}
	if err := p.fault(ctx, FaultAfterZoneDelete, name); err != nil {
		return fmt.Errorf("delete zone %s: %w", id, err)
	}
	return nil
}

// ListRecordSets returns every set of the zone, the SOA first, in canonical
// form; ProviderSpecific is what was written.
func (p *Provider) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	if err := p.check(ctx); err != nil {
		return nil, err
	}
	if _, err := p.zone(zoneID); err != nil {
		return nil, fmt.Errorf("list record sets of %s: %w", zoneID, err)
	}
	sets, err := p.store.RRSets(zoneID)
	if err != nil {
		return nil, fmt.Errorf("list record sets of %s: %w", zoneID, mapErr(err))
	}
	out := make([]provider.RecordSet, 0, len(sets))
	for _, rs := range sets {
		out = append(out, fromRRSet(rs))
	}
	return out, nil
}

// change is a validated provider.Change with its store form.
type change struct {
	action provider.Action
	key    zonedb.SetKey
	before *provider.RecordSet // canonical
	after  *zonedb.RRSet
}

// ApplyChanges applies the changes as one atomic, conditional store transaction (one request;
// the capabilities have no limits, so the guard never splits): a Create of an existing set, or an
// Update/Delete whose Before differs from the current set, gives provider.ErrConflict and nothing
// is applied. Input is validated before anything is written (provider.ValidateChanges and
// checkSet, provider.ErrInvalidChange): canonical names inside the zone, no SOA, Update keeping
// its key, at least one target in After. No changes: nothing is done (no fault point runs).
func (p *Provider) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	if err := p.check(ctx); err != nil {
		return err
	}
	zi, err := p.zone(zoneID)
	if err != nil {
		return fmt.Errorf("apply changes to %s: %w", zoneID, err)
	}
	if len(changes) == 0 {
		return nil
	}
	zoneName := dnswire.Dotless(zi.Origin)
	prepared, err := provider.PrepareChanges(zoneID, changes, func(_ provider.Action, _ string, rs provider.RecordSet) (provider.RecordSet, error) {
		return checkSet(zoneName, rs)
	}, prepare)
	if err != nil {
		return err
	}
	if err := p.fault(ctx, FaultBeforeApplyChanges, zoneName); err != nil {
		return fmt.Errorf("apply changes to %s: %w", zoneID, err)
	}
	if err := p.store.Update(zi.Origin, func(tx *zonedb.Tx) error { return applyTx(tx, prepared) }); err != nil {
		return fmt.Errorf("apply changes to %s: %w", zoneID, mapErr(err))
	}
	if err := p.fault(ctx, FaultAfterApplyChanges, zoneName); err != nil {
		return fmt.Errorf("apply changes to %s: %w", zoneID, err)
	}
	return nil
}

// applyTx runs prepared changes inside the store's transaction.
func applyTx(tx *zonedb.Tx, changes []change) error {
	for _, c := range changes {
		cur, exists := tx.Get(c.key)
		switch c.action {
		case provider.ActionCreate:
			if exists {
				return fmt.Errorf("%w: create %s: the set exists", provider.ErrConflict, c.key)
			}
		case provider.ActionUpdate, provider.ActionDelete:
			if !exists {
				return fmt.Errorf("%w: %s %s: the set does not exist", provider.ErrConflict, strings.ToLower(string(c.action)), c.key)
			}
			if got := fromRRSet(cur); !got.Equal(*c.before) {
				return fmt.Errorf("%w: %s %s: current set %s differs from Before %s", provider.ErrConflict,
					strings.ToLower(string(c.action)), c.key, got, c.before)
			}
		}
		if c.action == provider.ActionDelete {
			tx.Delete(c.key)
			continue
		}
		if err := tx.Put(*c.after); err != nil {
			return err
		}
	}
	return nil
}

// checkSet is the SideCheck of the embedded server: canonical, inside zone, not the SOA (the
// store's).
func checkSet(zone string, rs provider.RecordSet) (provider.RecordSet, error) {
	c, err := provider.CanonicalRecordSet(rs)
	if err != nil {
		return provider.RecordSet{}, err
	}
	if err := provider.CheckInZone(zone, c, "the server"); err != nil {
		return provider.RecordSet{}, err
	}
	return c, nil
}

// prepare converts one validated change (its sides checked by checkSet) to the store's form; an
// After without targets is provider.ErrInvalidChange.
func prepare(ch provider.Change) (change, error) {
	out := change{action: ch.Action, before: ch.Before}
	key := ch.Key()
	if after := ch.After; after != nil {
		if len(after.Targets) == 0 {
			return change{}, fmt.Errorf("%w: %s has no targets (delete it instead)", provider.ErrInvalidChange, after.Key())
		}
		rs, err := toRRSet(*after)
		if err != nil {
			return change{}, err
		}
		out.after = &rs
	}
	out.key = zonedb.SetKey{Name: dnswire.Fqdn(key.Name), Type: dns.StringToType[key.Type], SetIdentifier: key.SetIdentifier}
	return out, nil
}

func toRRSet(rs provider.RecordSet) (zonedb.RRSet, error) {
	rrs, err := provider.ToRRs(rs)
	if err != nil {
		return zonedb.RRSet{}, err
	}
	return zonedb.RRSet{
		Name:          dnswire.Fqdn(rs.Name),
		Type:          dns.StringToType[rs.Type],
		TTL:           uint32(rs.TTL),
		SetIdentifier: rs.SetIdentifier,
		Weight:        rs.Weight,
		Labels:        maps.Clone(rs.ProviderSpecific),
		RRs:           rrs,
	}, nil
}

func fromRRSet(rs zonedb.RRSet) provider.RecordSet {
	out := provider.RecordSet{
		Name:             dnswire.Dotless(rs.Name),
		Type:             dns.TypeToString[rs.Type],
		TTL:              int64(rs.TTL),
		SetIdentifier:    rs.SetIdentifier,
		Weight:           rs.Weight,
		ProviderSpecific: maps.Clone(rs.Labels),
	}
	for _, rr := range rs.RRs {
		out.Targets = append(out.Targets, provider.TargetFromRR(rr))
	}
	return out
}

func toZone(zi zonedb.ZoneInfo) provider.Zone {
	z := provider.Zone{
		ID:              ZoneID(zi.Origin),
		Name:            dnswire.Dotless(zi.Origin),
		CallerReference: zi.Meta.CallerReference,
		Tags:            maps.Clone(zi.Meta.Tags),
	}
	for _, ns := range zi.NameServers {
		z.NameServers = append(z.NameServers, dnswire.Dotless(ns))
	}
	return z
}

// mapErr translates store errors into the provider's sentinels, keeping the
// original in the chain.
func mapErr(err error) error {
	switch {
	case errors.Is(err, zonedb.ErrZoneNotFound):
		return fmt.Errorf("%w: %w", provider.ErrZoneNotFound, err)
	case errors.Is(err, zonedb.ErrInvalidRRSet), errors.Is(err, zonedb.ErrInvalidZone):
		return fmt.Errorf("%w: %w", provider.ErrInvalidChange, err)
	case errors.Is(err, zonedb.ErrStaleVersion):
		// The persisted zone moved on (a leader change): re-read and re-plan, as for a
		// conditional write that lost.
		return fmt.Errorf("%w: %w", provider.ErrConflict, err)
	}
	return err
}
