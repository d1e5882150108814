package publish

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/heartbeat"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/served"
)

// Object is what Run and Release need of a DNSEndpoint or DNSRecord (dnsv1.Publisher): its
// identity, which receives Events, its spec's publishing block, and the status it maintains (the
// publishing block, status.zones and Ready).
type Object = dnsv1.Publisher

// Options are what differs between the two record controllers. Release reads Self, Mode and
// DefaultTTL only.
type Options struct {
	Self       registry.Contributor
	Mode       plan.Mode
	DefaultTTL int64
	// Published is Ready's message when everything is written.
	Published string
	// Resync requeues a published object after this long, a time.Duration; 0 = never.
	Resync time.Duration
	// ConflictRetry, when > 0 and shorter than Resync (or Resync is 0), requeues an object
	// whose names are held by another owner (OwnershipConflict, DoubleClaim) after this long,
	// a time.Duration, and plans that retry against zone views at most this old
	// (Planner.MaxViewAge): a holder deleted in another cluster, or an external-dns claim that
	// goes, is seen within about one retry, without a watch on that cluster. A NotCapable
	// conflict alone is not retried (only a spec change helps).
	ConflictRetry time.Duration
	// Heartbeat, when set, stamps the object's registry record at Heartbeat.RootHost in each
	// zone's changes just before they are written (heartbeat.Stamp): the DNSRecord controller's
	// heartbeat.
	Heartbeat *Heartbeat
	// DeferUnjudged: when a zone the object publishes into has no ZoneAvailable condition yet
	// (the DNSZone controller has not reconciled it once, as in a manager's first sync), Run
	// plans and writes nothing, and its verdict is Deferred; the zone's judgement re-enqueues
	// the object (predicates.ZoneUsabilityChanged). This saves a status write per object.
	DeferUnjudged bool
	// Prepare, when set, is called once Run has chosen the zones and is not deferring, and runs
	// while Run plans and writes; Run waits for it before it returns. The record controllers
	// add their finalizer there (an Update of a copy of the object: Prepare must not read or
	// write the object Run was given), so that a deferred reconcile writes nothing to the API
	// server, and the first write does not wait for the finalizer's round trip (make bench: at
	// 1,000 objects present at start, the finalizer Updates held the first write back by about
	// 1 s). When Prepare fails, Run returns its error; if the object is by then gone or being
	// deleted (read with Planner.Live), its finalizer will never be seen, so Run first releases
	// what it wrote (Release). The window left: a manager that stops between the write and the
	// finalizer, and an object deleted before the next start, leave its records behind.
	Prepare func(context.Context) error
	// Served, when set, is the Served check (docs/served.md): after each successful plan the
	// object's status.served and Served condition say whether every name server answers its
	// last change. Kind names the object's kind for the check's notices ("DNSEndpoint").
	Served Served
	Kind   string
	// Async, when set, makes writes asynchronous: a plan with changes under FullSync is
	// submitted to the zone writers (submitLater) and Run returns at once, Submitted (nothing set
	// in status, no finalizer written yet); the writers' last answer enqueues the object
	// (Inflight.Source), and its next Run plans again, which finds nothing left to write, adds
	// the finalizer (Prepare) and writes status: Published, or the first failed zone's error.
	// While the answers are pending, Run of that object returns Deferred at once, and Release
	// waits for them. An approved DryRun plan is written synchronously.
	Async *Inflight
}

// Heartbeat is the heartbeat a DNSRecord's writes carry (Options.Heartbeat): its registry
// record at RootHost is stamped with At.
type Heartbeat struct {
	RootHost string
	At       time.Time
}

// stamp returns changes as they are written: with the heartbeat stamped, when opts has one.
func (opts Options) stamp(changes []provider.Change) []provider.Change {
	if opts.Heartbeat == nil {
		return changes
	}
	return heartbeat.Stamp(changes, opts.Self, opts.Heartbeat.RootHost, opts.Heartbeat.At)
}

