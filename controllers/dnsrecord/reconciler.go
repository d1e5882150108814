package dnsrecord

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/deps"
	"github.com/dnsplane/dnsplane/controllers/internal/lifecycle"
	"github.com/dnsplane/dnsplane/controllers/internal/notice"
	"github.com/dnsplane/dnsplane/controllers/internal/publish"
	"github.com/dnsplane/dnsplane/controllers/internal/requeue"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/heartbeat"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// Kind is the registry kind of DNSRecord contributors, and the kind the Served check's notices
// name.
const Kind = "DNSRecord"

// Heartbeats is what the controller needs of the heartbeat reporter (*heartbeat.Reporter):
// records to refresh and check every interval.
type Heartbeats interface {
	// Set registers or replaces the target of one DNSRecord; it fails on a malformed target.
	Set(heartbeat.Target) error
	// Remove forgets a DNSRecord by key.
	Remove(key string)
}

// Reconciler reconciles DNSRecords.
type Reconciler struct {
	// ledger, set by SetupWithManager (the manager's APIReader), makes a reconcile read past
	// the cache when the cached copy is not this process's last status write (status.Ledger), so that no reconcile compares its status with
	// one older than its own last write.
	ledger *status.Ledger
	Client client.Client
	// APIReader, when set, reads from the API server: see dnsendpoint.Reconciler.APIReader.
	APIReader client.Reader
	Recorder  record.EventRecorder
	// Providers, Writers and OwnerID: see dnsendpoint.Reconciler.
	Providers deps.Providers
	Writers   deps.Writers
	OwnerID   string
	// Heartbeats, when set, refreshes this manager's heartbeats and re-checks every
	// contributor each --heartbeat-interval; nil = checks only on reconcile.
	Heartbeats Heartbeats
	// Threshold is --heartbeat-threshold: a contributor whose heartbeat is older is failing.
	Threshold time.Duration
	// Clock reads the time of heartbeats and checks; nil = the real clock.
	Clock clock.PassiveClock
	// ResyncInterval re-plans every object this often, a time.Duration; 0 disables.
	ResyncInterval time.Duration
	// ConflictRetryInterval re-plans a record whose names another owner holds this often: see
	// dnsendpoint.Reconciler.ConflictRetryInterval.
	ConflictRetryInterval time.Duration
	// Served and ServedEvents: the Served check and its notices for DNSRecords (see
	// dnsendpoint.Reconciler.Served).
	Served       publish.Served
	ServedEvents <-chan types.NamespacedName
	// MaxConcurrentReconciles bounds the objects reconciled at once; default
	// defaultMaxConcurrentReconciles (256). Reconciles mostly wait in a zone writer's queue (see
	// the DNSEndpoint controller), so this is also the most DNSRecords one write of a zone
	// carries; the rest go in the next.
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups=dnsplane.io,resources=dnsrecords,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=dnsplane.io,resources=dnsrecords/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=dnsplane.io,resources=dnsrecords/finalizers,verbs=update
// +kubebuilder:rbac:groups=dnsplane.io,resources=dnszones,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile publishes one DNSRecord's contribution, or withdraws it when the record is deleted
// (lifecycle.Lifecycle: the read, the finalizer and the status commit around the two phases).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	l := lifecycle.Lifecycle[*dnsv1.DNSRecord]{
		Client: r.Client, Recorder: r.Recorder, Ledger: r.ledger,
		New: func() *dnsv1.DNSRecord { return &dnsv1.DNSRecord{} },
		// The finalizer is added beside the first write: a deferred reconcile (a zone not judged
		// yet) writes nothing to the API server (publish.Options.Prepare).
		Finalizer: dnsv1.FinalizerRecords, FinalizerWrite: lifecycle.WithFirstWrite,
		Status: func(rec *dnsv1.DNSRecord) (any, *int64) { return &rec.Status, &rec.Status.ObservedGeneration },
		Events: []string{dnsv1.ConditionReady, dnsv1.ConditionHealthy},
		Quiet:  []string{dnsv1.ReasonPublished, dnsv1.ReasonAllOwnersHealthy},
		Normal: func(ctx context.Context, rec *dnsv1.DNSRecord, addFinalizer func(context.Context) error) (lifecycle.Result, error) {
			deferred, res, err := r.reconcileNormal(ctx, rec, addFinalizer)
			if !deferred {
				rec.Status.OwnerID = r.OwnerID
			}
			return lifecycle.Result{Result: res, Deferred: deferred}, err
		},
		Delete: r.reconcileDelete,
		Forget: r.forgetHeartbeats,
	}
	return l.Reconcile(ctx, req)
}

