package source

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// Route is what RouteEndpoints reads of any Gateway API route kind (HTTPRoute, GRPCRoute,
// TLSRoute, TCPRoute, UDPRoute): TCP and UDP routes have no hostnames.
type Route struct {
	// Kind is the route's kind, e.g. HTTPRoute; Protocol the listener protocol it attaches to
	// (HTTP for HTTP and GRPC routes, TLS, TCP, UDP).
	Kind     string
	Protocol gwv1.ProtocolType
	Meta     metav1.ObjectMeta
	// Hostnames, ParentRefs and Parents are spec.hostnames, spec.parentRefs and status.parents.
	Hostnames  []gwv1.Hostname
	ParentRefs []gwv1.ParentReference
	Parents    []gwv1.RouteParentStatus
}

// GatewayGroup and GatewayKind are a parentRef's defaults.
const (
	GatewayGroup = "gateway.networking.k8s.io"
	GatewayKind  = "Gateway"
)

// RouteInput is what RouteEndpoints reads for one route.
type RouteInput struct {
	Route Route
	// Gateways are the Gateways the route's parentRefs name, by namespace/name; a missing one
	// counts as not attached.
	Gateways map[types.NamespacedName]*gwv1.Gateway
	// GatewayName is --gateway-name: only Gateways of that name count; "" = every Gateway.
	GatewayName string
	// IgnoreHostnameAnnotation is --ignore-hostname-annotation: the route's hostname
	// annotation adds no name.
	IgnoreHostnameAnnotation bool
	// NamespaceLabels are the labels of the route's namespace, for listeners whose
	// allowedRoutes.namespaces.from is Selector; nil when namespaces cannot be read (the
	// manager runs with --watch-namespaces, and namespaces are cluster-scoped): such a listener
	// then admits nothing.
	NamespaceLabels map[string]string
	Domains         DomainFilter
}

// RouteEndpoints returns one route's endpoints as external-dns's gateway-*route sources derive
// them. For each status.parents entry that is one of spec.parentRefs, names a Gateway (of
// GatewayName, when set), and whose Accepted condition is True: each listener of that Gateway
// (its sectionName and port, when the parentRef sets them) whose protocol matches the route's and
// whose allowedRoutes admit the route (namespaces Same, All, or Selector matching the labels of
// the route's namespace, when NamespaceLabels can be read; and kinds), publishes each route
// hostname that matches the listener's hostname (wildcards as the Gateway API defines them; the
// more specific of the two is published; a route without hostnames takes the listener's, unless
// gateway-hostname-source is defined-hosts-only). The
// targets are the Gateway's target annotation, else its status.addresses. The route's hostname
// annotation adds names, as gateway-hostname-source says; a route without any hostname publishes
// nothing.
func RouteEndpoints(in RouteInput) ([]dnsv1.Endpoint, []Problem) {
	rt := in.Route
	a, probs := ParseAnnotations(rt.Meta.Annotations, KeyGatewayHostnameSource)
	if in.IgnoreHostnameAnnotation {
		a.Hostnames = nil
	}
	hosts, hp := routeHosts(rt, a)
	probs = append(probs, hp...)
	targets := map[string][]string{}
	for _, ps := range rt.Parents {
		gw, ok := in.parent(ps)
		if !ok {
			continue
		}
		gwTargets, tp := gatewayTargets(gw)
		probs = append(probs, tp...)
		for _, l := range gw.Spec.Listeners {
			if !listenerAdmits(l, ps.ParentRef, rt, gw.Namespace, in.NamespaceLabels) {
				continue
			}
			for _, h := range hosts {
				if m, ok := matchHost(listenerHost(l), h); ok {
					targets[m] = append(targets[m], gwTargets...)
				}
			}
		}
	}
	var out []dnsv1.Endpoint
	for h, ts := range targets {
		eps, p := forHost(h, ts, a, "Gateway status.addresses")
		out, probs = append(out, eps...), append(probs, p...)
	}
	return in.Domains.Finish(out, probs)
}

// routeHosts returns the route's hostnames as gateway-hostname-source says (external-dns v0.22
// source/gateway.go hosts()): annotation-only, the hostname annotation's; defined-hosts-only,
// spec.hostnames only (none when it is empty); unset or out of range, spec.hostnames, or "" standing
// for "the listener's" when it is empty, and the annotation's.
func routeHosts(rt Route, a Annotations) ([]string, []Problem) {
	if a.HostnameSource == HostnameSourceAnnotationOnly {
		return a.Hostnames, nil
	}
	var spec []string
	for _, h := range rt.Hostnames {
		spec = append(spec, string(h))
	}
	hosts, probs := specHostnames(spec, "spec.hostnames")
	if a.HostnameSource == HostnameSourceDefinedHostsOnly {
		return hosts, probs
	}
	if len(rt.Hostnames) == 0 {
		hosts = append(hosts, "")
	}
	return append(hosts, a.Hostnames...), probs
}

// parent returns the Gateway of a status.parents entry when it counts (see RouteEndpoints).
func (in RouteInput) parent(ps gwv1.RouteParentStatus) (*gwv1.Gateway, bool) {
	rt := in.Route
	ref := ps.ParentRef
	if !hasParentRef(rt, ref) || group(ref.Group) != GatewayGroup || kind(ref.Kind) != GatewayKind {
		return nil, false
	}
	if !meta.IsStatusConditionTrue(ps.Conditions, string(gwv1.RouteConditionAccepted)) {
		return nil, false
	}
	if in.GatewayName != "" && string(ref.Name) != in.GatewayName {
		return nil, false
	}
	gw, ok := in.Gateways[types.NamespacedName{Namespace: refNamespace(ref, rt.Meta.Namespace), Name: string(ref.Name)}]
	return gw, ok && gw != nil
}

