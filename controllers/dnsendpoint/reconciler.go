package dnsendpoint

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/deps"
	"github.com/dnsplane/dnsplane/controllers/internal/lifecycle"
	"github.com/dnsplane/dnsplane/controllers/internal/notice"
	"github.com/dnsplane/dnsplane/controllers/internal/publish"
	"github.com/dnsplane/dnsplane/controllers/internal/requeue"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/scraper"
	"github.com/dnsplane/dnsplane/pkg/warmup"
)

// Kind is the kind this controller reconciles, as the Served check's notices name it.
const Kind = "DNSEndpoint"

// DefaultMaxConcurrentReconciles is Reconciler.MaxConcurrentReconciles's default. Reconciles no
// longer wait for their writes, so workers are needed only for the API requests in flight: at
// --kube-api-qps=1000 and a few milliseconds per request, 64 keep the client's rate limit the
// bound. (It was 2,048 while each reconcile waited in its zone writers: their stacks were about
// 60 MiB of the manager's RSS at 10,000 endpoints.)
const DefaultMaxConcurrentReconciles = 64

// Reconciler reconciles DNSEndpoints.
type Reconciler struct {
	// ledger, set by SetupWithManager (the manager's APIReader), makes a reconcile read past
	// the cache when the cached copy is not this process's last status write (status.Ledger), so that no reconcile compares its status with
	// one older than its own last write.
	ledger *status.Ledger
	// inflight, set by SetupWithManager, holds the objects whose writes are submitted and not
	// yet answered (publish.Options.Async): a reconcile submits and returns.
	inflight *publish.Inflight
	Client   client.Client
	// APIReader, when set, reads from the API server, not the cache: an endpoint that no cached
	// DNSZone holds is checked against it before it is reported InvalidEndpoint, since a zone
	// created a moment ago may not be cached yet (it is then AwaitingZone).
	APIReader client.Reader
	Recorder  record.EventRecorder
	// Providers and Writers are the provider factory (*factory.Factory) and the zone writers
	// (*zonewriter.Set), as publishing uses them.
	Providers deps.Providers
	Writers   deps.Writers
	// OwnerID is this manager's --owner-id.
	OwnerID string
	// ResyncInterval re-plans every object this often, repairing drift, a time.Duration; 0
	// disables.
	ResyncInterval time.Duration
	// ConflictRetryInterval re-plans an object whose names another owner holds this often, a
	// time.Duration, against a zone view at most this old (publish.Options.ConflictRetry), so
	// that a holder deleted in another cluster hands its names over; 0 waits for ResyncInterval.
	ConflictRetryInterval time.Duration
	// LinkEvents, when set, carries the scraper's requests to re-publish parent links.
	LinkEvents <-chan scraper.Notice
	// Served, when set, is the Served check (*served.Tracker, docs/served.md); ServedEvents
	// its notices for DNSEndpoints (served.Tracker.Events), an object whose verdict changed.
	Served       publish.Served
	ServedEvents <-chan types.NamespacedName
	// Policy is the manager's --policy, for objects whose spec.policy is empty; "" = sync.
	Policy plan.Policy
	// ExternalDNS is --txt-prefix, --txt-suffix, --txt-wildcard-replacement and
	// --adopt-external-dns-owner (docs/migrating-from-external-dns.md).
	ExternalDNS plan.ExternalDNS
	// MaxConcurrentReconciles bounds the objects reconciled at once; default
	// DefaultMaxConcurrentReconciles. A reconcile submits its writes and returns
	// (publish.Options.Async), so a burst of objects lands in a few provider calls however few
	// workers there are; the workers' time goes to the API requests (the finalizer's Update,
	// the status patch) of objects whose writes were answered.
	MaxConcurrentReconciles int
	// Warmup, when set, is the first pass at start (warmup.Tracker): SetupWithManager expects
	// the objects the cache holds once it synced, and each reconcile that planned an object
	// (submitted, found nothing to write, or failed) reports it, so that the zone writers hold
	// their flushes until the first pass is done (zonewriter.Options.Warming).
	Warmup *warmup.Tracker
}

// +kubebuilder:rbac:groups=dnsplane.io,resources=dnsendpoints,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=dnsplane.io,resources=dnsendpoints/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=dnsplane.io,resources=dnsendpoints/finalizers,verbs=update
// +kubebuilder:rbac:groups=dnsplane.io,resources=dnszones,verbs=get;list;watch

