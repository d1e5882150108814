package source

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

const host = ExternalDNSPrefix + "hostname"

func ep(name, typ string, targets ...string) dnsv1.Endpoint {
	return dnsv1.Endpoint{DNSName: name, RecordType: typ, Targets: targets}
}

func node(name string, addrs ...corev1.NodeAddress) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: addrs}}
}

func TestServiceEndpoints(t *testing.T) {
	ann := map[string]string{host: "s.example.com"}
	lb := corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}, {IP: "2001:db8::10"}}}}
	nodes := []corev1.Node{
		node("n1", corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.1"}, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}),
		node("n2", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}),
	}
	svc := func(typ corev1.ServiceType, clusterIP string, a map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Annotations: a}, Spec: corev1.ServiceSpec{Type: typ, ClusterIP: clusterIP}}
	}
	withLB := svc(corev1.ServiceTypeLoadBalancer, "10.96.0.1", ann)
	withLB.Status = lb
	lbHost := svc(corev1.ServiceTypeLoadBalancer, "10.96.0.1", ann)
	lbHost.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb.cloud.example"}}
	extIPs := svc(corev1.ServiceTypeLoadBalancer, "10.96.0.1", ann)
	extIPs.Spec.ExternalIPs = []string{"198.51.100.1"}
	extIPs.Status = lb
	extName := svc(corev1.ServiceTypeExternalName, "", ann)
	extName.Spec.ExternalName = "db.example.net"
	for _, tc := range []struct {
		name     string
		in       ServiceInput
		want     []dnsv1.Endpoint
		problems []string
	}{
		{name: "LoadBalancer IPs", in: ServiceInput{Service: withLB}, want: []dnsv1.Endpoint{ep("s.example.com", "A", "192.0.2.10"), ep("s.example.com", "AAAA", "2001:db8::10")}},
		{name: "LoadBalancer host name", in: ServiceInput{Service: lbHost}, want: []dnsv1.Endpoint{ep("s.example.com", "CNAME", "lb.cloud.example")}},
		{name: "LoadBalancer externalIPs first", in: ServiceInput{Service: extIPs}, want: []dnsv1.Endpoint{ep("s.example.com", "A", "198.51.100.1")}},
		{name: "LoadBalancer pending", in: ServiceInput{Service: svc(corev1.ServiceTypeLoadBalancer, "10.96.0.1", ann)}},
		{name: "no annotation", in: ServiceInput{Service: func() *corev1.Service { s := withLB.DeepCopy(); s.Annotations = nil; return s }()}},
		{name: "target annotation wins", in: ServiceInput{Service: func() *corev1.Service {
			s := withLB.DeepCopy()
			s.Annotations = map[string]string{host: "s.example.com", ExternalDNSPrefix + "target": "192.0.2.99"}
			return s
		}()}, want: []dnsv1.Endpoint{ep("s.example.com", "A", "192.0.2.99")}},
		{name: "ClusterIP without --publish-internal-services", in: ServiceInput{Service: svc(corev1.ServiceTypeClusterIP, "10.96.0.1", ann)}},
		{name: "ClusterIP with --publish-internal-services", in: ServiceInput{Service: svc(corev1.ServiceTypeClusterIP, "10.96.0.1", ann), PublishInternal: true},
			want: []dnsv1.Endpoint{ep("s.example.com", "A", "10.96.0.1")}},
		{name: "internal-hostname", in: ServiceInput{Service: svc(corev1.ServiceTypeClusterIP, "10.96.0.1", map[string]string{ExternalDNSPrefix + "internal-hostname": "i.example.com"})},
			want: []dnsv1.Endpoint{ep("i.example.com", "A", "10.96.0.1")}},
		{name: "NodePort: external IPs", in: ServiceInput{Service: svc(corev1.ServiceTypeNodePort, "10.96.0.1", ann), Nodes: nodes},
			want: []dnsv1.Endpoint{ep("s.example.com", "A", "203.0.113.1")}},
		{name: "NodePort: access private", in: ServiceInput{Service: svc(corev1.ServiceTypeNodePort, "10.96.0.1", map[string]string{host: "s.example.com", ExternalDNSPrefix + "access": "private"}), Nodes: nodes},
			want: []dnsv1.Endpoint{ep("s.example.com", "A", "10.0.0.1", "10.0.0.2")}},
		// external-dns reads access as written: "Private" is neither public nor private, so
		// the ExternalIP addresses are published (extractNodePortTargets' default).
		{name: "NodePort: access Private (not as written) is ignored", in: ServiceInput{Service: svc(corev1.ServiceTypeNodePort, "10.96.0.1", map[string]string{host: "s.example.com", ExternalDNSPrefix + "access": "Private"}), Nodes: nodes},
			want: []dnsv1.Endpoint{ep("s.example.com", "A", "203.0.113.1")}, problems: []string{dnsv1.ReasonInvalidAnnotation}},
		{name: "NodePort without nodes", in: ServiceInput{Service: svc(corev1.ServiceTypeNodePort, "10.96.0.1", ann)}, problems: []string{dnsv1.ReasonInvalidTarget}},
		{name: "ExternalName", in: ServiceInput{Service: extName}, want: []dnsv1.Endpoint{ep("s.example.com", "CNAME", "db.example.net")}},
		{name: "domain filter", in: ServiceInput{Service: withLB, Domains: DomainFilter{Exclude: []string{"example.com"}}}},
		{name: "ttl, set identifier, weight", in: ServiceInput{Service: func() *corev1.Service {
			s := withLB.DeepCopy()
			s.Status.LoadBalancer.Ingress = s.Status.LoadBalancer.Ingress[:1]
			s.Annotations = map[string]string{host: "s.example.com", ExternalDNSPrefix + "ttl": "60", ExternalDNSPrefix + "set-identifier": "eu", ExternalDNSPrefix + "aws-weight": "7"}
			return s
		}()}, want: []dnsv1.Endpoint{{DNSName: "s.example.com", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.10"}, RecordTTL: 60, SetIdentifier: "eu",
			ProviderSpecific: dnsv1.ProviderSpecific{{Name: "aws/weight", Value: "7"}}}}},
		{name: "bad values", in: ServiceInput{Service: func() *corev1.Service {
			s := withLB.DeepCopy()
			s.Annotations = map[string]string{host: "s.example.com,bad_.-x", ExternalDNSPrefix + "ttl": "x", ExternalDNSPrefix + "target": "::ffff:192.0.2.1,192.0.2.3"}
			return s
		}()}, want: []dnsv1.Endpoint{ep("s.example.com", "A", "192.0.2.3")}, problems: []string{dnsv1.ReasonInvalidHostname, dnsv1.ReasonInvalidTTL, dnsv1.ReasonInvalidTarget}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, probs := ServiceEndpoints(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if !sameSet(reasons(probs), tc.problems) {
				t.Errorf("problems %v, want %v", probs, tc.problems)
			}
		})
	}
}

