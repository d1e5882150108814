package source

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	src "github.com/dnsplane/dnsplane/pkg/source"
)

// ControllerName is the controller's name of a source, as in logs and controller-runtime's
// metrics: source-<name>.
func ControllerName(name string) string { return "source-" + name }

// SetupWithManager adds the controller: the source objects (in --namespace, when set), the
// DNSEndpoints they own, and what their endpoints depend on (a Service's EndpointSlices and the
// nodes; a route's Gateways). decorate, when not nil, wraps the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, decorate func(reconcile.Reconciler) reconcile.Reconciler) error {
	var err error
	if r.annotations, r.labels, err = r.Config.Selectors(); err != nil {
		return err
	}
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return r.Config.Namespace == "" || o.GetNamespace() == r.Config.Namespace
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName(r.Kind.Name)).
		For(r.Kind.New(), builder.WithPredicates(inNamespace)).
		// Its DNSEndpoints' status writes do not matter here: spec changes and deletion do.
		Owns(&dnsv1.DNSEndpoint{}, builder.WithPredicates(inNamespace, predicate.GenerationChangedPredicate{}))
	switch r.Kind.Name {
	case src.Service:
		b = b.Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(serviceOfSlice), builder.WithPredicates(inNamespace))
		if r.Nodes {
			b = b.Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.nodePortServices), builder.WithPredicates(addressesChanged()))
		}
	case src.CRD, src.Ingress:
	default:
		b = b.Watches(&gwv1.Gateway{}, handler.EnqueueRequestsFromMapFunc(r.routesOfGateway), builder.WithPredicates(inNamespace))
	}
	var rec reconcile.Reconciler = r
	if decorate != nil {
		rec = decorate(r)
	}
	return b.Complete(rec)
}

// addressesChanged passes node creations, deletions and address changes: a node's status is
// rewritten for many other reasons, none of which moves a NodePort Service's targets.
func addressesChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		return !ok1 || !ok2 || !equality.Semantic.DeepEqual(o.Status.Addresses, n.Status.Addresses)
	}}
}

// serviceOfSlice enqueues the Service an EndpointSlice belongs to.
func serviceOfSlice(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

// nodePortServices enqueues every NodePort Service: their targets are the nodes' addresses.
func (r *Reconciler) nodePortServices(ctx context.Context, _ client.Object) []reconcile.Request {
	var list corev1.ServiceList
	var opts []client.ListOption
	if r.Config.Namespace != "" {
		opts = append(opts, client.InNamespace(r.Config.Namespace))
	}
	if err := r.Client.List(ctx, &list, opts...); err != nil {
		log.FromContext(ctx).Error(err, "listing Services after a node changed failed; their next change or resync republishes them")
		return nil
	}
	var out []reconcile.Request
	for _, s := range list.Items {
		if s.Spec.Type == corev1.ServiceTypeNodePort {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
		}
	}
	return out
}

// routesOfGateway enqueues the routes of this kind whose parentRefs name the Gateway.
func (r *Reconciler) routesOfGateway(ctx context.Context, gw client.Object) []reconcile.Request {
	var rk *routeKind
	for _, k := range routeKinds() {
		if k.Name == r.Kind.Name {
			rk = &k
		}
	}
	if rk == nil {
		return nil
	}
	list := rk.NewList()
	var opts []client.ListOption
	if r.Config.Namespace != "" {
		opts = append(opts, client.InNamespace(r.Config.Namespace))
	}
	if err := r.Client.List(ctx, list, opts...); err != nil {
		log.FromContext(ctx).Error(err, "listing routes after a Gateway changed failed; their next change republishes them", "kind", rk.Kind)
		return nil
	}
	key := client.ObjectKeyFromObject(gw)
	var out []reconcile.Request
	for _, o := range rk.Items(list) {
		for _, p := range src.ParentGateways(rk.Route(o)) {
			if p == key {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
				break
			}
		}
	}
	return out
}
