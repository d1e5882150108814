package dnszone

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/deps"
	"github.com/dnsplane/dnsplane/controllers/internal/lifecycle"
	"github.com/dnsplane/dnsplane/controllers/internal/notice"
	"github.com/dnsplane/dnsplane/controllers/internal/predicates"
	"github.com/dnsplane/dnsplane/controllers/internal/requeue"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/scraper"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
	corev1 "k8s.io/api/core/v1"
)

// defaultMaxConcurrentReconciles is Reconciler.MaxConcurrentReconciles's default.
const defaultMaxConcurrentReconciles = 16

// TagOwner is the provider tag that names the DNSZone (namespace/name) a hosted zone belongs to.
const TagOwner = "dnsplane.io/dnszone"

// ParentLinkSuffix names the parent-link DNSEndpoint: <dnszone>-parent-link.
const ParentLinkSuffix = "-parent-link"

// Reconciler reconciles DNSZones.
type Reconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	// Providers is the provider factory (*factory.Factory).
	Providers deps.Providers
	// Writers are the zone writers (*zonewriter.Set).
	Writers Writers
	// DNS asks name servers for SOA and addresses; nil = dnsclient.Client{}.
	DNS DNS
	// Scraper confirms parent links (*scraper.Scraper).
	Scraper Scraper
	// ZoneEvents, when set, carries the scraper's requests to reconcile a child DNSZone whose
	// parent link changed (scraper.Scraper.ZoneEvents).
	ZoneEvents <-chan scraper.Notice
	// OwnerID is this manager's --owner-id.
	OwnerID string
	// SOAPollInterval is how often an unavailable zone is polled, a time.Duration.
	SOAPollInterval time.Duration
	// RolloverTTLs overrides the TTLs key rollovers wait out (zero: the defaults).
	RolloverTTLs RolloverTTLs
	// ResyncInterval forces a sync with the provider this long after the last, a time.Duration.
	ResyncInterval time.Duration
	// Metrics, when set, observes creation-to-ZoneAvailable seconds once per zone (NewMetrics).
	Metrics *Metrics
	Clock   clock.PassiveClock
	// ControllerName names the controller in logs and in controller-runtime's metrics
	// (controller_runtime_reconcile_total{controller}); default "dnszone". Tests that run two
	// managers in one process tell their metrics apart with it.
	ControllerName string
	// NSResolver looks up out-of-bailiwick name servers when no DNS address is configured
	// (checkDelegation); nil means net.DefaultResolver.
	NSResolver HostResolver
	// Served, when set, is the Served check (*served.Tracker, docs/served.md): each reconcile
	// of an available zone asks its name servers for their serials once, into status.servers
	// and the Served condition. ServedEvents are its notices (a server started or stopped
	// failing, or went stale: served.Tracker.Events(served.KindDNSZone)); a zone with
	// secondaries is checked again every ServedCheckInterval, a time.Duration
	// (--served-zone-check-interval; 0 = at each resync only).
	Served              ZoneServed
	ServedEvents        <-chan types.NamespacedName
	ServedCheckInterval time.Duration
	// MaxConcurrentReconciles bounds the DNSZones reconciled at once; default 16. Reconciles of
	// one zone name, or of a zone and a zone inside it, never overlap (they decide each other's
	// tenancy verdicts).
	MaxConcurrentReconciles int

	// observed holds the UIDs whose availability delay was recorded by this process, so that a
	// reconcile of a stale cached object never records it twice; status.availableTimestamp
	// covers restarts.
	observed sync.Map
	// ledger, set by SetupWithManager (the manager's APIReader), makes a reconcile read past
	// the cache when the cached copy is not this process's last status write (status.Ledger: without it a zone stayed AwaitingScrape when
	// the reconcile that saw the repaired link compared its ParentLinked with a cached
	// ParentLinked from before its own AwaitingScrape write, and wrote nothing).
	ledger *status.Ledger
	// locks keeps the reconciles of related zone names from overlapping.
	locks zoneLocks
	// lastLooks holds, per DNSZone, the last look at its signing that found nothing to wait for
	// (lastLook), so that a steady zone's reconciles ask no server again within the SOA poll
	// interval.
	lastLooks sync.Map
}