// Reconcile publishes one DNSEndpoint, or removes its records when it is deleted
// (lifecycle.Lifecycle: the read and the status commit around the phases).
//
// It adds no finalizer (lifecycle.WithFirstWrite, whose addFinalizer its Normal never calls): a
// DNSEndpoint deleted while the manager runs is released by the reconcile that finds it gone, in
// the zones its delete event's status.zones named (publish.Inflight.Gone); one deleted while no
// manager ran, by the sweep after the first pass, which finds it by the registry records that
// name it (sweep). So a published object costs the API server one write, its status, as an
// external-dns one does. An object created with the finalizer (a DNSZone's parent link, whose
// zone waits for the NS set to go) is held until its records are released.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	l := lifecycle.Lifecycle[*dnsv1.DNSEndpoint]{
		Client: r.Client, Recorder: r.Recorder, Ledger: r.ledger,
		New:       func() *dnsv1.DNSEndpoint { return &dnsv1.DNSEndpoint{} },
		Finalizer: dnsv1.FinalizerRecords, FinalizerWrite: lifecycle.WithFirstWrite,
		Status: func(ep *dnsv1.DNSEndpoint) (any, *int64) { return &ep.Status, &ep.Status.ObservedGeneration },
		// The first Published emits no Event (routine); failures, waits and recoveries do.
		Events: []string{dnsv1.ConditionReady},
		Quiet:  []string{dnsv1.ReasonPublished},
		Normal: func(ctx context.Context, ep *dnsv1.DNSEndpoint, _ func(context.Context) error) (lifecycle.Result, error) {
			out, res, err := r.reconcileNormal(ctx, ep)
			if err != nil || out.Verdict != publish.Deferred {
				// Planned, or failed before it could: either way not one to wait for. An object
				// deferred until its zone is judged is waited for (up to warmup's stall).
				r.Warmup.Planned(req.NamespacedName)
			}
			return lifecycle.Result{Result: res, Deferred: out.Verdict.SkipsStatus()}, err
		},
		Delete: r.reconcileDelete,
		Gone:   r.reconcileGone,
	}
	return l.Reconcile(ctx, req)
}

func (r *Reconciler) planner(ep *dnsv1.DNSEndpoint) *publish.Planner {
	return &publish.Planner{Providers: r.Providers, Writers: r.Writers, Live: r.APIReader,
		Policy: r.policy(ep), ExternalDNS: r.ExternalDNS}
}

// policy is ep's spec.policy in the planner's spelling, else the manager's --policy.
func (r *Reconciler) policy(ep *dnsv1.DNSEndpoint) plan.Policy {
	switch ep.Spec.Policy {
	case dnsv1.PolicySync:
		return plan.PolicySync
	case dnsv1.PolicyUpsertOnly:
		return plan.PolicyUpsertOnly
	case dnsv1.PolicyCreateOnly:
		return plan.PolicyCreateOnly
	}
	return r.Policy
}

func (r *Reconciler) contributor(ep *dnsv1.DNSEndpoint) registry.Contributor {
	return registry.Contributor{OwnerID: r.OwnerID, Resource: registry.Resource("DNSEndpoint", ep.Namespace, ep.Name)}
}

func (r *Reconciler) reconcileNormal(ctx context.Context, ep *dnsv1.DNSEndpoint) (publish.Outcome, ctrl.Result, error) {
	return r.planner(ep).Run(ctx, r.Client, r.Recorder, ep, publish.Options{
		Self: r.contributor(ep), Mode: plan.SingleOwner, DefaultTTL: dnsv1.DefaultTTL,
		Published: published(len(ep.Spec.Endpoints)), Resync: r.ResyncInterval, ConflictRetry: r.ConflictRetryInterval,
		DeferUnjudged: true, Served: r.Served, Kind: Kind, Async: r.inflight,
	})
}

func published(n int) string {
	if n == 1 {
		return "1 endpoint published"
	}
	return fmt.Sprintf("%d endpoints published", n)
}

// reconcileDelete removes every record the object holds, then hands its names over (waiters); a
// zero Result and no error let the lifecycle drop the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, ep *dnsv1.DNSEndpoint) (ctrl.Result, error) {
	done, err := r.planner(ep).Release(ctx, r.Client, r.Recorder, ep, r.releaseOptions(ep))
	if err != nil || !done {
		return ctrl.Result{Requeue: !done && err == nil}, err
	}
	r.handOver(ctx, client.ObjectKeyFromObject(ep), ep.Status.Zones)
	return ctrl.Result{}, nil
}

