package publish

import (
	"context"
	"fmt"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/types"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// A committer hands an object's zone plans to their zone writers: the one step of publishing
// that writes (docs/design.md, "Publishing"). Its two implementations differ only in when the
// object learns the writers' answer: applyNow waits for it in the reconcile; submitLater
// returns at once, and the answer wakes the object (Inflight).
type committer interface {
	commit(ctx context.Context, o Object, opts Options, plans []ZonePlan) committed
}

// committed is what a commit did.
type committed struct {
	// submitted: the changes went to the zone writers, whose answers are not in yet.
	submitted bool
	// wrote holds, by zone written ("namespace/name"), when its changes were submitted and when
	// its writer answered that the provider holds them.
	wrote map[string]zoneWrite
	// unsure are the zones where the provider may hold a change that no status.served entry
	// carries (a write that failed, or that a failed commit made): unsure marks them.
	unsure []string
	// err is the first failed zone's error, naming it; nil when every zone is written.
	err error
	// rest, with err, are the record changes that remain to write (the failed zones'), for
	// status.plan; nil when the whole plan remains.
	rest *[]provider.Change
}

// applyNow writes the plans and waits for every zone writer's answer (writePlans): the
// DNSRecord controller's commit, and an approved DryRun plan's. before are the zones a previous
// submission wrote (Submission.writes), which the Served check judges as written now.
type applyNow struct {
	before map[string]zoneWrite
}

func (c applyNow) commit(ctx context.Context, _ Object, opts Options, plans []ZonePlan) committed {
	wrote := maps.Clone(c.before)
	if wrote == nil {
		wrote = map[string]zoneWrite{}
	}
	i, errs := writePlans(ctx, opts, plans, wrote)
	if i < 0 {
		return committed{wrote: wrote}
	}
	rest := remaining(plans, errs)
	return committed{unsure: attempted(plans, wrote, errs), rest: &rest,
		err: fmt.Errorf("zone %s: %w", plans[i].Zone.Spec.Zone, errs[i])}
}

// submitLater submits a FullSync object's changes to the zone writers (Inflight.submit) and
// returns; the last writer's answer enqueues the object, whose next reconcile plans again and
// finds nothing left to write, or reports the answers' failure: the DNSEndpoint controller's
// commit. prev is the object's last submission, answered (nil when none). A plan the strategy
// does not write in full (an approved DryRun plan) is written at once (applyNow).
type submitLater struct {
	table *Inflight
	prev  *Submission
}

func (c submitLater) commit(ctx context.Context, o Object, opts Options, plans []ZonePlan) committed {
	zones := stamped(plans, opts.stamp)
	var unsure []string
	failedBefore := c.prev != nil && c.prev.Err() != nil
	if failedBefore {
		unsure = c.prev.Zones()
	}
	switch {
	case len(zones) > 0 && failedBefore:
		// The last submission failed and changes remain: its error goes to the controller's
		// back-off (or re-plans at once after a conflict), status.plan shows them all.
		return committed{unsure: unsure, err: c.prev.Err()}
	case len(zones) > 0 && o.PublishingSpec().Strategy == dnsv1.StrategyFullSync:
		baseline(ctx, opts, zones)
		c.table.submit(ctx, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}, o.GetGeneration(), zones)
		return committed{submitted: true}
	}
	now := applyNow{}
	if c.prev != nil {
		now.before = c.prev.writes()
	}
	done := now.commit(ctx, o, opts, plans)
	done.unsure = append(unsure, done.unsure...)
	return done
}

// writePlans writes plans synchronously (applyPlansAt), the primaries of their checked zones read
// just before (baseline), and records in wrote, per zone written, when the write was submitted
// and when its writer answered. It returns the first failed plan's index (-1 when every zone was
// written) and every plan's error.
func writePlans(ctx context.Context, opts Options, plans []ZonePlan, wrote map[string]zoneWrite) (int, []error) {
	baseline(ctx, opts, stamped(plans, opts.stamp))
	submitted := time.Now()
	errs, answered := applyPlansAt(ctx, plans, opts.stamp)
	for i, zp := range plans {
		if !answered[i].IsZero() {
			wrote[zoneKey(zp)] = zoneWrite{submitted: submitted, at: answered[i]}
		}
	}
	return firstFailed(errs), errs
}

// maxZoneWrites bounds how many of one object's zones are read at once (Plan). Each read is a
// zone writer's view, loaded once for every planner; the provider calls themselves are bounded
// by the writers, not here.
const maxZoneWrites = 16

// applyPlans submits each plan's changes (through stamp when set) to its zone's writer, every
// zone at once, then waits for all of them, from this goroutine (zonewriter.Writer.Submit): an
// object spanning n zones waits for one batch of each, not n batches one after another, and
// holds no goroutine per zone while it waits. Each zone's changes, its registry records with
// its record sets, stay one submission in the planner's order, so the writer applies them in
// one provider call; zones have no order among themselves (each plan reads and writes only its
// own zone). errs[i] is plans[i]'s error from its writer, nil once written; a zone's failure
// does not stop the others.
func applyPlans(ctx context.Context, plans []ZonePlan, stamp func([]provider.Change) []provider.Change) (errs []error) {
	errs, _ = applyPlansAt(ctx, plans, stamp)
	return errs
}

// applyPlansAt is applyPlans, and also returns when each zone's writer answered that the
// provider holds its changes (zero for a zone with nothing to write, or whose write failed):
// the time the Served check reads the primary's serial after (served.Tracker.Written).
func applyPlansAt(ctx context.Context, plans []ZonePlan, stamp func([]provider.Change) []provider.Change) (errs []error, answered []time.Time) {
	errs, answered = make([]error, len(plans)), make([]time.Time, len(plans))
	waits := make([]func() error, len(plans))
	for i, zp := range plans {
		changes := zp.Result.Changes
		if stamp != nil {
			changes = stamp(changes)
		}
		if len(changes) == 0 {
			continue
		}
		waits[i] = zp.Writer.Submit(ctx, changes)
	}
	for i, wait := range waits {
		if wait != nil {
			if errs[i] = wait(); errs[i] == nil {
				answered[i] = time.Now()
			}
		}
	}
	return errs, answered
}

// stamped returns each plan's changes to write (through stamp when set), for the plans that
// have any, in plan order, with their zone's key.
func stamped(plans []ZonePlan, stamp func([]provider.Change) []provider.Change) []zoneChanges {
	var out []zoneChanges
	for _, zp := range plans {
		changes := zp.Result.Changes
		if stamp != nil {
			changes = stamp(changes)
		}
		if len(changes) > 0 {
			out = append(out, zoneChanges{zone: zoneKey(zp), plan: zp, changes: changes})
		}
	}
	return out
}

// zoneKey is zp's DNSZone as status.zones spells it: "namespace/name".
func zoneKey(zp ZonePlan) string {
	return types.NamespacedName{Namespace: zp.Zone.Namespace, Name: zp.Zone.Name}.String()
}

// firstFailed returns the index of the first non-nil error of errs, in plan (zone-key) order,
// or -1 when every zone was written.
func firstFailed(errs []error) int {
	for i, err := range errs {
		if err != nil {
			return i
		}
	}
	return -1
}

// remaining returns the record changes of the plans whose write failed (errs[i] non-nil), in
// order.
func remaining(plans []ZonePlan, errs []error) []provider.Change {
	var out []provider.Change
	for i, zp := range plans {
		if errs[i] != nil {
			out = append(out, zp.Result.Records...)
		}
	}
	return out
}
