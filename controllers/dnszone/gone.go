package dnszone

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/notice"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// indexZoneID indexes DNSZones by status.zoneID, to find the zone a zone writer reports.
const indexZoneID = "status.zoneID"

// recreatedRecheck is how soon a re-created zone's SOA is checked, so that its records are
// republished (on ZoneAvailable=True) without waiting for a whole --soa-poll-interval.
const recreatedRecheck = time.Second

// recoverDeleted handles a hosted zone that its zone writer found missing at the provider
// (zonewriter.Writer.ZoneNotFound, reported through zonewriter.Set.ZoneNotFound). It confirms
// with GetZone; a zone dnsplane created is re-created (Event ZoneRecreated) and its writer reset,
// an adopted one (spec.zoneID) is not. Either way ZoneAvailable=False, reason
// ZoneDeletedAtProvider, whose transition emits the Warning Event; the next SOA check sets it
// True again, which republishes every DNSEndpoint and DNSRecord of the zone
// (predicates.ZoneUsabilityChanged). handled is false when nothing was reported, or the zone is
// there after all (the report is then cleared). Errors are the provider's, for back-off.
func (r *Reconciler) recoverDeleted(ctx context.Context, z *dnsv1.DNSZone, resolved provider.Resolved) (res ctrl.Result, handled bool, err error) {
	if z.Status.ZoneID == "" || (z.Spec.ZoneID != "" && z.Spec.ZoneID != z.Status.ZoneID) {
		return ctrl.Result{}, false, nil
	}
	w := r.Writers.Lookup(writerKey(resolved.Account, z.Status.ZoneID))
	if w == nil || !w.ZoneNotFound() {
		return ctrl.Result{}, false, nil
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	_, gerr := resolved.Provider.GetZone(cctx, z.Status.ZoneID)
	cancel()
	switch {
	case gerr == nil:
		w.Reset() // re-created by someone else in the meantime: read it afresh
		return ctrl.Result{}, false, nil
	case !errors.Is(gerr, provider.ErrZoneNotFound):
		res, err := r.providerFailed(z, gerr)
		return res, true, err
	}
	old := z.Status.ZoneID
	log.FromContext(ctx).Info("hosted zone deleted at the provider", "zone", z.Spec.Zone, "zoneID", old, "adopted", z.Spec.ZoneID != "")
	if z.Spec.ZoneID != "" {
		status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionZoneAvailable, false, dnsv1.ReasonZoneDeletedAtProvider,
			fmt.Sprintf("hosted zone %s (spec.zoneID) was deleted at the provider; an adopted zone is not re-created: create it again and set spec.zoneID to its ID, or remove spec.zoneID to let dnsplane create one", old))
		return ctrl.Result{RequeueAfter: r.ResyncInterval}, true, nil
	}
	pz, _, _, err := r.ensureHostedZone(ctx, z, resolved.Provider) // created, never adopted: no sets
	if err != nil {
		res, err := r.providerFailed(z, fmt.Errorf("re-create hosted zone %s deleted at the provider: %w", old, err))
		return res, true, err
	}
	w.Reset()
	z.Status.ZoneID, z.Status.NameServers, z.Status.LastSyncGeneration = pz.ID, pz.NameServers, z.Generation
	now := metav1.NewTime(r.now())
	z.Status.LastSyncTimestamp = &now
	r.Recorder.Eventf(z, corev1.EventTypeNormal, dnsv1.ReasonZoneRecreated,
		"hosted zone %s of %s was deleted at the provider; re-created it as %s, and its DNSEndpoints and DNSRecords are republished", old, z.Spec.Zone, pz.ID)
	status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionZoneAvailable, false, dnsv1.ReasonZoneDeletedAtProvider,
		fmt.Sprintf("hosted zone %s was deleted at the provider outside dnsplane; re-created as %s, its records are republished once it answers SOA", old, pz.ID))
	return ctrl.Result{RequeueAfter: min(recreatedRecheck, r.SOAPollInterval)}, true, nil
}

// zoneNotFoundSource enqueues the DNSZones of the zones that zone writers report missing at the
// provider (zonewriter.Set.ZoneNotFound), so that a deletion outside dnsplane is seen at once
// rather than at the next --zone-resync-interval.
func (r *Reconciler) zoneNotFoundSource() source.Source {
	return notice.Fan(r.Writers.ZoneNotFound(), r.zonesOfWriter)
}

// zonesOfWriter returns the DNSZones whose hosted zone is k: status.zoneID k.ZoneID, and a
// provider Secret that is k.Account ("<namespace>/<secret name>", provider.Resolved.Account).
func (r *Reconciler) zonesOfWriter(ctx context.Context, k zonewriter.Key) []reconcile.Request {
	ns, secret, ok := strings.Cut(k.Account, "/")
	if !ok {
		return nil
	}
	var zones dnsv1.DNSZoneList
	if err := r.Client.List(ctx, &zones, client.InNamespace(ns), client.MatchingFields{indexZoneID: k.ZoneID}); err != nil {
		log.FromContext(ctx).Error(err, "list the DNSZones of a zone deleted at the provider", "zoneID", k.ZoneID)
		return nil
	}
	var out []reconcile.Request
	for i := range zones.Items {
		if zones.Items[i].Spec.ProviderRef.Name == secret {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&zones.Items[i])})
		}
	}
	return out
}
