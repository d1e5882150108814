// Package predicates holds the event filters the dnsplane controllers share, so that every
// controller finds them in one place (controller-runtime's predicate.Predicate).
package predicates

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// SpecOrDeletion is the predicate of every kind's controller on its own kind (the builder's
// For): it passes spec changes (a new generation) and the update that starts deletion, never
// the controller's own status or metadata writes, so a status write does not re-trigger a
// reconcile (docs/architecture.md, "Reconcile shape"). Create, Delete and Generic events pass.
func SpecOrDeletion() predicate.Predicate {
	return predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, DeletionStarted{})
}

// DeletionStarted passes updates that set the deletion timestamp; with
// GenerationChangedPredicate (SpecOrDeletion) it makes a controller see spec changes and
// deletion, never its own status writes. Create, Delete and Generic events pass.
type DeletionStarted struct{ predicate.Funcs }

// Update implements predicate.Predicate.
func (DeletionStarted) Update(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
}

// ZoneUsabilityChanged passes DNSZone events that change what the objects publishing into the
// zone see: deletion, and changes of the hosted zone ID, availability and delegation. Other
// status changes (sync times, parent-link conditions) would re-plan every object of the zone for
// nothing. A zone's first ZoneAvailable condition, True or not, passes: objects that deferred
// their first plan until the zone was judged (publish.Options.DeferUnjudged) go on. A zone created unavailable is passed when it becomes available, so its objects
// reconcile once, together, and their writes land in one batch. Objects that are not DNSZones
// pass; Delete and Generic events pass.
type ZoneUsabilityChanged struct{ predicate.Funcs }

// Create implements predicate.Predicate.
func (ZoneUsabilityChanged) Create(e event.CreateEvent) bool {
	z, ok := e.Object.(*dnsv1.DNSZone)
	return !ok || meta.IsStatusConditionTrue(z.Status.Conditions, dnsv1.ConditionZoneAvailable)
}

// Update implements predicate.Predicate.
func (ZoneUsabilityChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*dnsv1.DNSZone)
	n, ok2 := e.ObjectNew.(*dnsv1.DNSZone)
	if !ok1 || !ok2 {
		return true
	}
	judged := func(z *dnsv1.DNSZone) bool {
		return meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionZoneAvailable) != nil
	}
	return o.Status.ZoneID != n.Status.ZoneID || judged(o) != judged(n) ||
		meta.IsStatusConditionTrue(o.Status.Conditions, dnsv1.ConditionZoneAvailable) != meta.IsStatusConditionTrue(n.Status.Conditions, dnsv1.ConditionZoneAvailable) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		!equality.Semantic.DeepEqual(o.Spec.Delegation, n.Spec.Delegation)
}

// UpdateOnly passes the updates for which pass(old, new) is true, and no create, delete or
// generic event: a filter for a status or annotation change that a builder's For predicate
// (SpecOrDeletion, GenerationChangedPredicate) drops.
func UpdateOnly(pass func(old, new client.Object) bool) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc:  func(e event.UpdateEvent) bool { return pass(e.ObjectOld, e.ObjectNew) },
	}
}
