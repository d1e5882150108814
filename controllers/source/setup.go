package source

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
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
// nodes; a route's Gateways, in --gateway-namespace when set). decorate, when not nil, wraps the reconciler.
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
		b = b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.servicesOfPod), builder.WithPredicates(inNamespace, podChanged()))
		if r.Nodes {
			b = b.Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.nodeServices), builder.WithPredicates(nodeChanged()))
		}
	case src.CRD, src.Ingress:
	default:
		// Gateways are limited by --gateway-namespace, not by --namespace.
		gateways := predicate.NewPredicateFuncs(func(o client.Object) bool {
			return r.Config.GatewaySelected(o.GetNamespace(), r.WatchNamespaces)
		})
		b = b.Watches(&gwv1.Gateway{}, handler.EnqueueRequestsFromMapFunc(r.routesOfGateway), builder.WithPredicates(gateways))
		if r.Nodes {
			// A namespace's labels decide what allowedRoutes.namespaces.selector admits.
			b = b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.routesOfNamespace), builder.WithPredicates(labelsChanged()))
		}
	}
	var rec reconcile.Reconciler = r
	if decorate != nil {
		rec = decorate(r)
	}
	return b.Complete(rec)
}

// nodeChanged passes node creations, deletions, and changes of the addresses or of
// spec.unschedulable: a node's status is rewritten for many other reasons, none of which moves
// a Service's targets.
func nodeChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		return !ok1 || !ok2 || o.Spec.Unschedulable != n.Spec.Unschedulable || !equality.Semantic.DeepEqual(o.Status.Addresses, n.Status.Addresses)
	}}
}

// podChanged passes pod creations, deletions, and the changes a Service's targets read: phase,
// readiness, node, host IP, deletion, labels and annotations (the target annotation).
func podChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		return o.Status.Phase != n.Status.Phase || src.PodReady(*o) != src.PodReady(*n) || o.Spec.NodeName != n.Spec.NodeName ||
			o.Status.HostIP != n.Status.HostIP || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
			!equality.Semantic.DeepEqual(o.Labels, n.Labels) || !equality.Semantic.DeepEqual(o.Annotations, n.Annotations)
	}}
}

// servicesOfPod enqueues the Services of the pod's namespace whose targets read pods (headless,
// or NodePort with externalTrafficPolicy Local) and whose selector selects it.
func (r *Reconciler) servicesOfPod(ctx context.Context, pod client.Object) []reconcile.Request {
	var list corev1.ServiceList
	if err := r.Client.List(ctx, &list, client.InNamespace(pod.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "listing Services after a pod changed failed; their next change or resync republishes them")
		return nil
	}
	var out []reconcile.Request
	for _, s := range list.Items {
		readsPods := s.Spec.ClusterIP == corev1.ClusterIPNone ||
			(s.Spec.Type == corev1.ServiceTypeNodePort && s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal)
		if readsPods && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(pod.GetLabels())) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
		}
	}
	return out
}

// serviceOfSlice enqueues the Service an EndpointSlice belongs to.
func serviceOfSlice(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

// nodeServices enqueues every NodePort Service (their targets are the nodes' addresses) and
// every headless one (endpoints-type NodeExternalIP reads them).
func (r *Reconciler) nodeServices(ctx context.Context, _ client.Object) []reconcile.Request {
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
		if s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.ClusterIP == corev1.ClusterIPNone {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
		}
	}
	return out
}

// labelsChanged passes creations, deletions and label changes.
func labelsChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	}}
}

// routesOfNamespace enqueues the routes of this kind in the namespace (within --namespace).
func (r *Reconciler) routesOfNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	if r.Config.Namespace != "" && ns.GetName() != r.Config.Namespace {
		return nil
	}
	rk := r.routeKind()
	if rk == nil {
		return nil
	}
	list := rk.NewList()
	if err := r.Client.List(ctx, list, client.InNamespace(ns.GetName())); err != nil {
		log.FromContext(ctx).Error(err, "listing routes after a namespace's labels changed failed; their next change republishes them", "kind", rk.Kind)
		return nil
	}
	var out []reconcile.Request
	for _, o := range rk.Items(list) {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
	}
	return out
}

// routeKind returns the routeKind of this reconciler's kind, nil for a kind that is no route.
func (r *Reconciler) routeKind() *routeKind {
	for _, k := range routeKinds() {
		if k.Name == r.Kind.Name {
			return &k
		}
	}
	return nil
}

// routesOfGateway enqueues the routes of this kind whose parentRefs name the Gateway.
func (r *Reconciler) routesOfGateway(ctx context.Context, gw client.Object) []reconcile.Request {
	rk := r.routeKind()
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