// +kubebuilder:rbac:groups=dnsplane.io,resources=dnszones,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=dnsplane.io,resources=dnszones/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=dnsplane.io,resources=dnszones/finalizers,verbs=update
// +kubebuilder:rbac:groups=dnsplane.io,resources=dnsendpoints,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile ensures one DNSZone's hosted zone, availability and parent link, or tears them down
// (lifecycle.Lifecycle: the read, the finalizer and the status commit around the two phases).
// DNSZones of unrelated zone names are reconciled in parallel (MaxConcurrentReconciles); those
// of one zone name, or of a zone and one inside it, one at a time (zoneLocks).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cached dnsv1.DNSZone
	if err := r.Client.Get(ctx, req.NamespacedName, &cached); err == nil {
		defer r.locks.lock(cached.Spec.Zone)()
	}
	l := lifecycle.Lifecycle[*dnsv1.DNSZone]{
		Client: r.Client, Recorder: r.Recorder, Ledger: r.ledger,
		New:       func() *dnsv1.DNSZone { return &dnsv1.DNSZone{} },
		Finalizer: dnsv1.FinalizerZone, FinalizerWrite: lifecycle.ByPatch,
		Status: func(z *dnsv1.DNSZone) (any, *int64) { return &z.Status, &z.Status.ObservedGeneration },
		Events: []string{dnsv1.ConditionZoneAvailable, dnsv1.ConditionParentLinkCreated, dnsv1.ConditionSecure},
		Quiet:  []string{dnsv1.ReasonZoneAvailable, dnsv1.ReasonLinkDisabled},
		Normal: func(ctx context.Context, z *dnsv1.DNSZone, _ func(context.Context) error) (lifecycle.Result, error) {
			res, err := r.reconcileNormal(ctx, z)
			r.summarise(z)
			return lifecycle.Result{Result: res}, err
		},
		Delete: r.reconcileDelete,
	}
	return l.Reconcile(ctx, req)
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// needsSync reports whether the hosted zone is synced with the provider in this reconcile: the
// generation changed, there is no zone ID or sync time yet, the last sync failed, or the resync
// interval passed (Hive's rule). A zone that only waits for its SOA (AwaitingSOA) was synced for
// this generation: the SOA poll asks DNS, not the provider, so a failing SOA check costs no
// provider request and no status write (the poll used to re-ensure the zone and
// rewrite lastSyncTimestamp every time).
func (r *Reconciler) needsSync(z *dnsv1.DNSZone) bool {
	if z.Status.LastSyncGeneration != z.Generation || z.Status.ZoneID == "" || z.Status.LastSyncTimestamp == nil {
		return true
	}
	c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionZoneAvailable)
	synced := c != nil && (c.Status == metav1.ConditionTrue || c.Reason == dnsv1.ReasonAwaitingSOA ||
		// re-created just now (recoverDeleted); an adopted zone that is gone is looked up again
		(c.Reason == dnsv1.ReasonZoneDeletedAtProvider && z.Spec.ZoneID == ""))
	if !synced {
		return true
	}
	return r.now().Sub(z.Status.LastSyncTimestamp.Time) >= r.ResyncInterval
}

func (r *Reconciler) reconcileNormal(ctx context.Context, z *dnsv1.DNSZone) (ctrl.Result, error) {
	res, err := r.reconcileZone(ctx, z)
	if err == nil {
		var again time.Duration
		again, err = r.reconcileDNSSEC(ctx, z)
		res = minResult(res, ctrl.Result{RequeueAfter: again})
	}
	if err != nil || !meta.IsStatusConditionTrue(z.Status.Conditions, dnsv1.ConditionZoneAvailable) {
		if lerr := r.linkOfUnavailable(ctx, z); err == nil {
			err = lerr
		}
		return res, err
	}
	linkRes, err := r.reconcileParentLink(ctx, z)
	return minResult(res, linkRes), err
}

// linkOfUnavailable sets ParentLinkCreated of a zone that is not available: the link waits for
// the zone's name servers (AwaitingParent), and an existing link state is kept, but for
// DelegationNotAllowed. That one is what refuse says of a zone its parent refuses
// (ParentNotAllowed), and otherwise is asked of the parent again (findParent), so that it never
// outlives the parent's refusal.
func (r *Reconciler) linkOfUnavailable(ctx context.Context, z *dnsv1.DNSZone) error {
	if !z.Spec.LinkToParentDomain {
		r.setLink(z, true, dnsv1.ReasonLinkDisabled, "linkToParentDomain is false")
		return nil
	}
	link := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionParentLinkCreated)
	avail := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionZoneAvailable)
	switch {
	case avail != nil && avail.Reason == dnsv1.ReasonParentNotAllowed && link != nil && link.Reason == dnsv1.ReasonDelegationNotAllowed:
		return nil
	case link != nil && link.Reason == dnsv1.ReasonDelegationNotAllowed:
		_, reason, _, err := r.findParent(ctx, z)
		if err != nil || reason == dnsv1.ReasonDelegationNotAllowed {
			return err
		}
	case link != nil:
		return nil
	}
	r.setLink(z, false, dnsv1.ReasonAwaitingParent, "the link is published once this zone is available")
	return nil
}