// reconcileGone releases what a deleted object held: the zones its delete event or the sweep
// recorded (publish.Inflight.Gone), and those its last submission wrote to; then hands its names
// over (waiters).
func (r *Reconciler) reconcileGone(ctx context.Context, key client.ObjectKey) (ctrl.Result, error) {
	if r.inflight == nil {
		return ctrl.Result{}, nil
	}
	ep := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	ep.Spec.Policy = r.inflight.GonePolicy(key) // its delete event's: an UpsertOnly object keeps its records
	released, done, err := r.planner(ep).ReleaseGone(ctx, r.Client, r.Recorder, key, ep, r.releaseOptions(ep))
	if err != nil || !done {
		return ctrl.Result{Requeue: !done && err == nil}, err
	}
	r.handOver(ctx, key, released)
	return ctrl.Result{}, nil
}

// handOver enqueues, once the release of the object at key is applied in zones, the objects
// waiting on names there (waiters): the hand-over follows the release, so a waiter plans
// against a zone view that no longer holds the released names.
func (r *Reconciler) handOver(ctx context.Context, key client.ObjectKey, zones []string) {
	if r.inflight == nil || len(zones) == 0 {
		return
	}
	r.inflight.Enqueue(r.waiters(ctx, key, zones)...)
}

func (r *Reconciler) releaseOptions(ep *dnsv1.DNSEndpoint) publish.Options {
	return publish.Options{Self: r.contributor(ep), Mode: plan.SingleOwner, DefaultTTL: dnsv1.DefaultTTL, Served: r.Served, Kind: Kind, Async: r.inflight}
}

// Field indexes on DNSEndpoints, for mapping a DNSZone event to the objects it concerns.
const (
	// indexZoneRef: spec.zoneRef as namespace/name (the object's namespace when unset).
	indexZoneRef = "spec.zoneRef"
	// indexHeld: status.zones.
	indexHeld = "status.zones"
)

// expectCached tells Warmup which objects the first pass must plan: those the cache holds once
// it synced, not being deleted; once the pass ended, it sweeps for deleted objects' records
// (sweep). It runs on the leader, as the controller does.
func (r *Reconciler) expectCached(ctx context.Context, c cache.Cache) error {
	if !c.WaitForCacheSync(ctx) {
		return nil // stopping
	}
	if r.Warmup == nil {
		r.sweep(ctx, c)
		return nil
	}
	var list dnsv1.DNSEndpointList
	if err := c.List(ctx, &list); err != nil {
		// Without the list the first pass ends on its own (warmup.DefaultMax); not fatal.
		log.FromContext(ctx).Error(err, "list DNSEndpoints for the first pass")
		return nil
	}
	keys := make([]types.NamespacedName, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			keys = append(keys, types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name})
		}
	}
	r.Warmup.Expect(keys)
	l := log.FromContext(ctx).WithName("first-pass")
	l.Info("holding zone writes until the DNSEndpoints found at start are planned", "objects", len(keys))
	tick := time.NewTicker(time.Second) // a stall is seen by asking (Warming)
	defer tick.Stop()
	for r.Warmup.Warming() {
		select {
		case <-ctx.Done():
			return nil
		case <-r.Warmup.Done():
		case <-tick.C:
		}
	}
	reason, left := r.Warmup.Ended()
	l.Info("first pass ended: zone writes go as they come", "reason", reason, "unplanned", left)
	r.sweep(ctx, c)
	return nil
}

