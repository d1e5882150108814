package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/deps"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// ZonePlan is the plan of one usable zone.
//
// It holds no snapshot of the zone: a plan outlives its Compute while it waits for the zone
// writer's flush, and a snapshot held so would keep every generation of a busy zone's index
// alive while plans wait.
type ZonePlan struct {
	Zone   *dnsv1.DNSZone
	Writer *zonewriter.Writer
	Result plan.Result
	// ServedBy are the zone's name servers for the Served check (provider.Resolved.ServedBy);
	// empty when its provider's serials say nothing. ChangeSync, when set, is the provider's
	// change status, which the check asks instead (provider.Resolved.ChangeSync).
	ServedBy   []string
	ChangeSync provider.ChangeSync
	// SerialMayStay: a write may keep the zone's serial (provider.Resolved.SerialMayStay).
	SerialMayStay bool
}

// Planner plans an object's record sets zone by zone. Its fields are read-only.
type Planner struct {
	Providers deps.Providers
	Writers   deps.Writers
	// Live, when set, is an uncached reader: before an endpoint is reported as in no DNSZone,
	// Run confirms it against the API server (Assignment.Confirm).
	Live client.Reader
	// Policy is the object's write policy (plan.Input.Policy); "" = sync.
	Policy plan.Policy
	// ExternalDNS is external-dns' registry naming and the owner taken over
	// (plan.Input.ExternalDNS); the zero value = default naming, no takeover.
	ExternalDNS plan.ExternalDNS
	// MaxViewAge, when > 0, re-reads a zone whose writer's view is that old or older before
	// planning (zonewriter.Writer.RefreshOlderThan), a time.Duration: Run sets it for an object
	// that retries a conflict (Options.ConflictRetry), so that a holder's registry record
	// removed by another cluster is seen within one retry.
	MaxViewAge time.Duration
}

// Plan computes the plan of every usable zone of a, in zone-key order, for contributor self
// under mode. With release the object is being deleted and wants nothing: every record it holds
// is planned for removal (plan.Input.Release). waiting lists zones that should receive endpoints
// but are not usable yet (no zone ID or not ZoneAvailable, or not cached yet: Assignment.Confirm
// with p.Live, when publishing); with release, the zones whose provider cannot be resolved (their
// records stay), with why. The zones' snapshots are read at once (a zone writer reads its zone
// only when its view is not fresh), so a cold start waits for one read, not one per zone. Errors
// wrap provider.ErrProviderNotFound, provider errors from the zone's snapshot read (the first
// zone's in key order), or API read errors.
func (p *Planner) Plan(ctx context.Context, self registry.Contributor, mode plan.Mode, a *Assignment, release bool, defaultTTL int64) (plans []ZonePlan, waiting []string, _ error) {
	if !release {
		if err := a.Confirm(ctx, p.Live); err != nil {
			return nil, nil, err
		}
		waiting = append(waiting, a.Awaiting...)
	}
	zones, unusable, err := p.usableZones(ctx, a, release)
	if err != nil {
		return nil, nil, err
	}
	waiting = append(waiting, unusable...)
	for _, zt := range zones {
		zt.w.RefreshOlderThan(p.MaxViewAge)
	}
	loadSnapshots(ctx, zones)
	for _, zt := range zones {
		if zt.err != nil {
			if len(zt.desired) == 0 && errors.Is(zt.err, provider.ErrZoneNotFound) {
				continue
			}
			return nil, nil, fmt.Errorf("zone %s: %w", zt.zone.Spec.Zone, zt.err)
		}
		res := plan.Compute(plan.Input{
			Zone: zt.zone.Spec.Zone, Self: self, Mode: mode, Release: release,
			Desired: zt.desired, Snapshot: zt.snap, DefaultTTL: defaultTTL,
			Guest:  zt.zone.Namespace != a.namespace,
			Policy: p.Policy, ExternalDNS: p.ExternalDNS, Capabilities: &zt.caps,
		})
		plans = append(plans, ZonePlan{Zone: zt.zone, Writer: zt.w, Result: res, ServedBy: zt.servedBy, ChangeSync: zt.changeSync, SerialMayStay: zt.serialMayStay})
	}
	return plans, waiting, nil
}

// zoneTask is one usable zone of an assignment: its writer, the object's desired sets there,
// and its snapshot once loaded (or the error of the read).
type zoneTask struct {
	zone    *dnsv1.DNSZone
	desired []provider.RecordSet
	w       *zonewriter.Writer
	caps    provider.Capabilities // the zone's provider's, for plan.Input.Capabilities
	snap    *plan.Snapshot
	err     error
	// servedBy and changeSync are what the Served check asks (ZonePlan's).
	servedBy      []string
	changeSync    provider.ChangeSync
	serialMayStay bool
}

