package source_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/source"
)

// gateway creates Gateway ns/name with listeners and sets its status.addresses to addr.
func gateway(t *testing.T, c client.Client, ns, name, addr string, listeners ...gwv1.Listener) *gwv1.Gateway {
	t.Helper()
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: gwv1.GatewaySpec{GatewayClassName: "test", Listeners: listeners}}
	create(t, c, gw)
	gw.Status.Addresses = []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.IPAddressType), Value: addr}}
	if err := c.Status().Update(ctxT(t), gw); err != nil {
		t.Fatalf("Gateway status: %v", err)
	}
	return gw
}

func parentRef(gw string) gwv1.ParentReference {
	return gwv1.ParentReference{Name: gwv1.ObjectName(gw)}
}

// accepted is status.parents saying the Gateway gw accepted the route.
func accepted(gw string, generation int64) []gwv1.RouteParentStatus {
	return []gwv1.RouteParentStatus{{ParentRef: parentRef(gw), ControllerName: "example.com/gateway-controller",
		Conditions: []metav1.Condition{{Type: string(gwv1.RouteConditionAccepted), Status: metav1.ConditionTrue, Reason: "Accepted",
			Message: "accepted", ObservedGeneration: generation, LastTransitionTime: metav1.Now()}}}}
}

// setParents writes a route's status.parents (read fresh, retried on conflict).
func setParents(t *testing.T, c client.Client, route client.Object, parents func(generation int64) []gwv1.RouteParentStatus) {
	t.Helper()
	eventually(t, "route status of "+route.GetName(), func() error {
		if err := c.Get(ctxT(t), client.ObjectKeyFromObject(route), route); err != nil {
			return err
		}
		p := parents(route.GetGeneration())
		switch r := route.(type) {
		case *gwv1.HTTPRoute:
			r.Status.Parents = p
		case *gwv1.GRPCRoute:
			r.Status.Parents = p
		case *gwv1.TLSRoute:
			r.Status.Parents = p
		case *gwv1.TCPRoute:
			r.Status.Parents = p
		case *gwv1.UDPRoute:
			r.Status.Parents = p
		default:
			return fmt.Errorf("unexpected %T", route)
		}
		return c.Status().Update(ctxT(t), route)
	})
}

// TestHTTPRoute_AttachedPublishedDetachedRemoved: an HTTPRoute accepted by a Gateway whose status
// has an address is published at its hostnames that match the listener; a bad TTL annotation
// gives an Event; when the route is detached (the Gateway no longer lists it in status.parents)
// its DNSEndpoint and records go; attached again they come back; a Gateway address change is
// followed.
func TestHTTPRoute_AttachedPublishedDetachedRemoved(t *testing.T) {
	const ns, zone = "gw-a", "gw-a.test"
	zoneNamespace(t, k8s, ns, zone)
	gw := gateway(t, k8s, ns, "gw", "192.0.2.30", gwv1.Listener{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80, Hostname: ptr.To(gwv1.Hostname("*." + zone))})
	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop", Annotations: map[string]string{ed + "ttl": "45"}},
		Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{parentRef("gw")}},
			Hostnames: []gwv1.Hostname{gwv1.Hostname("shop." + zone), "shop.elsewhere.test"}}}
	create(t, k8s, route)
	waitAnswer(t, "shop."+zone, dns.TypeA) // not attached yet: nothing
	setParents(t, k8s, route, func(g int64) []gwv1.RouteParentStatus { return accepted("gw", g) })
	ep := waitEndpoint(t, k8s, ns, "httproute-shop", endpointTTL("shop."+zone, 45))
	if len(ep.Spec.Endpoints) != 1 {
		t.Errorf("a hostname outside the listener's was published: %+v", ep.Spec.Endpoints)
	}
	waitAnswer(t, "shop."+zone, dns.TypeA, "192.0.2.30")

	annotate(t, route, map[string]string{ed + "ttl": "later"})
	waitEvent(t, k8s, ns, "HTTPRoute", "shop", dnsv1.ReasonInvalidTTL)
	waitEndpoint(t, k8s, ns, "httproute-shop", endpointTTL("shop."+zone, 45))

	// The Gateway's address changes: the record follows.
	gw.Status.Addresses = []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.IPAddressType), Value: "192.0.2.31"}}
	if err := k8s.Status().Update(ctxT(t), gw); err != nil {
		t.Fatal(err)
	}
	waitAnswer(t, "shop."+zone, dns.TypeA, "192.0.2.31")

	setParents(t, k8s, route, func(int64) []gwv1.RouteParentStatus { return []gwv1.RouteParentStatus{} }) // detached
	waitGone(t, k8s, ns, "httproute-shop")
	waitAnswer(t, "shop."+zone, dns.TypeA)

	setParents(t, k8s, route, func(g int64) []gwv1.RouteParentStatus { return accepted("gw", g) })
	waitAnswer(t, "shop."+zone, dns.TypeA, "192.0.2.31")
	if err := k8s.Delete(ctxT(t), route); err != nil {
		t.Fatal(err)
	}
	waitGone(t, k8s, ns, "httproute-shop")
}