// forgetHeartbeats stops the heartbeats of the DNSRecord at key, gone or being deleted.
func (r *Reconciler) forgetHeartbeats(key client.ObjectKey) {
	if r.Heartbeats != nil {
		r.Heartbeats.Remove(key.String())
	}
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

func (r *Reconciler) contributor(rec *dnsv1.DNSRecord) registry.Contributor {
	return registry.Contributor{OwnerID: r.OwnerID, Resource: registry.Resource(Kind, rec.Namespace, rec.Name)}
}

func (r *Reconciler) planner() *publish.Planner {
	return &publish.Planner{Providers: r.Providers, Writers: r.Writers, Live: r.APIReader}
}

// reconcileNormal publishes rec; deferred: a zone is not judged yet and nothing was done
// (publish.Options.DeferUnjudged). prepare adds the finalizer before the first write.
func (r *Reconciler) reconcileNormal(ctx context.Context, rec *dnsv1.DNSRecord, prepare func(context.Context) error) (deferred bool, _ ctrl.Result, _ error) {
	key := client.ObjectKeyFromObject(rec).String()
	if rec.Spec.Strategy == dnsv1.StrategyDisabled {
		if r.Heartbeats != nil {
			r.Heartbeats.Remove(key)
		}
		r.ready(rec, false, dnsv1.ReasonDisabled, "strategy is Disabled: nothing is planned, written or heartbeat")
		status.SetUnknown(&rec.Status.Conditions, rec.Generation, dnsv1.ConditionHealthy, dnsv1.ReasonDisabled, "strategy is Disabled: contributors are not checked")
		return false, ctrl.Result{}, nil
	}
	self := r.contributor(rec)
	now := r.now()
	out, res, err := r.planner().Run(ctx, r.Client, r.Recorder, rec, publish.Options{
		Self: self, Mode: plan.Shared, DefaultTTL: dnsv1.DefaultTTL,
		Published: published(len(rec.Spec.Endpoints)), Resync: r.ResyncInterval, ConflictRetry: r.ConflictRetryInterval,
		DeferUnjudged: true, Prepare: prepare, Served: r.Served, Kind: Kind,
		Heartbeat: &publish.Heartbeat{RootHost: rec.Spec.RootHost, At: now},
	})
	if deferred := out.Verdict.SkipsStatus(); deferred || out.Assignment == nil {
		return deferred, res, err
	}
	root := rootPlan(out.Plans, rec.Spec.RootHost)
	// Only a FullSync record whose reconcile succeeded heartbeats (API contract: DryRun records
	// do not; an approved DryRun plan is a one-off write, not a sync). The others are checked.
	r.track(rec, self, root, out.Assignment, out.Verdict == publish.Published && err == nil && rec.Spec.Strategy != dnsv1.StrategyDryRun)
	if root != nil {
		if snap, serr := root.Writer.Snapshot(ctx, root.Zone.Spec.Zone); serr == nil {
			owners := heartbeat.Check(heartbeat.EntriesAt(snap.Index(), rec.Spec.RootHost, Kind), rec.Spec.RootHost, r.now(), r.Threshold)
			SetOwners(rec, owners, r.now(), r.Threshold)
		}
	}
	return false, res, err
}

// rootPlan returns the plan of the zone that holds rootHost: the longest zone name it is in.
func rootPlan(plans []publish.ZonePlan, rootHost string) *publish.ZonePlan {
	var best *publish.ZonePlan
	for i := range plans {
		p := &plans[i]
		if dnswire.IsSubdomain(rootHost, p.Zone.Spec.Zone) && (best == nil || len(p.Zone.Spec.Zone) > len(best.Zone.Spec.Zone)) {
			best = p
		}
	}
	return best
}

// track registers the record with the heartbeat reporter: write says whether it heartbeats and
// self-heals (its last reconcile succeeded under FullSync); otherwise it is only checked. A
// record whose rootHost zone is not planned is forgotten.
func (r *Reconciler) track(rec *dnsv1.DNSRecord, self registry.Contributor, root *publish.ZonePlan, a *publish.Assignment, write bool) {
	if r.Heartbeats == nil {
		return
	}
	key := client.ObjectKeyFromObject(rec).String()
	if root == nil {
		r.Heartbeats.Remove(key)
		return
	}
	if err := r.Heartbeats.Set(heartbeat.Target{
		Key: key, Self: self, Zone: root.Zone.Spec.Zone, RootHost: rec.Spec.RootHost, DefaultTTL: dnsv1.DefaultTTL,
		Writer: root.Writer, Desired: a.ByZone[client.ObjectKeyFromObject(root.Zone)], Write: write,
	}); err != nil {
		r.Heartbeats.Remove(key)
	}
}

// SetOwners records owners in status.owners and the Healthy condition: True (AllOwnersHealthy)
// when every contributor is healthy, else False (HeartbeatFailing) naming each failing one.
// now dates the message's ages; threshold is --heartbeat-threshold.
//
// So that heartbeats do not rewrite every DNSRecord's status at every tick, status.owners is
// replaced only when a contributor appears, leaves or changes health, or when a recorded
// lastHeartbeat lags the registry by more than half the threshold: lastHeartbeat in status is
// at most threshold/2 behind the registry, and health is always current.
func SetOwners(rec *dnsv1.DNSRecord, owners []heartbeat.Owner, now time.Time, threshold time.Duration) {
	list := make([]dnsv1.OwnerStatus, 0, len(owners))
	for _, o := range owners {
		s := dnsv1.OwnerStatus{OwnerID: o.OwnerID, Resource: o.Resource, Healthy: o.Healthy}
		if !o.LastHeartbeat.IsZero() {
			t := metav1.NewTime(o.LastHeartbeat)
			s.LastHeartbeat = &t
		}
		list = append(list, s)
	}
	same := ownersCurrent(rec.Status.Owners, list, threshold/2)
	if !same {
		rec.Status.Owners = list
	}
	failing := heartbeat.Failing(owners)
	if c := meta.FindStatusCondition(rec.Status.Conditions, dnsv1.ConditionHealthy); same && c != nil && c.ObservedGeneration == rec.Generation &&
		c.Status == metav1.ConditionFalse && c.Reason == dnsv1.ReasonHeartbeatFailing && len(failing) > 0 {
		// The same owners fail as at the last check: keep the message (its ages would otherwise
		// rewrite status at every tick).
		return
	}
	switch {
	case len(owners) == 0:
		status.SetUnknown(&rec.Status.Conditions, rec.Generation, dnsv1.ConditionHealthy, dnsv1.ReasonNoOwners, "no contributor has a registry record at rootHost yet")
	case len(failing) == 0:
		status.Set(&rec.Status.Conditions, rec.Generation, dnsv1.ConditionHealthy, true, dnsv1.ReasonAllOwnersHealthy, allHealthy(len(owners)))
	default:
		status.Set(&rec.Status.Conditions, rec.Generation, dnsv1.ConditionHealthy, false, dnsv1.ReasonHeartbeatFailing, heartbeat.FailingMessage(owners, now))
	}
}

// ownersCurrent reports whether have lists the same contributors with the same health as want,
// each lastHeartbeat at most lag behind.
func ownersCurrent(have, want []dnsv1.OwnerStatus, lag time.Duration) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range have {
		h, w := have[i], want[i]
		if h.OwnerID != w.OwnerID || h.Resource != w.Resource || h.Healthy != w.Healthy || (h.LastHeartbeat == nil) != (w.LastHeartbeat == nil) {
			return false
		}
		if w.LastHeartbeat != nil && w.LastHeartbeat.Sub(h.LastHeartbeat.Time) > lag {
			return false
		}
	}
	return true
}