// usableZones returns a's zones that can be planned, in zone-key order, with their writers;
// unusable names those that should receive endpoints and cannot yet (see Plan's waiting). The
// error is the first zone's whose provider cannot be resolved while it should receive endpoints.
func (p *Planner) usableZones(ctx context.Context, a *Assignment, release bool) (zones []zoneTask, unusable []string, _ error) {
	keys := make([]client.ObjectKey, 0, len(a.Zones))
	for k := range a.Zones {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		z := a.Zones[k]
		desired := a.ByZone[k]
		if release {
			desired = nil
		}
		// A release writes to any zone that has a hosted zone, available or not (an SOA check
		// failing at that moment must not leak the records); publishing waits for availability.
		if z.Status.ZoneID == "" || (!release && !meta.IsStatusConditionTrue(z.Status.Conditions, dnsv1.ConditionZoneAvailable)) {
			if len(desired) > 0 {
				unusable = append(unusable, fmt.Sprintf("DNSZone %s (%s) to be available", k, z.Spec.Zone))
			}
			continue
		}
		resolved, err := p.Providers.Resolve(ctx, z.Namespace, z.Spec.ProviderRef.Name)
		if err != nil {
			if len(desired) > 0 {
				return nil, nil, fmt.Errorf("zone %s: %w", z.Spec.Zone, err)
			}
			if release {
				unusable = append(unusable, fmt.Sprintf("DNSZone %s (%s): %v", k, z.Spec.Zone, err))
			}
			continue
		}
		w := p.Writers.For(zonewriter.Key{Account: resolved.Account, ZoneID: z.Status.ZoneID}, resolved.Provider)
		zones = append(zones, zoneTask{zone: z, desired: desired, w: w, caps: resolved.Provider.Capabilities(), servedBy: resolved.ServedBy, changeSync: resolved.ChangeSync,
			serialMayStay: resolved.SerialMayStay})
	}
	return zones, unusable, nil
}

// loadSnapshots reads every zone's snapshot, at most maxZoneWrites at once, and records each
// one's result in its task.
func loadSnapshots(ctx context.Context, zones []zoneTask) {
	sem := make(chan struct{}, maxZoneWrites)
	var wg sync.WaitGroup
	for i := range zones {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			zt := &zones[i]
			zt.snap, zt.err = zt.w.Snapshot(ctx, zt.zone.Spec.Zone)
		})
	}
	wg.Wait()
}

// StatusPlan summarises records (the plan's record changes, registry changes left out) for
// status: counts of every action and at most dnsv1.MaxPlanChanges changes. An Update shows the
// targets and TTL it replaces (oldTargets, oldTTL) beside the new ones; a Delete the targets it
// removes.
func StatusPlan(id string, records []provider.Change) *dnsv1.Plan {
	p := &dnsv1.Plan{ID: id}
	for i, c := range records {
		switch c.Action {
		case provider.ActionCreate:
			p.Counts.Create++
		case provider.ActionUpdate:
			p.Counts.Update++
		case provider.ActionDelete:
			p.Counts.Delete++
		}
		if i >= dnsv1.MaxPlanChanges {
			continue
		}
		rs := c.After
		if rs == nil {
			rs = c.Before
		}
		pc := dnsv1.PlanChange{
			Action: string(c.Action), DNSName: rs.Name, RecordType: rs.Type,
			SetIdentifier: rs.SetIdentifier, Targets: rs.Targets, TTL: rs.TTL,
		}
		if c.Action == provider.ActionUpdate && c.Before != nil {
			pc.OldTargets, pc.OldTTL = c.Before.Targets, c.Before.TTL
		}
		p.Changes = append(p.Changes, pc)
	}
	return p
}

// Union returns the sorted union of two lists of zone keys (status.zones).
func Union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Requests lists objects of list's kind once per query (each a set of ListOptions, typically a
// field index match) and returns one request per distinct object, in the order found. A failed
// list is logged (the context's logger) and skipped: a mapping function has no error to return,
// and the next event or resync catches up. Reads are read-only (UnsafeDisableDeepCopy).
func Requests(ctx context.Context, c client.Reader, list client.ObjectList, queries ...[]client.ListOption) []reconcile.Request {
	seen := map[client.ObjectKey]bool{}
	var out []reconcile.Request
	for _, q := range queries {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l, append(q, client.UnsafeDisableDeepCopy)...); err != nil {
			log.FromContext(ctx).Error(err, "listing objects for a watch event failed; the next event or resync catches up",
				"list", fmt.Sprintf("%T", list))
			continue
		}
		_ = meta.EachListItem(l, func(o runtime.Object) error {
			obj, ok := o.(client.Object)
			if !ok {
				return nil
			}
			if k := client.ObjectKeyFromObject(obj); !seen[k] {
				seen[k] = true
				out = append(out, reconcile.Request{NamespacedName: k})
			}
			return nil
		})
	}
	return out
}
