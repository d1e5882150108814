package dnszone

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// The tenancy rules (docs/api.md, "Tenancy"). A namespace is a tenant: its DNSZones may not take
// another namespace's hosted zone or names. Between DNSZones of different namespaces:
//
//   - one hosted zone (the same zone ID within one provider Backend, whichever Secret reaches
//     it) has one holder, the oldest DNSZone of it; another namespace's DNSZone of that hosted
//     zone gets ZoneConflict unless the holder lists its namespace in sharing.allowedNamespaces;
//   - a zone inside the zone of an older DNSZone of another namespace (the nearest such one, a
//     proper suffix of its name) gets ParentNotAllowed unless that DNSZone lists its namespace in
//     delegation.allowedNamespaces. The rule holds whichever providers serve the two zones: a
//     server that serves both answers the inner zone's names from it (the more specific zone),
//     and on any server the inner zone claims names inside the outer one.
//
// "Oldest" is the earliest creationTimestamp; within its one-second resolution, a DNSZone that
// has its hosted zone (a zone ID) before one that has none, since it got there first (without
// this, a newcomer of the same second in a namespace that sorts first took the holder's place,
// and the serving holder was refused until the provider refused the newcomer); then
// namespace/name: deterministic, so two DNSZones created at once never both win. Only DNSZones that the rules accept count as holders and
// parents, judged oldest first, so a refused DNSZone blocks nobody. DNSZones of the same
// namespace never conflict with each other.

// tenant is one DNSZone as the tenancy rules see it.
type tenant struct {
	z *dnsv1.DNSZone
	// backend is the provider account its Secret reaches (factory.Backend); "" when unknown.
	backend string
	// zoneID is its hosted zone's provider ID; "" when it has none yet.
	zoneID string
}

// verdict is what judge decides for one DNSZone: reason "" lets it be served. parent is the
// DNSZone whose delegation.allowedNamespaces refuses it (ParentNotAllowed), else nil.
type verdict struct {
	reason, message string
	parent          *dnsv1.DNSZone
}

// older orders tenants by creationTimestamp, then the one with a zone ID first, then
// namespace/name.
func older(a, b tenant) int {
	return cmp.Or(a.z.CreationTimestamp.Compare(b.z.CreationTimestamp.Time), holds(b)-holds(a),
		cmp.Compare(a.z.Namespace, b.z.Namespace), cmp.Compare(a.z.Name, b.z.Name))
}

// holds is 1 when t has its hosted zone's ID, else 0.
func holds(t tenant) int {
	if t.zoneID != "" {
		return 1
	}
	return 0
}

// relevant reports whether o may decide self's verdict: a DNSZone of the same zone or of an
// enclosing one (every holder or parent of self, and those that decide theirs).
func relevant(self, o *dnsv1.DNSZone) bool {
	return o.Spec.Zone == self.Spec.Zone || dnswire.IsStrictSubdomain(self.Spec.Zone, o.Spec.Zone)
}

// judge applies the tenancy rules to self among others (every other DNSZone; self, matched by
// namespace/name, is skipped there). With sharing false only the parent rule is applied to self
// (before its hosted zone is known); the others are always judged by both. Pure.
func judge(self tenant, others []tenant, sharing bool) verdict {
	chain := []tenant{self}
	for _, o := range others {
		if (o.z.Namespace != self.z.Namespace || o.z.Name != self.z.Name) && relevant(self.z, o.z) {
			chain = append(chain, o)
		}
	}
	slices.SortFunc(chain, older)
	var accepted []tenant
	for _, t := range chain {
		isSelf := t.z.Namespace == self.z.Namespace && t.z.Name == self.z.Name
		v := parentRule(t, accepted)
		if v.reason == "" && (sharing || !isSelf) {
			v = sharingRule(t, accepted)
		}
		if isSelf {
			return v
		}
		if v.reason == "" {
			accepted = append(accepted, t)
		}
	}
	return verdict{}
}

// parentRule: t's nearest accepted enclosing DNSZone (the longest proper suffix of its zone, the
// oldest of that name) must be of t's namespace or list it in delegation.allowedNamespaces.
func parentRule(t tenant, accepted []tenant) verdict {
	var parent *dnsv1.DNSZone
	for _, a := range accepted {
		if dnswire.IsStrictSubdomain(t.z.Spec.Zone, a.z.Spec.Zone) && (parent == nil || len(a.z.Spec.Zone) > len(parent.Spec.Zone)) {
			parent = a.z
		}
	}
	if parent == nil || parent.Namespace == t.z.Namespace ||
		(parent.Spec.Delegation != nil && slices.Contains(parent.Spec.Delegation.AllowedNamespaces, t.z.Namespace)) {
		return verdict{}
	}
	return verdict{reason: dnsv1.ReasonParentNotAllowed, message: fmt.Sprintf(
		"zone %s is inside zone %s of DNSZone %s/%s, which does not list namespace %s in delegation.allowedNamespaces; the zone is not created or served until it does",
		t.z.Spec.Zone, parent.Spec.Zone, parent.Namespace, parent.Name, t.z.Namespace), parent: parent}
}

