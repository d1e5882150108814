package source

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	src "github.com/dnsplane/dnsplane/pkg/source"
)

// Kind is one source kind: how to read its objects and compute their endpoints.
type Kind struct {
	// Name is the --source name; Prefix starts the names of its DNSEndpoints.
	Name, Prefix string
	// GVK is the source object's kind; Requires lists the kinds that must be served before the
	// controller starts (the kind itself, and the Gateway for routes).
	GVK      schema.GroupVersionKind
	Requires []schema.GroupVersionKind
	// New returns an empty source object.
	New func() client.Object
	// Desired computes the object's endpoints; errors are read failures (retried).
	Desired func(ctx context.Context, r *Reconciler, obj client.Object) ([]dnsv1.Endpoint, []src.Problem, error)
	// Selected, when set, is a kind's own filter (the Ingress class).
	Selected func(r *Reconciler, obj client.Object) bool
	// OwnTypes says the kind's objects name their record types (crd), which
	// --managed-record-types does not narrow; the other kinds publish only managed types.
	OwnTypes bool
}

// gvCRD is external-dns's DNSEndpoint kind.
func gvCRD() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: src.ExternalDNSGroup, Version: src.ExternalDNSVersion, Kind: src.ExternalDNSKind}
}

// Kinds returns the Kind of each source name.
func Kinds() map[string]*Kind {
	ks := map[string]*Kind{
		src.Service: {Name: src.Service, Prefix: "svc", GVK: corev1.SchemeGroupVersion.WithKind("Service"), New: func() client.Object { return &corev1.Service{} }, Desired: serviceDesired,
			Selected: func(r *Reconciler, o client.Object) bool {
				return r.Config.ServiceTypeSelected(string(o.(*corev1.Service).Spec.Type))
			}},
		src.Ingress: {Name: src.Ingress, Prefix: "ing", GVK: networkingv1.SchemeGroupVersion.WithKind("Ingress"), New: func() client.Object { return &networkingv1.Ingress{} }, Desired: ingressDesired,
			Selected: func(r *Reconciler, o client.Object) bool {
				return src.IngressClassMatches(o.(*networkingv1.Ingress), r.Config.IngressClasses)
			}},
		src.CRD: {Name: src.CRD, Prefix: "externaldns", GVK: gvCRD(), Requires: []schema.GroupVersionKind{gvCRD()}, New: newExternalDNS, Desired: crdDesired, OwnTypes: true},
	}
	for _, rk := range routeKinds() {
		ks[rk.Name] = rk.kind()
	}
	return ks
}

func newExternalDNS() client.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvCRD())
	return u
}