func TestIngressEndpoints(t *testing.T) {
	ing := func(ann map[string]string, hosts ...string) *networkingv1.Ingress {
		i := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "i", Namespace: "ns", Annotations: ann}}
		for _, h := range hosts {
			i.Spec.Rules = append(i.Spec.Rules, networkingv1.IngressRule{Host: h})
		}
		i.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.20"}}
		return i
	}
	tls := ing(nil, "a.example.com")
	tls.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"t.example.com", "a.example.com"}}}
	hostLB := ing(nil, "a.example.com")
	hostLB.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{Hostname: "lb.example.net"}}
	for _, tc := range []struct {
		name     string
		in       *networkingv1.Ingress
		opts     IngressOptions
		want     []dnsv1.Endpoint
		problems []string
	}{
		{name: "rules", in: ing(nil, "a.example.com", "", "b.example.com"), want: []dnsv1.Endpoint{ep("a.example.com", "A", "192.0.2.20"), ep("b.example.com", "A", "192.0.2.20")}},
		{name: "tls hosts", in: tls, want: []dnsv1.Endpoint{ep("a.example.com", "A", "192.0.2.20"), ep("t.example.com", "A", "192.0.2.20")}},
		{name: "rules and annotation", in: ing(map[string]string{host: "c.example.com"}, "a.example.com"), want: []dnsv1.Endpoint{ep("a.example.com", "A", "192.0.2.20"), ep("c.example.com", "A", "192.0.2.20")}},
		{name: "annotation-only", in: ing(map[string]string{host: "c.example.com", ExternalDNSPrefix + KeyHostnameSource: "annotation-only"}, "a.example.com"),
			want: []dnsv1.Endpoint{ep("c.example.com", "A", "192.0.2.20")}},
		{name: "defined-hosts-only", in: ing(map[string]string{host: "c.example.com", ExternalDNSPrefix + KeyHostnameSource: "defined-hosts-only"}, "a.example.com"),
			want: []dnsv1.Endpoint{ep("a.example.com", "A", "192.0.2.20")}},
		{name: "load balancer host name", in: hostLB, want: []dnsv1.Endpoint{ep("a.example.com", "CNAME", "lb.example.net")}},
		{name: "target annotation", in: ing(map[string]string{ExternalDNSPrefix + "target": "2001:db8::20"}, "a.example.com"), want: []dnsv1.Endpoint{ep("a.example.com", "AAAA", "2001:db8::20")}},
		{name: "wildcard rule", in: ing(nil, "*.example.com"), want: []dnsv1.Endpoint{ep("*.example.com", "A", "192.0.2.20")}},
		// external-dns v0.22 source/ingress.go, endpointsFromIngress: --ignore-ingress-tls-spec,
		// --ignore-ingress-rules-spec and --ignore-hostname-annotation each leave one name
		// source out.
		{name: "--ignore-ingress-tls-spec", in: tls, opts: IngressOptions{IgnoreTLSSpec: true}, want: []dnsv1.Endpoint{ep("a.example.com", "A", "192.0.2.20")}},
		{name: "--ignore-ingress-rules-spec", in: tls, opts: IngressOptions{IgnoreRulesSpec: true}, want: []dnsv1.Endpoint{ep("a.example.com", "A", "192.0.2.20"), ep("t.example.com", "A", "192.0.2.20")}},
		{name: "--ignore-ingress-rules-spec and tls spec: the annotation only", in: ing(map[string]string{host: "c.example.com"}, "a.example.com"), opts: IngressOptions{IgnoreRulesSpec: true, IgnoreTLSSpec: true},
			want: []dnsv1.Endpoint{ep("c.example.com", "A", "192.0.2.20")}},
		{name: "--ignore-hostname-annotation", in: ing(map[string]string{host: "c.example.com"}, "a.example.com"), opts: IngressOptions{IgnoreHostnameAnnotation: true},
			want: []dnsv1.Endpoint{ep("a.example.com", "A", "192.0.2.20")}},
		{name: "bad ttl keeps the rest", in: ing(map[string]string{ExternalDNSPrefix + "ttl": "1h30x"}, "a.example.com"), want: []dnsv1.Endpoint{ep("a.example.com", "A", "192.0.2.20")},
			problems: []string{dnsv1.ReasonInvalidTTL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, probs := IngressEndpoints(tc.in, tc.opts)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if !sameSet(reasons(probs), tc.problems) {
				t.Errorf("problems %v, want %v", probs, tc.problems)
			}
		})
	}
}

