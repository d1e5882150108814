package dnsendpoint

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// sweepZoneTimeout bounds one zone's part of the sweep: resolving its provider and reading its
// snapshot (the writer's view, read from the provider when it is not fresh).
const sweepZoneTimeout = time.Minute

// sweep finds the DNSEndpoints that hold records by their registry and no longer exist, and
// hands each to the controller with the zones that name it (publish.Inflight.Gone), whose
// reconcile finds it gone and releases its records there. It runs once, on the leader, after the
// first pass: an object deleted while no manager ran has no delete event, and DNSEndpoints carry
// no finalizer to keep one until its records are released. Every candidate is confirmed missing
// with a read from the API server, not the cache, before it is handed over. A zone whose
// provider cannot be resolved or read is skipped (logged): its records stay until the next
// start. It only reads; what it finds is logged with the count.
func (r *Reconciler) sweep(ctx context.Context, c cache.Cache) {
	l := log.FromContext(ctx).WithName("sweep")
	var zones dnsv1.DNSZoneList
	if err := c.List(ctx, &zones); err != nil {
		l.Error(err, "list DNSZones; deleted DNSEndpoints' records are released at the next start")
		return
	}
	held := map[types.NamespacedName][]string{}
	for i := range zones.Items {
		z := &zones.Items[i]
		if z.Status.ZoneID == "" || !z.DeletionTimestamp.IsZero() {
			continue
		}
		for _, key := range r.registered(ctx, z) {
			held[key] = append(held[key], z.Namespace+"/"+z.Name)
		}
	}
	live := r.APIReader
	if live == nil {
		live = c
	}
	gone := 0
	for key, zs := range held {
		var ep dnsv1.DNSEndpoint
		if err := c.Get(ctx, key, &ep); err == nil || !apierrors.IsNotFound(err) {
			continue
		}
		if err := live.Get(ctx, key, &ep); !apierrors.IsNotFound(err) {
			continue // there after all, or unknown: never released on a guess
		}
		r.inflight.Gone(key, zs, "") // its policy is not known: the manager's --policy
		gone++
	}
	l.Info("swept the zones' registries for deleted DNSEndpoints", "zones", len(zones.Items), "objects", len(held), "gone", gone)
}

// registered returns the DNSEndpoints of this manager that z's registry names, from its zone
// writer's view; none when the zone cannot be read (logged).
func (r *Reconciler) registered(ctx context.Context, z *dnsv1.DNSZone) []types.NamespacedName {
	ctx, cancel := context.WithTimeout(ctx, sweepZoneTimeout)
	defer cancel()
	resolved, err := r.Providers.Resolve(ctx, z.Namespace, z.Spec.ProviderRef.Name)
	if err != nil {
		log.FromContext(ctx).Info("zone not swept: its provider cannot be resolved", "zone", z.Spec.Zone, "error", err.Error())
		return nil
	}
	w := r.Writers.For(zonewriter.Key{Account: resolved.Account, ZoneID: z.Status.ZoneID}, resolved.Provider)
	snap, err := w.Snapshot(ctx, z.Spec.Zone)
	if err != nil {
		log.FromContext(ctx).Info("zone not swept: its records cannot be read", "zone", z.Spec.Zone, "error", err.Error())
		return nil
	}
	var out []types.NamespacedName
	for _, c := range snap.Index().Contributors(r.OwnerID, Kind) {
		if ns, name, ok := c.Object(); ok {
			out = append(out, client.ObjectKey{Namespace: ns, Name: name})
		}
	}
	return out
}