func serviceDesired(ctx context.Context, r *Reconciler, obj client.Object) ([]dnsv1.Endpoint, []src.Problem, error) {
	svc := obj.(*corev1.Service)
	c := r.Config
	in := src.ServiceInput{Service: svc, PublishInternal: c.PublishInternal, ExcludeUnschedulable: !c.IncludeUnschedulable,
		IgnoreHostnameAnnotation: c.IgnoreHostnameAnnotation, PublishHostIP: c.PublishHostIP, AlwaysPublishNotReady: c.AlwaysPublishNotReady, Domains: c.Domains}
	headless := svc.Spec.ClusterIP == corev1.ClusterIPNone
	local := svc.Spec.Type == corev1.ServiceTypeNodePort && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	var slices discoveryv1.EndpointSliceList
	if err := r.Client.List(ctx, &slices, client.InNamespace(svc.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
		return nil, nil, fmt.Errorf("list the EndpointSlices of Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	in.Slices = slices.Items
	if headless || local {
		var pods corev1.PodList
		// An empty selector selects every pod of the namespace, as external-dns lists them.
		if err := r.Client.List(ctx, &pods, client.InNamespace(svc.Namespace), client.MatchingLabels(svc.Spec.Selector)); err != nil {
			return nil, nil, fmt.Errorf("list the pods of Service %s/%s: %w", svc.Namespace, svc.Name, err)
		}
		in.Pods = pods.Items
	}
	a, _ := src.ParseAnnotations(svc.Annotations, src.KeyHostnameSource)
	nodeIPs := headless && a.EndpointsType == src.EndpointsTypeNodeExternalIP
	if (svc.Spec.Type == corev1.ServiceTypeNodePort || nodeIPs) && r.Nodes {
		var nodes corev1.NodeList
		if err := r.Client.List(ctx, &nodes); err != nil {
			return nil, nil, fmt.Errorf("list nodes: %w", err)
		}
		in.Nodes = nodes.Items
		if in.Nodes == nil {
			in.Nodes = []corev1.Node{} // read, and none: not "cannot be read"
		}
	}
	eps, probs := src.ServiceEndpoints(in)
	return eps, probs, nil
}

func ingressDesired(_ context.Context, r *Reconciler, obj client.Object) ([]dnsv1.Endpoint, []src.Problem, error) {
	c := r.Config
	eps, probs := src.IngressEndpoints(obj.(*networkingv1.Ingress), src.IngressOptions{Domains: c.Domains,
		IgnoreTLSSpec: c.IgnoreIngressTLSSpec, IgnoreRulesSpec: c.IgnoreIngressRulesSpec, IgnoreHostnameAnnotation: c.IgnoreHostnameAnnotation})
	return eps, probs, nil
}

func crdDesired(_ context.Context, r *Reconciler, obj client.Object) ([]dnsv1.Endpoint, []src.Problem, error) {
	eps, probs := src.ExternalDNSEndpoints(obj.(*unstructured.Unstructured), r.Config.Domains)
	return eps, probs, nil
}

// routeKind is one Gateway API route kind: its list type and how to read a Route of it.
type routeKind struct {
	Name, Prefix, Kind string
	Protocol           gwv1.ProtocolType
	New                func() client.Object
	NewList            func() client.ObjectList
	// Route reads a Route of an object; Items the objects of a list.
	Route func(client.Object) src.Route
	Items func(client.ObjectList) []client.Object
}

func (rk routeKind) kind() *Kind {
	gvk := gwv1.SchemeGroupVersion.WithKind(rk.Kind)
	return &Kind{Name: rk.Name, Prefix: rk.Prefix, GVK: gvk, Requires: []schema.GroupVersionKind{gvk, gwv1.SchemeGroupVersion.WithKind("Gateway")}, New: rk.New,
		Desired: func(ctx context.Context, r *Reconciler, obj client.Object) ([]dnsv1.Endpoint, []src.Problem, error) {
			return routeDesired(ctx, r, rk.Route(obj))
		}}
}

func routeDesired(ctx context.Context, r *Reconciler, rt src.Route) ([]dnsv1.Endpoint, []src.Problem, error) {
	gws := map[types.NamespacedName]*gwv1.Gateway{}
	for _, key := range src.ParentGateways(rt) {
		if !r.Config.GatewaySelected(key.Namespace, r.WatchNamespaces) {
			continue // outside --gateway-namespace, or not watched: it does not count
		}
		gw := &gwv1.Gateway{}
		if err := r.Client.Get(ctx, key, gw); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return nil, nil, fmt.Errorf("get Gateway %s: %w", key, err)
			}
			continue
		}
		gws[key] = gw
	}
	in := src.RouteInput{Route: rt, Gateways: gws, GatewayName: r.Config.GatewayName,
		IgnoreHostnameAnnotation: r.Config.IgnoreHostnameAnnotation, Domains: r.Config.Domains}
	if r.Nodes && selectsNamespaces(gws) {
		ns := &corev1.Namespace{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: rt.Meta.Namespace}, ns); err != nil {
			return nil, nil, fmt.Errorf("get the route's namespace %s: %w", rt.Meta.Namespace, err)
		}
		in.NamespaceLabels = ns.Labels
		if in.NamespaceLabels == nil {
			in.NamespaceLabels = map[string]string{} // read, without labels
		}
	}
	eps, probs := src.RouteEndpoints(in)
	return eps, probs, nil
}

// selectsNamespaces reports whether a listener of gws admits routes by a namespace selector.
func selectsNamespaces(gws map[types.NamespacedName]*gwv1.Gateway) bool {
	for _, gw := range gws {
		for _, l := range gw.Spec.Listeners {
			if a := l.AllowedRoutes; a != nil && a.Namespaces != nil && a.Namespaces.From != nil && *a.Namespaces.From == gwv1.NamespacesFromSelector {
				return true
			}
		}
	}
	return false
}