// SetupWithManager wires the controller: DNSEndpoints, and the DNSZones they publish into.
// decorate, when not nil, wraps the reconciler (the composition root's Config.Decorate).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, decorate func(reconcile.Reconciler) reconcile.Reconciler) error {
	r.ledger = &status.Ledger{Live: mgr.GetAPIReader()}
	r.inflight = publish.NewInflight()
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { return r.expectCached(ctx, mgr.GetCache()) })); err != nil {
		return fmt.Errorf("add the first pass's listing and the sweep: %w", err)
	}
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(context.Background(), &dnsv1.DNSEndpoint{}, indexZoneRef, func(o client.Object) []string {
		ep := o.(*dnsv1.DNSEndpoint)
		if ep.Spec.ZoneRef == nil {
			return nil
		}
		return []string{ep.Spec.ZoneRef.NamespacedName(ep.Namespace).String()}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(context.Background(), &dnsv1.DNSEndpoint{}, indexHeld, func(o client.Object) []string {
		return o.(*dnsv1.DNSEndpoint).Status.Zones
	}); err != nil {
		return err
	}
	b := publish.Controller(mgr, &dnsv1.DNSEndpoint{}, "dnsendpoint", r.endpointsOfZone, r.MaxConcurrentReconciles, DefaultMaxConcurrentReconciles)
	if r.LinkEvents != nil {
		b = b.WatchesRawSource(notice.Source(r.LinkEvents))
	}
	if r.ServedEvents != nil {
		b = b.WatchesRawSource(notice.Keys(r.ServedEvents))
	}
	// A deleted object's last status names the zones it holds records in: the reconcile that
	// finds it gone releases them (there is no finalizer to hold it).
	b = b.Watches(&dnsv1.DNSEndpoint{}, handler.Funcs{
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if ep, ok := e.Object.(*dnsv1.DNSEndpoint); ok {
				r.inflight.Gone(client.ObjectKeyFromObject(ep), ep.Status.Zones, ep.Spec.Policy)
			}
		},
	})
	b = b.WatchesRawSource(r.inflight.Source())
	return requeue.Complete(b, requeue.Decorate(r, decorate)) // a resynced success counts as a success
}

// waiters returns the DNSEndpoints other than key that hold records in zones (status.zones)
// and whose Ready says another owner holds some of their names (OwnershipConflict or
// DoubleClaim): the objects a release in those zones may hand names to. A holder in another
// cluster is seen by the waiter's own retry (ConflictRetryInterval).
func (r *Reconciler) waiters(ctx context.Context, key client.ObjectKey, zones []string) []types.NamespacedName {
	var out []types.NamespacedName
	for _, zone := range zones {
		var held dnsv1.DNSEndpointList
		if err := r.Client.List(ctx, &held, client.MatchingFields{indexHeld: zone}, client.UnsafeDisableDeepCopy); err != nil {
			log.FromContext(ctx).Error(err, "listing the DNSEndpoints waiting on released names failed; they retry at their conflict retry",
				"zone", zone)
			continue
		}
		for i := range held.Items {
			ep := &held.Items[i]
			k := client.ObjectKeyFromObject(ep)
			c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionReady)
			if k == key || slices.Contains(out, k) || c == nil || c.Status != metav1.ConditionFalse ||
				(c.Reason != dnsv1.ReasonOwnershipConflict && c.Reason != dnsv1.ReasonDoubleClaim) {
				continue
			}
			out = append(out, k)
		}
	}
	return out
}

// endpointsOfZone enqueues the DNSEndpoints a zone concerns: those with names under it in its
// namespace, those naming it in zoneRef, and those holding records in it.
func (r *Reconciler) endpointsOfZone(ctx context.Context, o client.Object) []reconcile.Request {
	z, ok := o.(*dnsv1.DNSZone)
	if !ok {
		return nil
	}
	key := z.Namespace + "/" + z.Name
	out := publish.Requests(ctx, r.Client, &dnsv1.DNSEndpointList{},
		[]client.ListOption{client.MatchingFields{indexZoneRef: key}},
		[]client.ListOption{client.MatchingFields{indexHeld: key}})
	return append(out, r.endpointsUnder(ctx, z.Namespace, z.Spec.Zone, out)...)
}

// endpointsUnder returns the DNSEndpoints of namespace with a name at or under zone, but those
// in skip, from a scan of the cached objects. An index on every suffix of every name did this
// lookup in one step, but held about 35 MB at 50,000 endpoints, for an
// event that comes once per zone change (predicates.ZoneUsabilityChanged); the scan costs one
// suffix comparison per endpoint.
func (r *Reconciler) endpointsUnder(ctx context.Context, namespace, zone string, skip []reconcile.Request) []reconcile.Request {
	zone = dnswire.Dotless(zone)
	if zone == "" {
		return nil
	}
	var all dnsv1.DNSEndpointList
	if err := r.Client.List(ctx, &all, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing DNSEndpoints for a zone event failed; the next event or resync catches up")
		return nil
	}
	skipped := make(map[reconcile.Request]struct{}, len(skip))
	for _, req := range skip {
		skipped[req] = struct{}{}
	}
	var out []reconcile.Request
	for i := range all.Items {
		ep := &all.Items[i]
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ep)}
		if _, ok := skipped[req]; ok {
			continue
		}
		if slices.ContainsFunc(ep.Spec.Endpoints, func(e dnsv1.Endpoint) bool { return dnswire.IsSubdomain(e.DNSName, zone) }) {
			out = append(out, req)
		}
	}
	return out
}