// reconcileZone ensures the hosted zone and checks its SOA.
func (r *Reconciler) reconcileZone(ctx context.Context, z *dnsv1.DNSZone) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	resolved, err := r.Providers.Resolve(ctx, z.Namespace, z.Spec.ProviderRef.Name)
	if err != nil {
		return r.providerFailed(z, err)
	}
	// Tenancy first: a zone inside another namespace's zone without its permission is neither
	// created nor re-created (docs/api.md, "Tenancy").
	others, err := r.tenants(ctx, z)
	if err != nil {
		return ctrl.Result{}, err
	}
	self := tenant{z: z, backend: resolved.Backend, zoneID: z.Status.ZoneID}
	if v := judge(self, others, false); v.reason != "" {
		return r.refuse(ctx, z, v)
	}
	if res, handled, err := r.recoverDeleted(ctx, z, resolved); handled {
		return res, err
	}
	if !r.needsSync(z) {
		if v := judge(self, others, true); v.reason != "" {
			return r.refuse(ctx, z, v)
		}
	} else {
		pz, sets, readAt, err := r.ensureHostedZone(ctx, z, resolved.Provider)
		if err != nil {
			// The provider refuses a zone of this name that is not ours: when another
			// namespace's DNSZone holds it, say which (sharingRule), not only the provider's
			// words about caller references.
			if errors.Is(err, provider.ErrZoneConflict) {
				if v := judge(self, others, true); v.reason != "" {
					return r.refuse(ctx, z, v)
				}
			}
			return r.providerFailed(z, err)
		}
		// The hosted zone is known now: another namespace's DNSZone may hold it.
		self.zoneID = pz.ID
		if v := judge(self, others, true); v.reason != "" {
			return r.refuse(ctx, z, v)
		}
		if sets != nil {
			// The adoption read held the zone's record sets: the writer's first view, so that
			// the first planners need no read of their own (provider.ZoneReader).
			r.Writers.For(writerKey(resolved.Account, pz.ID), resolved.Provider).Seed(sets, readAt)
		}
		z.Status.ZoneID = pz.ID
		z.Status.NameServers = pz.NameServers
		z.Status.LastSyncGeneration = z.Generation
		now := metav1.NewTime(r.now())
		z.Status.LastSyncTimestamp = &now
	}
	servers := z.Status.NameServers
	if resolved.DNSAddress != "" {
		servers = []string{resolved.DNSAddress}
	}
	if err := r.dns().SOAAny(ctx, servers, z.Spec.Zone); err != nil {
		logger.V(1).Info("SOA not answered yet", "zone", z.Spec.Zone, "error", err.Error())
		status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionZoneAvailable, false, dnsv1.ReasonAwaitingSOA,
			fmt.Sprintf("hosted zone %s exists; waiting for an authoritative SOA answer (%v)", z.Status.ZoneID, err))
		return ctrl.Result{RequeueAfter: r.SOAPollInterval}, nil
	}
	status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionZoneAvailable, true, dnsv1.ReasonZoneAvailable,
		fmt.Sprintf("hosted zone %s answers SOA authoritatively", z.Status.ZoneID))
	if z.Status.AvailableTimestamp == nil {
		// Once per zone: the timestamp is in status, so a restarted manager records nothing.
		now := metav1.NewTime(r.now())
		z.Status.AvailableTimestamp = &now
		if _, seen := r.observed.LoadOrStore(z.UID, struct{}{}); !seen {
			r.Metrics.observeAvailable(now.Sub(z.CreationTimestamp.Time).Seconds())
		}
	}
	again := r.setServed(ctx, z, resolved)
	return minResult(ctrl.Result{RequeueAfter: r.ResyncInterval}, ctrl.Result{RequeueAfter: again}), nil
}