// Outcome is what one Run found and did.
type Outcome struct {
	Assignment *Assignment
	// Plans are the usable zones' plans (nil when planning failed).
	Plans []ZonePlan
	// Verdict is how far Run went.
	Verdict Verdict
}

// Verdict is how far one Run went, the one thing a controller reads of it besides its plans.
type Verdict int

const (
	// NotWritten: Run set status, and the object's plans are not all in the provider: its
	// strategy is Disabled, a DryRun plan awaits approval, or planning or a write failed.
	NotWritten Verdict = iota
	// Deferred: Run planned and set nothing, and the caller writes no status: a zone of the
	// object is not judged yet (Options.DeferUnjudged), or the zone writers have not all
	// answered its last submission (Options.Async).
	Deferred
	// Submitted: Run handed the plans' changes to the zone writers (Options.Async) and set
	// nothing; the caller writes no status, and the last writer's answer enqueues the object.
	Submitted
	// Written: every plan is in the provider, and something is not clean: a conflict, or a zone
	// missing, denied or waited for.
	Written
	// Published: every plan is in the provider, and the object's records are all it asked for.
	Published
)

// String is the verdict's name, as its constant spells it.
func (v Verdict) String() string {
	switch v {
	case NotWritten:
		return "NotWritten"
	case Deferred:
		return "Deferred"
	case Submitted:
		return "Submitted"
	case Written:
		return "Written"
	case Published:
		return "Published"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// SkipsStatus reports whether the caller writes no status after this Run: Deferred or
// Submitted.
func (v Verdict) SkipsStatus() bool { return v == Deferred || v == Submitted }

// deferredRequeue re-plans a deferred object even if no zone event comes.
const deferredRequeue = 5 * time.Second

// Run is the reconcile body both record controllers share (docs/api.md, "DNSEndpoint"): choose
// zones, plan each, apply under FullSync or an approved DryRun plan, keep status.zones,
// status.plan and status.appliedPlan, and set Ready with its reason. The error is for the
// controller's back-off; conflicts with a concurrent write requeue at once.
func (p *Planner) Run(ctx context.Context, c client.Reader, rec record.EventRecorder, o Object, opts Options) (Outcome, ctrl.Result, error) {
	ps := o.PublishingSpec()
	if opts.Async != nil {
		// An object of this name was deleted (Inflight.Gone) and is back: the zones the old one
		// held are planned too, so that what it left where the new one publishes nothing goes.
		key := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
		if zones := opts.Async.goneZones(key); len(zones) > 0 {
			o.SetHeldZones(Union(o.HeldZones(), zones))
		}
		// The zones of the last submission, answered and not yet recorded in status.zones, are
		// planned too: this Run may submit a later change instead of recording that one, and
		// what it wrote there goes if the later change publishes nothing there.
		if zones := opts.Async.answeredZones(key); len(zones) > 0 {
			o.SetHeldZones(Union(o.HeldZones(), zones))
		}
	}
	if ps.Strategy == dnsv1.StrategyDisabled {
		notReady(o, opts)(false, dnsv1.ReasonDisabled, "strategy is Disabled: nothing is planned or written")
		return Outcome{}, ctrl.Result{}, nil
	}
	// The zones whose last change status.served shows not served yet are planned too (a zone
	// the object left: its removal is judged until it is served).
	a, err := Assign(ctx, c, o.GetNamespace(), ps.ZoneRef, ps.Endpoints, Union(o.HeldZones(), openServed(o)), opts.DefaultTTL)
	if err != nil {
		return Outcome{}, ctrl.Result{}, err
	}
	out := Outcome{Assignment: a}
	if opts.DeferUnjudged && a.unjudged() {
		out.Verdict = Deferred
		return out, ctrl.Result{RequeueAfter: deferredRequeue}, nil
	}
	if opts.Async != nil {
		return p.runAsync(ctx, c, rec, o, opts, out)
	}
	if opts.Prepare == nil {
		return p.publish(ctx, rec, o, opts, out, applyNow{})
	}
	prepared := make(chan error, 1)
	go func() { prepared <- opts.Prepare(ctx) }()
	out, res, err := p.publish(ctx, rec, o, opts, out, applyNow{})
	if perr := <-prepared; perr != nil {
		return p.unprepared(ctx, c, rec, o, opts, out, perr)
	}
	return out, res, err
}

// runAsync is Run with Options.Async: while o's submission is pending it does nothing; else it
// publishes through the zone writers (submitLater), which either submits (nothing more until
// the answers) or, with nothing left to write, adds the finalizer (Prepare) and returns the
// status to write, reading the answers of the last submission (prev) for the Served check and
// for a failure to report.
func (p *Planner) runAsync(ctx context.Context, c client.Reader, rec record.EventRecorder, o Object, opts Options, out Outcome) (Outcome, ctrl.Result, error) {
	key := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	prev, state := opts.Async.take(key)
	if state == inflightPending {
		out.Verdict = Deferred
		return out, ctrl.Result{}, nil
	}
	out, res, err := p.publish(ctx, rec, o, opts, out, submitLater{table: opts.Async, prev: prev})
	if out.Verdict.SkipsStatus() || opts.Prepare == nil {
		return out, res, err
	}
	if perr := opts.Prepare(ctx); perr != nil {
		return p.unprepared(ctx, c, rec, o, opts, out, perr)
	}
	return out, res, err
}

// unprepared ends a Run whose Prepare failed with perr. If the object is gone or being deleted
// (Planner.Live says so), what Run may have written is released first, since no finalizer will
// bring the object back to do it; otherwise the records stay, and the next reconcile (perr goes
// to the controller's back-off) prepares again.
func (p *Planner) unprepared(ctx context.Context, c client.Reader, rec record.EventRecorder, o Object, opts Options, out Outcome, perr error) (Outcome, ctrl.Result, error) {
	if p.Live == nil {
		return out, ctrl.Result{}, perr
	}
	live, ok := o.DeepCopyObject().(client.Object)
	if !ok {
		return out, ctrl.Result{}, perr
	}
	err := p.Live.Get(ctx, client.ObjectKeyFromObject(live), live)
	if err == nil && live.GetDeletionTimestamp() == nil || err != nil && !apierrors.IsNotFound(err) {
		return out, ctrl.Result{}, perr
	}
	if done, rerr := p.Release(ctx, c, rec, o, opts); rerr != nil || !done {
		return out, ctrl.Result{}, errors.Join(perr, fmt.Errorf("release the records of an object deleted before its finalizer was added (done %v): %w", done, rerr))
	}
	log.FromContext(ctx).Info("object deleted before its finalizer was added; its records were released")
	out.Verdict = NotWritten
	return out, ctrl.Result{}, perr
}

// publish is Run's second half: plan each zone of out.Assignment, commit the plans through c
// unless the strategy holds them, and give the verdict (status.plan, status.zones, Served,
// Ready and out.Verdict).
func (p *Planner) publish(ctx context.Context, rec record.EventRecorder, o Object, opts Options, out Outcome, c committer) (Outcome, ctrl.Result, error) {
	a, st := out.Assignment, o.PublishingStatus()
	plans, waiting, err := p.forRetry(o, opts).Plan(ctx, opts.Self, opts.Mode, a, false, opts.DefaultTTL)
	if err != nil {
		res, err := failed(notReady(o, opts), err)
		return out, res, err
	}
	out.Plans = plans
	sum := summarise(plans)
	spec, _ := json.Marshal(o.PlanSpec())
	id := plan.ID(sum.records, spec)
	st.Plan = StatusPlan(id, sum.records)
	prevApplied := st.AppliedPlan
	apply := approve(rec, o, id, len(sum.records))
	var wrote map[string]zoneWrite
	if apply {
		done := c.commit(ctx, o, opts, plans)
		unsure(o, opts, plans, done.unsure, time.Now())
		switch {
		case done.submitted:
			out.Verdict = Submitted
			return out, ctrl.Result{}, nil
		case done.err != nil:
			if done.rest != nil {
				// status.plan shows what remains: the records of the zones whose write failed.
				st.AppliedPlan, st.Plan = prevApplied, StatusPlan(plan.ID(*done.rest, spec), *done.rest)
			}
			res, err := failed(notReady(o, opts), done.err)
			return out, res, err
		}
		wrote, out.Verdict = done.wrote, Written
		allWritten(o, a, spec, len(waiting) == 0)
	}
	r := readiness(p, opts, a, sum, waiting, !apply && len(sum.records) > 0, id)
	setServed(ctx, o, opts, plans, a.Zones, wrote, r.notWritten(), time.Now())
	setReady(o, r.ok, r.reason, r.msg)
	if out.Verdict == Written && len(sum.conflicts) == 0 && len(waiting) == 0 && a.Missing == "" && len(a.Denied) == 0 {
		out.Verdict = Published
	}
	return out, ctrl.Result{RequeueAfter: cmp.Or(r.requeue, requeueAfter(plans, opts))}, nil
}

// forRetry is the planner for o: one that plans against zone views at most
// opts.ConflictRetry old when o retries a conflict (retryingConflict), else p.
func (p *Planner) forRetry(o Object, opts Options) *Planner {
	if !retryingConflict(o) {
		return p
	}
	q := *p
	q.MaxViewAge = opts.ConflictRetry
	return &q
}

// approve reports whether this reconcile writes the plan id (of changes record changes): under
// any strategy but DryRun, always; under DryRun only when spec.approvedPlan names it and it is
// not applied yet, and then status.appliedPlan takes id and an Event says so.
func approve(rec record.EventRecorder, o Object, id string, changes int) bool {
	ps, st := o.PublishingSpec(), o.PublishingStatus()
	if ps.Strategy != dnsv1.StrategyDryRun {
		return true
	}
	if changes == 0 || ps.ApprovedPlan != id || st.AppliedPlan == id {
		return false
	}
	st.AppliedPlan = id
	if rec != nil {
		rec.Eventf(o, corev1.EventTypeNormal, dnsv1.ReasonPlanApproved, "applying approved plan %s (%d changes)", id, changes)
	}
	return true
}

// allWritten records in o's status that everything planned is written: nothing remains in
// status.plan (docs/api.md, "status.plan"), and status.zones names where the object holds
// records: where its endpoints go when every zone was planned (everyZone), else those zones
// added to the ones it held.
func allWritten(o Object, a *Assignment, spec []byte, everyZone bool) {
	o.PublishingStatus().Plan = StatusPlan(plan.ID(nil, spec), nil)
	if everyZone {
		o.SetHeldZones(a.DesiredZones())
		return
	}
	o.SetHeldZones(Union(o.HeldZones(), a.DesiredZones()))
}

// notReady returns the setter of o's Ready condition for a verdict that may be a failure: Ready
// False also sets Served False, NotWritten (notServed).
func notReady(o Object, opts Options) func(ok bool, reason, msg string) {
	return func(ok bool, reason, msg string) {
		setReady(o, ok, reason, msg)
		if !ok {
			notServed(o, opts)
		}
	}
}

// notWritten is the Served message of an object whose Ready is r: "" when Ready is True.
func (r readyState) notWritten() string {
	if r.ok {
		return ""
	}
	return fmt.Sprintf("the last change is not all written: Ready is False (%s): %s", r.reason, r.msg)
}

// ready is a Ready condition to set, and when to plan again instead of the resync (0: the
// resync's).
type readyState struct {
	ok          bool
	reason, msg string
	requeue     time.Duration
}

// readiness is Ready after a plan: a conflict first, then a zone not found, a delegation
// denied, an invalid endpoint, a zone awaited, a plan awaiting approval (unapplied, with its
// id and count of changes), else Published (naming what the policy withheld).
func readiness(p *Planner, opts Options, a *Assignment, sum summary, waiting []string, unapplied bool, id string) readyState {
	conflicts, skipped, changes := sum.conflicts, sum.skipped, len(sum.records)
	switch {
	case len(conflicts) > 0:
		sort.Strings(conflicts)
		return readyState{reason: sum.conflictReason, msg: "not written: " + strings.Join(conflicts, "; ")}
	case a.Missing != "":
		return readyState{reason: dnsv1.ReasonZoneNotFound, msg: a.Missing}
	case len(a.Denied) > 0:
		return readyState{reason: dnsv1.ReasonDelegationNotAllowed, msg: "not published: " + strings.Join(a.Denied, "; ")}
	case len(a.Invalid) > 0:
		return readyState{reason: dnsv1.ReasonInvalidEndpoint, msg: "not published: " + strings.Join(a.Invalid, "; ")}
	case len(waiting) > 0:
		return readyState{reason: dnsv1.ReasonAwaitingZone, msg: "waiting for " + strings.Join(waiting, "; "), requeue: 5 * time.Second}
	case unapplied:
		return readyState{reason: dnsv1.ReasonAwaitingApproval, msg: fmt.Sprintf("DryRun: %d planned changes; set spec.approvedPlan to %s to apply them once", changes, id)}
	case len(skipped) > 0:
		return readyState{ok: true, reason: dnsv1.ReasonPublished, msg: fmt.Sprintf("%s; policy %s withheld %d changes: %s", opts.Published, p.Policy, len(skipped), strings.Join(skipped, ", "))}
	}
	return readyState{ok: true, reason: dnsv1.ReasonPublished, msg: opts.Published}
}

// notServed sets o's Served condition False, NotWritten, from its Ready condition, when the
// object has a Served check (opts.Served) and Ready is not True: the last change is not all
// written, so no name server answers it (docs/served.md). status.served is kept.
func notServed(o Object, opts Options) {
	if opts.Served == nil {
		return
	}
	conds := o.GetConditions()
	r := meta.FindStatusCondition(conds, dnsv1.ConditionReady)
	if r == nil || r.Status == metav1.ConditionTrue {
		return
	}
	status.Set(&conds, o.GetGeneration(), dnsv1.ConditionServed, false, dnsv1.ReasonNotWritten,
		readyState{reason: r.Reason, msg: r.Message}.notWritten())
	o.SetConditions(conds)
}

// retryingConflict reports whether o's Ready says that another owner holds some of its names
// (OwnershipConflict or DoubleClaim): this reconcile retries that conflict.
func retryingConflict(o Object) bool {
	c := meta.FindStatusCondition(o.GetConditions(), dnsv1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionFalse && (c.Reason == dnsv1.ReasonOwnershipConflict || c.Reason == dnsv1.ReasonDoubleClaim)
}

// requeueAfter is when a planned and written object is planned again: opts.ConflictRetry when
// some of its keys are held by another owner (a conflict that may end without any event in this
// cluster) and that is sooner than opts.Resync, else opts.Resync.
func requeueAfter(plans []ZonePlan, opts Options) time.Duration {
	if opts.ConflictRetry <= 0 || (opts.Resync > 0 && opts.Resync <= opts.ConflictRetry) {
		return opts.Resync
	}
	for _, zp := range plans {
		for _, c := range zp.Result.Conflicts {
			if c.Reason == plan.ReasonOwnershipConflict || c.Reason == plan.ReasonDoubleClaim {
				return opts.ConflictRetry
			}
		}
	}
	return opts.Resync
}

// summary is what the plans of one reconcile hold, for status and Ready.
type summary struct {
	records []provider.Change // their record changes, registry changes left out
	// conflicts and skipped are the conflict messages and the policy-withheld changes
	// ("<action> <key>"); conflictReason is the Ready reason of the conflicts.
	conflicts, skipped []string
	conflictReason     string
}

// summarise gathers the plans' record changes, conflict messages and policy-withheld changes,
// and the Ready reason of the conflicts, the one a user must act on first: DoubleClaim when one
// is, else NotCapable (only a spec change helps), else OwnershipConflict.
func summarise(plans []ZonePlan) summary {
	rank := map[string]int{plan.ReasonDoubleClaim: 2, plan.ReasonNotCapable: 1}
	reasons := map[string]string{plan.ReasonDoubleClaim: dnsv1.ReasonDoubleClaim, plan.ReasonNotCapable: dnsv1.ReasonNotCapable}
	sum := summary{conflictReason: dnsv1.ReasonOwnershipConflict}
	best := 0
	for _, zp := range plans {
		sum.records = append(sum.records, zp.Result.Records...)
		for _, c := range zp.Result.Conflicts {
			sum.conflicts = append(sum.conflicts, c.Message)
			if r := rank[c.Reason]; r > best {
				best, sum.conflictReason = r, reasons[c.Reason]
			}
		}
		for _, c := range zp.Result.Skipped {
			sum.skipped = append(sum.skipped, fmt.Sprintf("%s %s", c.Action, c.Before.Key()))
		}
	}
	return sum
}

// setReady sets o's Ready condition for its current generation.
func setReady(o Object, ok bool, reason, msg string) {
	conds := o.GetConditions()
	status.Set(&conds, o.GetGeneration(), dnsv1.ConditionReady, ok, reason, msg)
	o.SetConditions(conds)
}

// failed records a provider or planning error on Ready. Conflicts with a concurrent write are
// retried at once with a fresh view; a change the provider refuses as beyond its capabilities
// (provider.ErrNotCapable: a geo CIDR region on Route 53 or Cloud DNS) is NotCapable, a verdict
// on the spec that only a spec change (or the resync) tries again; the rest go back to the rate
// limiter.
func failed(ready func(bool, string, string), err error) (ctrl.Result, error) {
	switch {
	case errors.Is(err, provider.ErrProviderNotFound), errors.Is(err, provider.ErrZoneNotFound):
		ready(false, dnsv1.ReasonZoneNotFound, err.Error())
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	case errors.Is(err, provider.ErrNotCapable):
		ready(false, dnsv1.ReasonNotCapable, err.Error())
		return ctrl.Result{}, nil
	case errors.Is(err, provider.ErrConflict):
		return ctrl.Result{Requeue: true}, nil
	}
	ready(false, dnsv1.ReasonProviderError, err.Error())
	return ctrl.Result{}, err
}

// Release removes every record opts.Self holds for o, an object being deleted (held: its
// status.zones), in every usable zone, even where a foreign registry record it cannot read sits
// beside one of its records (plan.Input.Release). What it cannot remove, the record sets such a
// record may claim, any other conflict, and the zones whose provider Secret cannot be resolved,
// is named in one Warning Event on o (reason dnsv1.ReasonRecordsKept) and one log line. done
// is false when a concurrent write got in the way, or (Options.Async) the object's last
// submission is not answered yet, and the caller should requeue; a missing provider Secret
// releases nothing and is not an error.
func (p *Planner) Release(ctx context.Context, c client.Reader, rec record.EventRecorder, o Object, opts Options) (done bool, _ error) {
	if opts.Async != nil {
		// Changes still in a writer's queue would land after the release: wait for their
		// answers (which enqueue the object). Answers already in are moot: the release plans
		// against the view that holds what they wrote.
		if _, state := opts.Async.take(types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}); state == inflightPending {
			return false, nil
		}
	}
	ps := o.PublishingSpec()
	a, err := Assign(ctx, c, o.GetNamespace(), ps.ZoneRef, ps.Endpoints, o.HeldZones(), opts.DefaultTTL)
	if err != nil {
		return false, err
	}
	plans, unresolved, err := p.Plan(ctx, opts.Self, opts.Mode, a, true, opts.DefaultTTL)
	if err != nil && !errors.Is(err, provider.ErrProviderNotFound) {
		return false, err
	}
	baseline(ctx, opts, stamped(plans, nil))
	submitted := time.Now()
	errs, answered := applyPlansAt(ctx, plans, nil)
	for _, err := range errs {
		if errors.Is(err, provider.ErrConflict) {
			return false, nil
		}
	}
	if i := firstFailed(errs); i >= 0 {
		return false, fmt.Errorf("remove records from %s: %w", plans[i].Zone.Spec.Zone, errs[i])
	}
	reportLeftBehind(ctx, rec, o, plans, unresolved)
	removed(ctx, o, opts, plans, submitted, answered)
	return true, nil
}

// removed hands a deleted object's removals to the Served check (served.Tracker.Removed: checked
// as any change, logged once served or stale), after forgetting the object's changes. The
// primary's reading runs beside the caller, bounded by the check's timeout: a release does not
// wait for it.
func removed(ctx context.Context, o Object, opts Options, plans []ZonePlan, submitted time.Time, answered []time.Time) {
	if opts.Served == nil {
		return
	}
	ref := served.Ref{Kind: opts.Kind, Key: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}
	opts.Served.Forget(ref)
	ctx = context.WithoutCancel(ctx)
	for i, zp := range plans {
		if zone, checked := servedZone(zp); checked && !answered[i].IsZero() {
			go opts.Served.Removed(ctx, zone, ref, submitted, answered[i])
		}
	}
}

// maxLeftInEvent caps how many left-behind records one Event names with why; the others are
// named by key and zone only (the log line gives every why), so that the Event names every set
// left and stays readable.
const maxLeftInEvent = 10

// reportLeftBehind names what a release left in place, once it is applied: record sets kept for
// an unreadable registry record or another external-dns owner's claim beside them, keys in
// conflict, and zones not reached.
func reportLeftBehind(ctx context.Context, rec record.EventRecorder, obj runtime.Object, plans []ZonePlan, unresolved []string) {
	var left, names []string
	for _, zp := range plans {
		for _, k := range zp.Result.Kept {
			left = append(left, fmt.Sprintf("%s in zone %s (kept: %s)", k.Key, zp.Zone.Spec.Zone, k.Message))
			names = append(names, fmt.Sprintf("%s in zone %s", k.Key, zp.Zone.Spec.Zone))
		}
		for _, k := range zp.Result.Conflicts {
			left = append(left, fmt.Sprintf("%s in zone %s (not released: %s)", k.Key, zp.Zone.Spec.Zone, k.Message))
			names = append(names, fmt.Sprintf("%s in zone %s", k.Key, zp.Zone.Spec.Zone))
		}
	}
	for _, u := range unresolved {
		left = append(left, "every record in "+u)
		names = append(names, "every record in "+u)
	}
	if len(left) == 0 {
		return
	}
	log.FromContext(ctx).Info("deleted object's records left behind; its own registry records were removed where they could be read",
		"reason", dnsv1.ReasonRecordsKept, "left", left)
	if rec == nil {
		return
	}
	msg := strings.Join(left, "; ")
	if len(left) > maxLeftInEvent {
		msg = fmt.Sprintf("%s; and %d more (each with why in the manager log): %s",
			strings.Join(left[:maxLeftInEvent], "; "), len(left)-maxLeftInEvent, strings.Join(names[maxLeftInEvent:], ", "))
	}
	rec.Eventf(obj, corev1.EventTypeWarning, dnsv1.ReasonRecordsKept, "deleted; left behind %d: %s", len(left), msg)
}

// unjudged reports whether a zone that should receive some of the endpoints has no
// ZoneAvailable condition yet: the DNSZone controller has not reconciled it once.
func (a *Assignment) unjudged() bool {
	for k, desired := range a.ByZone {
		z := a.Zones[k]
		if len(desired) > 0 && z != nil && z.DeletionTimestamp.IsZero() &&
			meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionZoneAvailable) == nil {
			return true
		}
	}
	return false
}