// TestRoutes_EveryKindWithAnnotations: GRPC, TLS, TCP and UDP routes attached to listeners of
// their protocol are published (TCP and UDP routes through the hostname annotation, having no
// hostnames), and a hostname annotation that is not a DNS name gives an Event on the route.
func TestRoutes_EveryKindWithAnnotations(t *testing.T) {
	const ns, zone = "gw-b", "gw-b.test"
	zoneNamespace(t, k8s, ns, zone)
	gateway(t, k8s, ns, "gw", "192.0.2.40",
		gwv1.Listener{Name: "grpc", Protocol: gwv1.HTTPSProtocolType, Port: 443, Hostname: ptr.To(gwv1.Hostname("grpc." + zone)),
			TLS: &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{{Name: "cert"}}}},
		gwv1.Listener{Name: "tls", Protocol: gwv1.TLSProtocolType, Port: 8443, TLS: &gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModePassthrough)}},
		gwv1.Listener{Name: "tcp", Protocol: gwv1.TCPProtocolType, Port: 5432},
		gwv1.Listener{Name: "udp", Protocol: gwv1.UDPProtocolType, Port: 53})
	spec := gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{parentRef("gw")}}
	bad := func(name string) map[string]string {
		return map[string]string{ed + "hostname": name + "." + zone + ",bad name." + zone}
	}
	routes := []struct {
		obj       client.Object
		kind, dep string
		host      string
	}{
		{&gwv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g", Annotations: map[string]string{ed + "ttl": "x"}},
			Spec: gwv1.GRPCRouteSpec{CommonRouteSpec: spec, Hostnames: []gwv1.Hostname{gwv1.Hostname("grpc." + zone)}}}, "GRPCRoute", "grpcroute-g", "grpc." + zone},
		{&gwv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s", Annotations: map[string]string{ed + "target": "::ffff:192.0.2.1"}},
			Spec: gwv1.TLSRouteSpec{CommonRouteSpec: spec, Hostnames: []gwv1.Hostname{gwv1.Hostname("tls." + zone)},
				Rules: []gwv1.TLSRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{Name: "web", Port: ptr.To(gwv1.PortNumber(443))}}}}}}}, "TLSRoute", "tlsroute-s", "tls." + zone},
		{&gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c", Annotations: bad("tcp")},
			Spec: gwv1.TCPRouteSpec{CommonRouteSpec: spec, Rules: []gwv1.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{Name: "db", Port: ptr.To(gwv1.PortNumber(5432))}}}}}}}, "TCPRoute", "tcproute-c", "tcp." + zone},
		{&gwv1.UDPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "u", Annotations: bad("udp")},
			Spec: gwv1.UDPRouteSpec{CommonRouteSpec: spec, Rules: []gwv1.UDPRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{Name: "dns", Port: ptr.To(gwv1.PortNumber(53))}}}}}}}, "UDPRoute", "udproute-u", "udp." + zone},
	}
	reasons := map[string]string{"GRPCRoute": dnsv1.ReasonInvalidTTL, "TLSRoute": dnsv1.ReasonInvalidTarget, "TCPRoute": dnsv1.ReasonInvalidHostname, "UDPRoute": dnsv1.ReasonInvalidHostname}
	for _, r := range routes {
		create(t, k8s, r.obj)
		setParents(t, k8s, r.obj, func(g int64) []gwv1.RouteParentStatus { return accepted("gw", g) })
	}
	for _, r := range routes {
		waitEndpoint(t, k8s, ns, r.dep, nil)
		waitAnswer(t, r.host, dns.TypeA, "192.0.2.40")
		waitEvent(t, k8s, ns, r.kind, r.obj.GetName(), reasons[r.kind])
	}
}