// ensureHostedZone adopts the hosted zone spec.zoneID names, or ensures the one this DNSZone
// creates. Adopting reads the zone once (provider.ReadZone); when that read held its record sets
// (a provider.ZoneReader: PowerDNS) they are returned with the time of the read, else sets is
// nil.
func (r *Reconciler) ensureHostedZone(ctx context.Context, z *dnsv1.DNSZone, p provider.Provider) (pz provider.Zone, sets []provider.RecordSet, readAt time.Time, err error) {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if z.Spec.ZoneID != "" {
		pz, sets, err := provider.ReadZone(cctx, p, z.Spec.ZoneID)
		if err != nil {
			return provider.Zone{}, nil, time.Time{}, fmt.Errorf("adopt zone %s: %w", z.Spec.ZoneID, err)
		}
		if pz.Name != z.Spec.Zone {
			return provider.Zone{}, nil, time.Time{}, fmt.Errorf("zone %s is %s, not %s: %w", z.Spec.ZoneID, pz.Name, z.Spec.Zone, provider.ErrZoneConflict)
		}
		return pz, sets, r.now(), nil
	}
	tags := map[string]string{TagOwner: z.Namespace + "/" + z.Name}
	for k, v := range z.Spec.Tags {
		tags[k] = v
	}
	pz, err = p.EnsureZone(cctx, provider.ZoneSpec{Name: z.Spec.Zone, CallerReference: string(z.UID), Tags: tags})
	if err != nil {
		return provider.Zone{}, nil, time.Time{}, err
	}
	return pz, nil, time.Time{}, nil
}

// CredentialRetry is how often a DNSZone whose provider Secret is missing or rejected
// (ProviderNotFound, InvalidCredentials) reads the Secret again: Secrets are not watched, so
// this bounds how long a created or fixed Secret waits to be noticed. Each retry is one Secret
// GET, and no provider call while the Secret is unchanged (factory.Factory).
const CredentialRetry = 10 * time.Second

// providerFailed maps a provider error to the ZoneAvailable reason. Terminal errors wait for a
// change of the object (watched) or of the Secret (read again every CredentialRetry); others go
// back to the rate limiter.
func (r *Reconciler) providerFailed(z *dnsv1.DNSZone, err error) (ctrl.Result, error) {
	reason, terminal := reasonFor(err)
	status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionZoneAvailable, false, reason, err.Error())
	if !terminal {
		return ctrl.Result{}, err
	}
	if reason == dnsv1.ReasonProviderNotFound || reason == dnsv1.ReasonInvalidCredentials {
		retry := CredentialRetry
		if r.ResyncInterval > 0 {
			retry = min(retry, r.ResyncInterval)
		}
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	return ctrl.Result{RequeueAfter: r.ResyncInterval}, nil
}

func reasonFor(err error) (reason string, terminal bool) {
	switch {
	case errors.Is(err, provider.ErrProviderNotFound):
		return dnsv1.ReasonProviderNotFound, true
	case errors.Is(err, provider.ErrInvalidCredentials):
		return dnsv1.ReasonInvalidCredentials, true
	case errors.Is(err, provider.ErrZoneConflict):
		return dnsv1.ReasonZoneConflict, true
	case errors.Is(err, provider.ErrZoneNotFound):
		return dnsv1.ReasonZoneNotFound, true
	case errors.Is(err, provider.ErrNotCapable):
		return dnsv1.ReasonNotCapable, true
	}
	return dnsv1.ReasonProviderError, false
}

func (r *Reconciler) setLink(z *dnsv1.DNSZone, ok bool, reason, msg string) {
	status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionParentLinkCreated, ok, reason, msg)
}

// summarise sets Ready = ZoneAvailable and, with linkToParentDomain, ParentLinkCreated.
func (r *Reconciler) summarise(z *dnsv1.DNSZone) {
	for _, t := range []string{dnsv1.ConditionZoneAvailable, dnsv1.ConditionParentLinkCreated} {
		if t == dnsv1.ConditionParentLinkCreated && !z.Spec.LinkToParentDomain {
			continue
		}
		c := meta.FindStatusCondition(z.Status.Conditions, t)
		if c == nil || c.Status != metav1.ConditionTrue {
			reason, msg := dnsv1.ReasonProviderError, t+" is unknown"
			if c != nil {
				reason, msg = c.Reason, c.Message
			}
			status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionReady, false, reason, msg)
			return
		}
	}
	msg := fmt.Sprintf("zone %s is served by %s", z.Spec.Zone, strings.Join(z.Status.NameServers, ", "))
	if len(z.Status.NameServers) == 0 {
		msg = fmt.Sprintf("zone %s is available at its provider, which lists no name servers for it (no NS set at its apex)", z.Spec.Zone)
	}
	status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionReady, true, dnsv1.ReasonReady, msg)
}