func allHealthy(n int) string {
	if n == 1 {
		return "the only contributor heartbeats"
	}
	return fmt.Sprintf("all %d contributors heartbeat", n)
}

// OnCheck is the heartbeat reporter's callback: it writes a tick's check of one DNSRecord (key
// "namespace/name") into its status, with an Event on a Healthy transition. It never requeues:
// status writes do not pass the controller's predicates.
func (r *Reconciler) OnCheck(ctx context.Context, key string, owners []heartbeat.Owner) error {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		return fmt.Errorf("heartbeat key %q is not namespace/name", key)
	}
	// The reconcile writes the same status concurrently: patch under the resourceVersion read
	// (optimistic lock), so that a stale copy never drops its Ready condition; on a conflict,
	// read again and re-apply the check.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rec := &dnsv1.DNSRecord{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rec); err != nil {
			return client.IgnoreNotFound(err)
		}
		if !rec.DeletionTimestamp.IsZero() || rec.Spec.Strategy == dnsv1.StrategyDisabled {
			return nil
		}
		base := rec.DeepCopy()
		SetOwners(rec, owners, r.now(), r.Threshold)
		if equality.Semantic.DeepEqual(rec.Status, base.Status) {
			return nil
		}
		if err := r.Client.Status().Patch(ctx, rec, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		status.EventOnChange(r.Recorder, rec, base.Status.Conditions, rec.Status.Conditions, dnsv1.ConditionHealthy)
		return nil
	})
}