func routeKinds() []routeKind {
	return []routeKind{
		{Name: src.GatewayHTTPRoute, Prefix: "httproute", Kind: "HTTPRoute", Protocol: gwv1.HTTPProtocolType,
			New: func() client.Object { return &gwv1.HTTPRoute{} }, NewList: func() client.ObjectList { return &gwv1.HTTPRouteList{} },
			Route: func(o client.Object) src.Route {
				x := o.(*gwv1.HTTPRoute)
				return src.Route{Kind: "HTTPRoute", Protocol: gwv1.HTTPProtocolType, Meta: x.ObjectMeta, Hostnames: x.Spec.Hostnames, ParentRefs: x.Spec.ParentRefs, Parents: x.Status.Parents}
			},
			Items: func(l client.ObjectList) []client.Object { return items(l.(*gwv1.HTTPRouteList).Items) }},
		{Name: src.GatewayGRPCRoute, Prefix: "grpcroute", Kind: "GRPCRoute", Protocol: gwv1.HTTPProtocolType,
			New: func() client.Object { return &gwv1.GRPCRoute{} }, NewList: func() client.ObjectList { return &gwv1.GRPCRouteList{} },
			Route: func(o client.Object) src.Route {
				x := o.(*gwv1.GRPCRoute)
				return src.Route{Kind: "GRPCRoute", Protocol: gwv1.HTTPProtocolType, Meta: x.ObjectMeta, Hostnames: x.Spec.Hostnames, ParentRefs: x.Spec.ParentRefs, Parents: x.Status.Parents}
			},
			Items: func(l client.ObjectList) []client.Object { return items(l.(*gwv1.GRPCRouteList).Items) }},
		{Name: src.GatewayTLSRoute, Prefix: "tlsroute", Kind: "TLSRoute", Protocol: gwv1.TLSProtocolType,
			New: func() client.Object { return &gwv1.TLSRoute{} }, NewList: func() client.ObjectList { return &gwv1.TLSRouteList{} },
			Route: func(o client.Object) src.Route {
				x := o.(*gwv1.TLSRoute)
				return src.Route{Kind: "TLSRoute", Protocol: gwv1.TLSProtocolType, Meta: x.ObjectMeta, Hostnames: x.Spec.Hostnames, ParentRefs: x.Spec.ParentRefs, Parents: x.Status.Parents}
			},
			Items: func(l client.ObjectList) []client.Object { return items(l.(*gwv1.TLSRouteList).Items) }},
		{Name: src.GatewayTCPRoute, Prefix: "tcproute", Kind: "TCPRoute", Protocol: gwv1.TCPProtocolType,
			New: func() client.Object { return &gwv1.TCPRoute{} }, NewList: func() client.ObjectList { return &gwv1.TCPRouteList{} },
			Route: func(o client.Object) src.Route {
				x := o.(*gwv1.TCPRoute)
				return src.Route{Kind: "TCPRoute", Protocol: gwv1.TCPProtocolType, Meta: x.ObjectMeta, ParentRefs: x.Spec.ParentRefs, Parents: x.Status.Parents}
			},
			Items: func(l client.ObjectList) []client.Object { return items(l.(*gwv1.TCPRouteList).Items) }},
		{Name: src.GatewayUDPRoute, Prefix: "udproute", Kind: "UDPRoute", Protocol: gwv1.UDPProtocolType,
			New: func() client.Object { return &gwv1.UDPRoute{} }, NewList: func() client.ObjectList { return &gwv1.UDPRouteList{} },
			Route: func(o client.Object) src.Route {
				x := o.(*gwv1.UDPRoute)
				return src.Route{Kind: "UDPRoute", Protocol: gwv1.UDPProtocolType, Meta: x.ObjectMeta, ParentRefs: x.Spec.ParentRefs, Parents: x.Status.Parents}
			},
			Items: func(l client.ObjectList) []client.Object { return items(l.(*gwv1.UDPRouteList).Items) }},
	}
}

// items returns pointers to the elements of a typed list.
func items[T any, PT interface {
	*T
	client.Object
}](list []T) []client.Object {
	out := make([]client.Object, len(list))
	for i := range list {
		out[i] = PT(&list[i])
	}
	return out
}
