package publish

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// ZonePlan is the plan of one usable zone.
type ZonePlan struct {
	Zone     *dnsv1.DNSZone
	Writer   *zonewriter.Writer
	Snapshot *plan.Snapshot
	Result   plan.Result
}

// Planner plans an object's record sets zone by zone. Its fields are read-only.
type Planner struct {
	Providers *factory.Factory
	Writers   *zonewriter.Set
}

// Plan computes the plan of every usable zone of a, in zone-key order, for contributor self
// under mode. With release the object wants nothing: every record it holds is planned for
// removal. waiting lists zones that should receive endpoints but are not usable yet (no zone ID
// or not ZoneAvailable). Errors wrap factory.ErrProviderNotFound, provider errors from the
// zone's snapshot read, or API read errors.
func (p *Planner) Plan(ctx context.Context, self registry.Contributor, mode plan.Mode, a *Assignment, release bool, defaultTTL int64) (plans []ZonePlan, waiting []string, _ error) {
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
		if z.Status.ZoneID == "" || !status.IsTrue(z.Status.Conditions, dnsv1.ConditionZoneAvailable) {
			if len(desired) > 0 {
				waiting = append(waiting, fmt.Sprintf("DNSZone %s (%s) to be available", k, z.Spec.Zone))
			}
			continue
		}
		resolved, err := p.Providers.Resolve(ctx, z.Namespace, z.Spec.ProviderRef.Name)
		if err != nil {
			if len(desired) > 0 {
				return nil, nil, fmt.Errorf("zone %s: %w", z.Spec.Zone, err)
			}
			continue
		}
		w := p.Writers.For(zonewriter.Key{Account: resolved.Account, ZoneID: z.Status.ZoneID}, resolved.Provider)
		snap, err := w.Snapshot(ctx, z.Spec.Zone)
		if err != nil {
			if len(desired) == 0 && errors.Is(err, provider.ErrZoneNotFound) {
				continue
			}
			return nil, nil, fmt.Errorf("zone %s: %w", z.Spec.Zone, err)
		}
		res := plan.Compute(plan.Input{
			Zone: z.Spec.Zone, Self: self, Mode: mode,
			Desired: desired, Snapshot: snap, DefaultTTL: defaultTTL,
		})
		plans = append(plans, ZonePlan{Zone: z, Writer: w, Snapshot: snap, Result: res})
	}
	return plans, waiting, nil
}

// StatusPlan summarises records (the plan's record changes, registry changes left out) for
// status: counts of every action and at most dnsv1.MaxPlanChanges changes.
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
		p.Changes = append(p.Changes, dnsv1.PlanChange{
			Action: string(c.Action), DNSName: rs.Name, RecordType: rs.Type,
			SetIdentifier: rs.SetIdentifier, Targets: rs.Targets, TTL: rs.TTL,
		})
	}
	return p
}