func published(n int) string {
	if n == 1 {
		return "1 endpoint contributed"
	}
	return fmt.Sprintf("%d endpoints contributed", n)
}

func (r *Reconciler) ready(rec *dnsv1.DNSRecord, ok bool, reason, msg string) {
	status.Set(&rec.Status.Conditions, rec.Generation, dnsv1.ConditionReady, ok, reason, msg)
}

// reconcileDelete withdraws this contributor's targets and registry records (the set itself
// goes only with its last contributor); a zero Result and no error let the lifecycle drop the
// finalizer. Its heartbeats stopped before (forgetHeartbeats).
func (r *Reconciler) reconcileDelete(ctx context.Context, rec *dnsv1.DNSRecord) (ctrl.Result, error) {
	done, err := r.planner().Release(ctx, r.Client, r.Recorder, rec, publish.Options{Self: r.contributor(rec), Mode: plan.Shared, DefaultTTL: dnsv1.DefaultTTL, Served: r.Served, Kind: Kind})
	if err != nil || !done {
		return ctrl.Result{Requeue: !done && err == nil}, err
	}
	return ctrl.Result{}, nil
}

// defaultMaxConcurrentReconciles is Reconciler.MaxConcurrentReconciles's default. DNSRecords
// are one per host name a Gslb or a team shares across clusters, far fewer than DNSEndpoints
// (2,048 workers), and each idle worker costs its goroutine's stack (2,048 idle
// DNSRecord workers held about 10 MB of stacks in a manager that had no DNSRecord).
const defaultMaxConcurrentReconciles = 256

// indexRootZone indexes DNSRecords by every suffix of rootHost, and by zoneRef, so that a zone
// event finds the records it concerns.
const indexDomains = "spec.rootHost.domains"

// SetupWithManager wires the controller: DNSRecords, and the DNSZones they publish into.
// decorate, when not nil, wraps the reconciler (the composition root's Config.Decorate).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, decorate func(reconcile.Reconciler) reconcile.Reconciler) error {
	r.ledger = &status.Ledger{Live: mgr.GetAPIReader()}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &dnsv1.DNSRecord{}, indexDomains, func(o client.Object) []string {
		rec := o.(*dnsv1.DNSRecord)
		var out []string
		for n := dnswire.Dotless(rec.Spec.RootHost); n != ""; n = dnswire.Parent(n) {
			out = append(out, n)
		}
		if rec.Spec.ZoneRef != nil {
			out = append(out, "ref:"+rec.Spec.ZoneRef.NamespacedName(rec.Namespace).String())
		}
		for _, z := range rec.Status.Zones {
			out = append(out, "ref:"+z)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}); err != nil {
		return err
	}
	// Status writes (heartbeat checks included) never re-trigger a reconcile.
	b := publish.Controller(mgr, &dnsv1.DNSRecord{}, "dnsrecord", r.recordsOfZone, r.MaxConcurrentReconciles, defaultMaxConcurrentReconciles)
	if r.ServedEvents != nil {
		b = b.WatchesRawSource(notice.Keys(r.ServedEvents))
	}
	return requeue.Complete(b, requeue.Decorate(r, decorate)) // a resynced success counts as a success
}

// recordsOfZone enqueues the DNSRecords a zone concerns: rootHost under it in its namespace,
// zoneRef naming it, or records held in it.
func (r *Reconciler) recordsOfZone(ctx context.Context, o client.Object) []reconcile.Request {
	z, ok := o.(*dnsv1.DNSZone)
	if !ok {
		return nil
	}
	return publish.Requests(ctx, r.Client, &dnsv1.DNSRecordList{},
		[]client.ListOption{client.InNamespace(z.Namespace), client.MatchingFields{indexDomains: z.Spec.Zone}},
		[]client.ListOption{client.MatchingFields{indexDomains: "ref:" + z.Namespace + "/" + z.Name}})
}

// CheckFunc adapts OnCheck to heartbeat.Options.OnCheck: each call writes status under its own
// timeout (a time.Duration) derived from ctx, and logs a failure (the next tick retries).
func (r *Reconciler) CheckFunc(ctx context.Context, timeout time.Duration) func(key string, owners []heartbeat.Owner) {
	log := ctrl.LoggerFrom(ctx).WithName("dnsrecord-heartbeat")
	return func(key string, owners []heartbeat.Owner) {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := r.OnCheck(cctx, key, owners); err != nil && ctx.Err() == nil {
			log.Error(err, "write heartbeat check", "dnsrecord", key)
		}
	}
}