// sharingRule: the holder of t's hosted zone (the oldest accepted DNSZone that may hold the same
// one, sameHostedZone) must be of t's namespace or list it in sharing.allowedNamespaces.
func sharingRule(t tenant, accepted []tenant) verdict {
	for _, a := range accepted {
		if a.z.Spec.Zone != t.z.Spec.Zone || !sameHostedZone(a, t) {
			continue
		}
		if a.z.Namespace == t.z.Namespace || (a.z.Spec.Sharing != nil && slices.Contains(a.z.Spec.Sharing.AllowedNamespaces, t.z.Namespace)) {
			return verdict{}
		}
		held := "holds"
		if a.zoneID == "" {
			held = "may hold (it has no hosted zone yet)"
		}
		return verdict{reason: dnsv1.ReasonZoneConflict, message: fmt.Sprintf(
			"hosted zone %s at this provider account %s: DNSZone %s/%s %s it and does not list namespace %s in sharing.allowedNamespaces; nothing is written",
			t.z.Spec.Zone, idNote(t.zoneID), a.z.Namespace, a.z.Name, held, t.z.Namespace)}
	}
	return verdict{}
}

func idNote(id string) string {
	if id == "" {
		return "(no zone ID yet)"
	}
	return "(zone ID " + id + ")"
}

// sameHostedZone reports whether holder a and t may be one hosted zone: the same Backend (or one
// unknown) and the same zone ID, or a zone ID still unknown (t, or a holder that is not refused
// by the provider: it may be creating that very zone).
func sameHostedZone(a, t tenant) bool {
	if a.backend != "" && t.backend != "" && a.backend != t.backend {
		return false
	}
	switch {
	case a.zoneID != "" && t.zoneID != "":
		return a.zoneID == t.zoneID
	case a.zoneID == "":
		// A DNSZone the provider refused (a zone of that name that is not its own) holds nothing.
		c := meta.FindStatusCondition(a.z.Status.Conditions, dnsv1.ConditionZoneAvailable)
		return c == nil || c.Reason != dnsv1.ReasonZoneConflict
	}
	return true
}

// tenants returns every DNSZone of the cluster (the cache) that may decide z's tenancy verdict
// (relevant), as judge takes them. The backends of the DNSZones of the same zone in other
// namespaces are resolved from their Secrets (memoised by the factory: a Secret GET on first
// use); a Secret that cannot be resolved leaves its backend unknown, which may be any. Errors
// are API list errors.
func (r *Reconciler) tenants(ctx context.Context, z *dnsv1.DNSZone) ([]tenant, error) {
	var all dnsv1.DNSZoneList
	if err := r.Client.List(ctx, &all, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list DNSZones: %w", err)
	}
	var others []tenant
	for i := range all.Items {
		o := &all.Items[i]
		if (o.Namespace == z.Namespace && o.Name == z.Name) || !relevant(z, o) {
			continue
		}
		t := tenant{z: o, zoneID: o.Status.ZoneID}
		if o.Spec.Zone == z.Spec.Zone && o.Namespace != z.Namespace {
			if res, err := r.Providers.Resolve(ctx, o.Namespace, o.Spec.ProviderRef.Name); err == nil {
				t.backend = res.Backend
			}
		}
		others = append(others, t)
	}
	return others, nil
}

// refuse records a tenancy verdict on ZoneAvailable (hence Ready): nothing is created, adopted
// or written, and status.zoneID is left as it was. A zone refused by its parent
// (ParentNotAllowed) that asks for a parent link has none: ParentLinkCreated says
// DelegationNotAllowed, naming that parent, and a link DNSEndpoint of it is deleted. The zone is
// judged again when a DNSZone that decides it changes (tenantsOf) and every
// --zone-resync-interval.
func (r *Reconciler) refuse(ctx context.Context, z *dnsv1.DNSZone, v verdict) (ctrl.Result, error) {
	status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionZoneAvailable, false, v.reason, v.message)
	if v.parent != nil && z.Spec.LinkToParentDomain {
		r.setLink(z, false, dnsv1.ReasonDelegationNotAllowed, notAllowedMessage(z, v.parent))
		if _, err := r.deleteParentLink(ctx, z); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: r.ResyncInterval}, nil
}

// tenantsOf enqueues the DNSZones whose tenancy verdict z may decide: those of the same zone
// and those inside it, in other namespaces than z's (a holder or parent that appears, changes
// its sharing or delegation, gets a zone ID or goes away).
func tenantsOf(z *dnsv1.DNSZone, all []dnsv1.DNSZone) []reconcile.Request {
	var out []reconcile.Request
	for i := range all {
		c := &all[i]
		if c.Namespace != z.Namespace && (c.Spec.Zone == z.Spec.Zone || dnswire.IsStrictSubdomain(c.Spec.Zone, z.Spec.Zone)) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return out
}