func minResult(a, b ctrl.Result) ctrl.Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0:
		return a
	case b.RequeueAfter < a.RequeueAfter:
		return b
	}
	return a
}

// reconcileDelete unlinks, removes this owner's records and deletes the zone if we created it
// and nobody else's records remain, in that order (docs/api.md, "Deletion"); a zero Result and
// no error let the lifecycle drop the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, z *dnsv1.DNSZone) (ctrl.Result, error) {
	r.Scraper.Unregister(client.ObjectKeyFromObject(z))
	if r.Served != nil {
		r.Served.ForgetZone(client.ObjectKeyFromObject(z))
	}
	keep := z.Spec.PreserveOnDelete || z.Spec.ZoneID != ""
	if wake, err := r.unsignOnDelete(ctx, z, keep); err != nil || wake > 0 { // child last: the DS goes first
		return ctrl.Result{RequeueAfter: wake}, err
	}
	conflict := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionZoneAvailable)
	switch {
	case keep:
		r.Recorder.Eventf(z, corev1.EventTypeNormal, dnsv1.ReasonPreserved, "hosted zone %s and its parent link are kept (preserveOnDelete or adopted zoneID)", z.Status.ZoneID)
	case conflict != nil && conflict.Reason == dnsv1.ReasonZoneConflict && z.Status.ZoneID != "":
		// Another DNSZone holds this hosted zone (docs/api.md, "Tenancy"): its records, this
		// owner's included, are not this DNSZone's to delete.
		gone, err := r.deleteParentLink(ctx, z)
		if err != nil || !gone {
			return ctrl.Result{RequeueAfter: time.Second}, err
		}
		r.Recorder.Eventf(z, corev1.EventTypeNormal, dnsv1.ReasonZoneKept, "hosted zone %s kept: %s", z.Status.ZoneID, conflict.Message)
	default:
		gone, err := r.deleteParentLink(ctx, z)
		if err != nil || !gone {
			return ctrl.Result{RequeueAfter: time.Second}, err
		}
		if z.Status.ZoneID != "" {
			if err := r.deleteProviderZone(ctx, z); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) deleteParentLink(ctx context.Context, z *dnsv1.DNSZone) (gone bool, err error) {
	link := &dnsv1.DNSEndpoint{}
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: z.Namespace, Name: z.Name + ParentLinkSuffix}, link)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if link.DeletionTimestamp.IsZero() {
		if err := r.Client.Delete(ctx, link); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete parent link: %w", err)
		}
	}
	return false, nil
}

