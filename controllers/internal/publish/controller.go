package publish

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/predicates"
)

// Controller begins the controller of a record kind (DNSEndpoint, DNSRecord) named name: obj is
// reconciled on a spec change or deletion only, never on its own status writes
// (predicates.SpecOrDeletion), and again for the objects zones maps a DNSZone to when the zone's
// usability changes (predicates.ZoneUsabilityChanged), by workers reconciles at once (def when
// workers ≤ 0).
func Controller(mgr ctrl.Manager, obj client.Object, name string, zones handler.MapFunc, workers, def int) *builder.Builder {
	if workers <= 0 {
		workers = def
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(obj, builder.WithPredicates(predicates.SpecOrDeletion())).
		Watches(&dnsv1.DNSZone{}, handler.EnqueueRequestsFromMapFunc(zones), builder.WithPredicates(predicates.ZoneUsabilityChanged{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Named(name)
}
