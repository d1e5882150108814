package replica

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/predicates"
)

// WatchDNSZones sets r up as the controller name on every replica (no leader election): it sees
// DNSZones' creations, deletions and spec changes (a new generation), and the status updates
// for which changed(old, new) is true, which GenerationChangedPredicate drops.
func WatchDNSZones(mgr ctrl.Manager, name string, changed func(old, new *dnsv1.DNSZone) bool, r reconcile.Reconciler) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&dnsv1.DNSZone{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, ZoneUpdate(changed)))).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).
		Complete(r)
}

// ZoneUpdate passes the DNSZone updates for which changed(old, new) is true, and nothing else.
func ZoneUpdate(changed func(old, new *dnsv1.DNSZone) bool) predicate.Funcs {
	return predicates.UpdateOnly(func(o, n client.Object) bool {
		oz, ok1 := o.(*dnsv1.DNSZone)
		nz, ok2 := n.(*dnsv1.DNSZone)
		return ok1 && ok2 && changed(oz, nz)
	})
}

// GetSecret reads the Secret key through r (the manager's API reader: Secrets are not cached).
// client-go logs response bodies at V(8) with the context's logger, so the read gets a logger
// that discards: the Secret's bytes never reach a log. Errors: r's, wrapped with the key
// (apierrors.IsNotFound sees through).
func GetSecret(ctx context.Context, r client.Reader, key types.NamespacedName) (*corev1.Secret, error) {
	var s corev1.Secret
	if err := r.Get(logr.NewContext(ctx, logr.Discard()), key, &s); err != nil {
		return nil, fmt.Errorf("read Secret %s: %w", key, err)
	}
	return &s, nil
}