func TestIngressClassMatches(t *testing.T) {
	byName := &networkingv1.Ingress{Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx")}}
	byAnn := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{IngressClassAnnotation: "traefik"}}}
	for _, tc := range []struct {
		ing     *networkingv1.Ingress
		classes []string
		want    bool
	}{{byName, nil, true}, {byName, []string{"nginx"}, true}, {byName, []string{"traefik"}, false}, {byAnn, []string{"traefik"}, true}, {&networkingv1.Ingress{}, []string{"nginx"}, false}} {
		if got := IngressClassMatches(tc.ing, tc.classes); got != tc.want {
			t.Errorf("%+v %v: %v, want %v", tc.ing.Spec, tc.classes, got, tc.want)
		}
	}
}

func TestMatchHost(t *testing.T) {
	for _, tc := range []struct {
		l, r, want string
		ok         bool
	}{
		{"", "a.example.com", "a.example.com", true},
		{"a.example.com", "", "a.example.com", true},
		{"", "", "", false},
		{"*.example.com", "a.example.com", "a.example.com", true},
		{"a.example.com", "*.example.com", "a.example.com", true},
		{"*.example.com", "example.com", "", false},
		{"*.example.com", "*.a.example.com", "*.a.example.com", true},
		{"a.example.com", "b.example.com", "", false},
	} {
		got, ok := matchHost(tc.l, tc.r)
		if got != tc.want || ok != tc.ok {
			t.Errorf("matchHost(%q, %q) = %q, %v; want %q, %v", tc.l, tc.r, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRouteEndpoints(t *testing.T) {
	all := gwv1.NamespacesFromAll
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "infra"},
		Spec: gwv1.GatewaySpec{Listeners: []gwv1.Listener{
			{Name: "web", Protocol: gwv1.HTTPSProtocolType, Port: 443, Hostname: ptr.To(gwv1.Hostname("*.example.com")), AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &all}}},
			{Name: "same", Protocol: gwv1.HTTPProtocolType, Port: 80, Hostname: ptr.To(gwv1.Hostname("same.example.org"))},
			{Name: "tcp", Protocol: gwv1.TCPProtocolType, Port: 5432, AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &all}}},
			{Name: "selected", Protocol: gwv1.HTTPProtocolType, Port: 8080, Hostname: ptr.To(gwv1.Hostname("s.example.net")), AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{
				From: ptr.To(gwv1.NamespacesFromSelector), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "web"}}}}},
		}},
		Status: gwv1.GatewayStatus{Addresses: []gwv1.GatewayStatusAddress{{Value: "192.0.2.30"}, {Value: "2001:db8::30"}}}}
	gws := map[types.NamespacedName]*gwv1.Gateway{{Namespace: "infra", Name: "gw"}: gw}
	ref := gwv1.ParentReference{Name: "gw", Namespace: ptr.To(gwv1.Namespace("infra"))}
	accepted := []gwv1.RouteParentStatus{{ParentRef: ref, Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue}}}}
	rt := func(kind string, proto gwv1.ProtocolType, hosts []gwv1.Hostname, parents []gwv1.RouteParentStatus, ann map[string]string) Route {
		return Route{Kind: kind, Protocol: proto, Meta: metav1.ObjectMeta{Name: "r", Namespace: "app", Annotations: ann}, Hostnames: hosts, ParentRefs: []gwv1.ParentReference{ref}, Parents: parents}
	}
	addr := func(name string) []dnsv1.Endpoint {
		return []dnsv1.Endpoint{ep(name, "A", "192.0.2.30"), ep(name, "AAAA", "2001:db8::30")}
	}
	for _, tc := range []struct {
		name    string
		in      RouteInput
		want    []dnsv1.Endpoint
		reasons []string
	}{
		{name: "attached", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"a.example.com"}, accepted, nil), Gateways: gws}, want: addr("a.example.com")},
		{name: "detached (no status parent)", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"a.example.com"}, nil, nil), Gateways: gws}},
		{name: "not accepted", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"a.example.com"},
			[]gwv1.RouteParentStatus{{ParentRef: ref, Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse}}}}, nil), Gateways: gws}},
		{name: "hostname outside every listener", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"a.example.net"}, accepted, nil), Gateways: gws}},
		{name: "listener of another namespace (Same)", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"same.example.org"}, accepted, nil), Gateways: gws}},
		{name: "no hostnames: the listener's wildcard", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, nil, accepted, nil), Gateways: gws}, want: addr("*.example.com")},
		{name: "--ignore-hostname-annotation", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"a.example.com"}, accepted, map[string]string{host: "b.example.com"}), Gateways: gws, IgnoreHostnameAnnotation: true},
			want: addr("a.example.com")},
		// external-dns v0.22 source/gateway.go admits a route through a Selector listener when
		// the route's namespace labels match it (Gateway API, AllowedRoutes.Namespaces).
		{name: "Selector listener: namespace labels match", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"s.example.net"}, accepted, nil), Gateways: gws,
			NamespaceLabels: map[string]string{"team": "web"}}, want: addr("s.example.net")},
		{name: "Selector listener: namespace labels do not match", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"s.example.net"}, accepted, nil), Gateways: gws,
			NamespaceLabels: map[string]string{"team": "db"}}},
		{name: "Selector listener: namespaces cannot be read", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"s.example.net"}, accepted, nil), Gateways: gws}},
		{name: "gateway-name filter", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"a.example.com"}, accepted, nil), Gateways: gws, GatewayName: "other"}},
		{name: "missing Gateway", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"a.example.com"}, accepted, nil)}},
		{name: "TCPRoute by annotation", in: RouteInput{Route: rt("TCPRoute", gwv1.TCPProtocolType, nil, accepted, map[string]string{host: "db.example.net"}), Gateways: gws}, want: addr("db.example.net")},
		{name: "annotation-only", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"a.example.com"}, accepted,
			map[string]string{host: "b.example.com", ExternalDNSPrefix + KeyGatewayHostnameSource: "annotation-only"}), Gateways: gws}, want: addr("b.example.com")},
		// external-dns v0.22 source/gateway.go hosts(): defined-hosts-only returns spec.hostnames
		// only, never the "" that stands for the listener's hostname.
		{name: "defined-hosts-only without spec.hostnames: nothing", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, nil, accepted,
			map[string]string{host: "b.example.com", ExternalDNSPrefix + KeyGatewayHostnameSource: "defined-hosts-only"}), Gateways: gws}},
		{name: "defined-hosts-only with spec.hostnames: those", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"a.example.com"}, accepted,
			map[string]string{host: "b.example.com", ExternalDNSPrefix + KeyGatewayHostnameSource: "Defined-Hosts-Only"}), Gateways: gws}, want: addr("a.example.com")},
		{name: "hostname-source out of range: the default (listener's and annotation's)", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, nil, accepted,
			map[string]string{host: "b.example.com", ExternalDNSPrefix + KeyGatewayHostnameSource: "both"}), Gateways: gws},
			want: append(addr("*.example.com"), addr("b.example.com")...), reasons: []string{dnsv1.ReasonInvalidAnnotation}},
		{name: "GRPCRoute", in: RouteInput{Route: rt("GRPCRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"g.example.com"}, accepted, nil), Gateways: gws}, want: addr("g.example.com")},
		{name: "UDPRoute does not match a TCP listener", in: RouteInput{Route: rt("UDPRoute", gwv1.UDPProtocolType, nil, accepted, map[string]string{host: "u.example.net"}), Gateways: gws}},
		{name: "bad ttl", in: RouteInput{Route: rt("HTTPRoute", gwv1.HTTPProtocolType, []gwv1.Hostname{"a.example.com"}, accepted, map[string]string{ExternalDNSPrefix + "ttl": "-1"}), Gateways: gws},
			want: addr("a.example.com"), reasons: []string{dnsv1.ReasonInvalidTTL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, probs := RouteEndpoints(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if !sameSet(reasons(probs), tc.reasons) {
				t.Errorf("problems %v, want %v", probs, tc.reasons)
			}
		})
	}
}

func TestExternalDNSEndpoints(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"endpoints": []any{
		map[string]any{"dnsName": "a.example.com", "recordType": "A", "targets": []any{"192.0.2.1"}, "recordTTL": int64(60)},
		map[string]any{"dnsName": "b.example.com", "recordType": "A", "targets": []any{"2001:db8::1"}},
		map[string]any{"dnsName": "bad name", "recordType": "A", "targets": []any{"192.0.2.1"}},
		map[string]any{"dnsName": "c.example.com", "recordType": "NAPTR", "targets": []any{"x"}},
		map[string]any{"dnsName": "t.example.com", "recordType": "TXT", "targets": []any{"hello"}},
	}}}}
	got, probs := ExternalDNSEndpoints(obj, DomainFilter{})
	want := []dnsv1.Endpoint{{DNSName: "a.example.com", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}, RecordTTL: 60}, ep("t.example.com", "TXT", "hello")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if r := reasons(probs); !sameSet(r, []string{dnsv1.ReasonInvalidTarget, dnsv1.ReasonInvalidHostname, dnsv1.ReasonInvalidTarget}) {
		t.Errorf("problems %v", probs)
	}
}