// deleteProviderZone removes the record sets this owner contributed, then the zone itself if we
// created it and no other owner's records remain.
func (r *Reconciler) deleteProviderZone(ctx context.Context, z *dnsv1.DNSZone) error {
	resolved, err := r.Providers.Resolve(ctx, z.Namespace, z.Spec.ProviderRef.Name)
	if err != nil {
		if errors.Is(err, provider.ErrProviderNotFound) {
			r.Recorder.Eventf(z, corev1.EventTypeWarning, dnsv1.ReasonProviderNotFound, "hosted zone %s left in place: %v", z.Status.ZoneID, err)
			return nil
		}
		return err
	}
	key := writerKey(resolved.Account, z.Status.ZoneID)
	w := r.Writers.For(key, resolved.Provider)
	sets, err := w.RecordSets(ctx)
	if errors.Is(err, provider.ErrZoneNotFound) {
		r.Writers.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	changes, foreign := releaseOwner(z.Spec.Zone, r.OwnerID, sets)
	if err := w.Apply(ctx, changes); err != nil {
		return fmt.Errorf("remove this owner's records from %s: %w", z.Spec.Zone, err)
	}
	if len(foreign) > 0 {
		slices.Sort(foreign)
		r.Recorder.Eventf(z, corev1.EventTypeWarning, dnsv1.ReasonZoneKept, "hosted zone %s kept: records of other owners remain (%s)", z.Status.ZoneID, strings.Join(foreign, ", "))
		r.Writers.Forget(key)
		return nil
	}
	pz, err := resolved.Provider.GetZone(ctx, z.Status.ZoneID)
	if errors.Is(err, provider.ErrZoneNotFound) {
		r.Writers.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if pz.CallerReference != string(z.UID) {
		r.Recorder.Eventf(z, corev1.EventTypeNormal, dnsv1.ReasonZoneKept, "hosted zone %s was not created by this DNSZone; kept", z.Status.ZoneID)
		r.Writers.Forget(key)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := resolved.Provider.DeleteZone(cctx, z.Status.ZoneID); err != nil && !errors.Is(err, provider.ErrZoneNotFound) {
		return fmt.Errorf("delete hosted zone %s: %w", z.Status.ZoneID, err)
	}
	r.Writers.Forget(key)
	r.Recorder.Eventf(z, corev1.EventTypeNormal, dnsv1.ReasonZoneDeleted, "hosted zone %s deleted", z.Status.ZoneID)
	return nil
}

// SetupWithManager wires the controller: DNSZones, their parent-link DNSEndpoints, the
// scraper's notifications and the zone writers' ZoneNotFound reports. Secrets are not watched
// (the manager holds only get on them): a zone whose Secret is missing or rejected reads it
// again every CredentialRetry.
// decorate, when not nil, wraps the reconciler (the composition root's Config.Decorate).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, decorate func(reconcile.Reconciler) reconcile.Reconciler) error {
	r.ledger = &status.Ledger{Live: mgr.GetAPIReader()}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &dnsv1.DNSZone{}, indexZoneID,
		func(o client.Object) []string { return []string{o.(*dnsv1.DNSZone).Status.ZoneID} }); err != nil {
		return err
	}
	rec := requeue.Decorate(r, decorate)
	periodic := requeue.New(rec)
	return ctrl.NewControllerManagedBy(mgr).
		// Status writes never re-trigger a reconcile: only spec changes, deletion and the rollover
		// annotation (rolloverAsked) do; polls are RequeueAfter (docs/architecture.md).
		For(&dnsv1.DNSZone{}, builder.WithPredicates(predicates.SpecOrDeletion())).
		Watches(&dnsv1.DNSZone{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(rolloverAsked())).
		Owns(&dnsv1.DNSEndpoint{}).
		// A parent's children care about its spec, deletion, zone ID and availability, not its
		// other status writes (sync times, its own parent link).
		Watches(&dnsv1.DNSZone{}, handler.EnqueueRequestsFromMapFunc(r.childrenOf),
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicates.ZoneUsabilityChanged{}))).
		WatchesRawSource(notice.Source(r.ZoneEvents)).
		WatchesRawSource(notice.Keys(r.ServedEvents)).
		WatchesRawSource(r.zoneNotFoundSource()).
		Named(cmp.Or(r.ControllerName, "dnszone")).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.MaxConcurrentReconciles, defaultMaxConcurrentReconciles)}).
		// Periodic: a reconcile that succeeds and polls again counts as a success.
		WatchesRawSource(periodic.Source()).
		Complete(periodic)
}

// childrenOf enqueues the zones that may link under z, so a parent's arrival, spec change,
// availability or deletion is seen at once (the watch's predicate drops its other status
// writes, which would re-plan every child on every parent poll).
func (r *Reconciler) childrenOf(ctx context.Context, o client.Object) []reconcile.Request {
	parent := o.(*dnsv1.DNSZone)
	var all dnsv1.DNSZoneList
	if err := r.Client.List(ctx, &all); err != nil {
		log.FromContext(ctx).Error(err, "listing the children of a DNSZone failed; the next event or resync catches up",
			"namespace", parent.Namespace, "name", parent.Name)
		return nil
	}
	var out []reconcile.Request
	for _, c := range all.Items {
		if c.Spec.LinkToParentDomain && dnswire.IsStrictSubdomain(c.Spec.Zone, parent.Spec.Zone) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
		}
	}
	// The zones whose tenancy verdict the parent decides (same zone, or inside it, in another
	// namespace).
	for _, req := range tenantsOf(parent, all.Items) {
		if !slices.Contains(out, req) {
			out = append(out, req)
		}
	}
	return out
}

func writerKey(account, zoneID string) zonewriter.Key {
	return zonewriter.Key{Account: account, ZoneID: zoneID}
}