func group(g *gwv1.Group) string {
	if g == nil {
		return GatewayGroup
	}
	return string(*g)
}

func kind(k *gwv1.Kind) string {
	if k == nil {
		return GatewayKind
	}
	return string(*k)
}

func refNamespace(ref gwv1.ParentReference, def string) string {
	if ref.Namespace == nil || *ref.Namespace == "" {
		return def
	}
	return string(*ref.Namespace)
}

// hasParentRef reports whether ref (from status) is one of the route's spec.parentRefs.
func hasParentRef(rt Route, ref gwv1.ParentReference) bool {
	for _, r := range rt.ParentRefs {
		if group(r.Group) == group(ref.Group) && kind(r.Kind) == kind(ref.Kind) && r.Name == ref.Name &&
			refNamespace(r, rt.Meta.Namespace) == refNamespace(ref, rt.Meta.Namespace) {
			return true
		}
	}
	return false
}

// ParentGateways returns the namespace/names of the Gateways the route's parentRefs name.
func ParentGateways(rt Route) []types.NamespacedName {
	var out []types.NamespacedName
	for _, r := range rt.ParentRefs {
		if group(r.Group) == GatewayGroup && kind(r.Kind) == GatewayKind {
			out = append(out, types.NamespacedName{Namespace: refNamespace(r, rt.Meta.Namespace), Name: string(r.Name)})
		}
	}
	return out
}

// gatewayTargets returns the Gateway's target annotation, else its status.addresses.
func gatewayTargets(gw *gwv1.Gateway) ([]string, []Problem) {
	a, probs := ParseAnnotations(gw.Annotations, KeyGatewayHostnameSource)
	if len(a.Targets) > 0 {
		return a.Targets, probs
	}
	var raw []string
	for _, addr := range gw.Status.Addresses {
		raw = append(raw, addr.Value)
	}
	targets, tp := ParseTargets(raw, "Gateway "+gw.Namespace+"/"+gw.Name+" status.addresses")
	return targets, append(probs, tp...)
}

func listenerHost(l gwv1.Listener) string {
	if l.Hostname == nil {
		return ""
	}
	return string(*l.Hostname)
}

// listenerAdmits reports whether listener l of a Gateway in gwNamespace takes the route through
// ref: section name, port, protocol and allowedRoutes (a Selector is matched against nsLabels,
// the labels of the route's namespace; nil admits nothing, as does a selector that does not
// parse).
func listenerAdmits(l gwv1.Listener, ref gwv1.ParentReference, rt Route, gwNamespace string, nsLabels map[string]string) bool {
	if ref.SectionName != nil && *ref.SectionName != "" && *ref.SectionName != l.Name {
		return false
	}
	if ref.Port != nil && *ref.Port != l.Port {
		return false
	}
	if !protocolMatches(rt.Protocol, l.Protocol) {
		return false
	}
	allow := l.AllowedRoutes
	from := gwv1.NamespacesFromSame
	if allow != nil && allow.Namespaces != nil && allow.Namespaces.From != nil {
		from = *allow.Namespaces.From
	}
	switch {
	case from == gwv1.NamespacesFromAll:
	case from == gwv1.NamespacesFromSame && gwNamespace == rt.Meta.Namespace:
	case from == gwv1.NamespacesFromSelector && nsLabels != nil && allow.Namespaces.Selector != nil:
		sel, err := metav1.LabelSelectorAsSelector(allow.Namespaces.Selector)
		if err != nil || !sel.Matches(labels.Set(nsLabels)) {
			return false
		}
	default:
		return false
	}
	if allow == nil || len(allow.Kinds) == 0 {
		return true
	}
	for _, k := range allow.Kinds {
		if group(k.Group) == GatewayGroup && string(k.Kind) == rt.Kind {
			return true
		}
	}
	return false
}

// protocolMatches: HTTPS listeners take HTTP routes, and TLS listeners TCP routes.
func protocolMatches(route, listener gwv1.ProtocolType) bool {
	if listener == gwv1.HTTPSProtocolType {
		listener = gwv1.HTTPProtocolType
	}
	if route == gwv1.TCPProtocolType && listener == gwv1.TLSProtocolType {
		listener = gwv1.TCPProtocolType
	}
	return route == listener
}

// matchHost returns the more specific of a listener hostname and a route hostname when they
// overlap ("" matches anything; "*.example.com" matches names below example.com, not
// example.com itself), as the Gateway API's hostname matching defines it.
func matchHost(listener, route string) (string, bool) {
	listener, route = dnswire.Dotless(listener), dnswire.Dotless(route)
	switch {
	case listener == "" && route == "":
		return "", false
	case listener == "":
		return route, true
	case route == "" || listener == route:
		return listener, true
	}
	a, b := listener, route
	if len(b) < len(a) || (len(a) == len(b) && strings.HasPrefix(b, "*.")) {
		a, b = b, a
	}
	if strings.HasPrefix(a, "*.") && strings.HasSuffix(b, a[1:]) {
		return b, true
	}
	return "", false
}