// TestHTTPRoute_SelectorListener: a listener with allowedRoutes.namespaces.from Selector admits
// a route of another namespace once that namespace's labels match the selector, and not after
// they stop matching (the namespace watch republishes; the manager here runs cluster-wide, so
// it reads namespaces).
func TestHTTPRoute_SelectorListener(t *testing.T) {
	const ns, infra, zone = "gw-c", "gw-c-infra", "gw-c.test"
	zoneNamespace(t, k8s, ns, zone)
	create(t, k8s, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: infra}})
	gateway(t, k8s, infra, "gw", "192.0.2.60", gwv1.Listener{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80,
		AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromSelector),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"gateway-access": "web"}}}}})
	ref := gwv1.ParentReference{Name: "gw", Namespace: ptr.To(gwv1.Namespace(infra))}
	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sel"},
		Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{ref}}, Hostnames: []gwv1.Hostname{gwv1.Hostname("sel." + zone)}}}
	create(t, k8s, route)
	setParents(t, k8s, route, func(g int64) []gwv1.RouteParentStatus {
		p := accepted("gw", g)
		p[0].ParentRef = ref
		return p
	})
	labelNamespace := func(labels map[string]string) {
		n := &corev1.Namespace{}
		eventually(t, "label namespace "+ns, func() error {
			if err := k8s.Get(ctxT(t), client.ObjectKey{Name: ns}, n); err != nil {
				return err
			}
			n.Labels = labels
			return k8s.Update(ctxT(t), n)
		})
	}
	waitAnswer(t, "sel."+zone, dns.TypeA) // the namespace does not match yet
	labelNamespace(map[string]string{"gateway-access": "web"})
	waitAnswer(t, "sel."+zone, dns.TypeA, "192.0.2.60")
	labelNamespace(map[string]string{"gateway-access": "none"})
	waitGone(t, k8s, ns, "httproute-sel")
	waitAnswer(t, "sel."+zone, dns.TypeA)
}

// TestHTTPRoute_NamespaceAndGatewayNamespace: as external-dns limits routes by --namespace and
// Gateways by --gateway-namespace (docs/sources/gateway-api.md; its RouteNamespace test), a
// manager run with --namespace=apps --gateway-namespace=infra publishes a route of apps through
// a Gateway of infra, follows that Gateway's address, and publishes neither a route of apps
// through a Gateway of another namespace nor a route of another namespace. It has a control
// plane of its own: the suite's manager reads every namespace.
func TestHTTPRoute_NamespaceAndGatewayNamespace(t *testing.T) {
	cfg := envtest.StartWith(t, root, envtest.Options{SourceCRDs: true}).Config
	appCtx, cancel := context.WithCancel(context.Background()) // the zone writers' lifetime
	t.Cleanup(cancel)
	a, err := app.New(appCtx, managerConfig(cfg, t.TempDir(), source.Config{Sources: []string{source.GatewayHTTPRoute},
		Namespace: "apps", GatewayNamespace: "infra"}, prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	testrun.Background(t, "manager", a.Run)
	c, err := client.New(cfg, client.Options{Scheme: app.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	const zone = "apps.test"
	zoneNamespace(t, c, "apps", zone)
	zoneNamespace(t, c, "elsewhere", "elsewhere.test")
	create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	all := &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromAll)}}
	listener := gwv1.Listener{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80, AllowedRoutes: all}
	gw := gateway(t, c, "infra", "gw", "192.0.2.80", listener)
	gateway(t, c, "other", "gw", "192.0.2.81", listener)
	route := func(ns, name, gwNamespace, host string) {
		ref := gwv1.ParentReference{Name: "gw", Namespace: ptr.To(gwv1.Namespace(gwNamespace))}
		r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{ref}}, Hostnames: []gwv1.Hostname{gwv1.Hostname(host)}}}
		create(t, c, r)
		setParents(t, c, r, func(g int64) []gwv1.RouteParentStatus {
			p := accepted("gw", g)
			p[0].ParentRef = ref
			return p
		})
	}
	route("apps", "other-gw", "other", "other-gw."+zone)
	route("elsewhere", "web", "infra", "web.elsewhere.test")
	route("apps", "web", "infra", "web."+zone)
	target := func(ip string) func(*dnsv1.DNSEndpoint) error {
		return func(ep *dnsv1.DNSEndpoint) error {
			if e := ep.Spec.Endpoints; len(e) != 1 || e[0].DNSName != "web."+zone || len(e[0].Targets) != 1 || e[0].Targets[0] != ip {
				return fmt.Errorf("endpoints %+v, want web.%s A %s", e, zone, ip)
			}
			return nil
		}
	}
	waitEndpoint(t, c, "apps", "httproute-web", target("192.0.2.80"))
	for _, key := range []client.ObjectKey{{Namespace: "apps", Name: "httproute-other-gw"}, {Namespace: "elsewhere", Name: "httproute-web"}} {
		if err := c.Get(ctxT(t), key, &dnsv1.DNSEndpoint{}); !apierrors.IsNotFound(err) {
			t.Errorf("DNSEndpoint %s: %v, want none (outside --gateway-namespace or --namespace)", key, err)
		}
	}
	// A change of the Gateway in --gateway-namespace (outside --namespace) republishes the route.
	gw.Status.Addresses = []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.IPAddressType), Value: "192.0.2.82"}}
	if err := c.Status().Update(ctxT(t), gw); err != nil {
		t.Fatal(err)
	}
	waitEndpoint(t, c, "apps", "httproute-web", target("192.0.2.82"))
}
