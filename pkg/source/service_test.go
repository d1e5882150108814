package source

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// The cases of these tests are external-dns v0.22.0's own (sigs.k8s.io/external-dns
// source/service_test.go); each names the external-dns test case whose outcome it pins, or the
// function of source/service.go where no test case covers it.

func nodePortService(name string, policy corev1.ServiceExternalTrafficPolicy, ann map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "testing", Annotations: ann},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.7", ExternalTrafficPolicy: policy, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30192}}}}
}

func extNode(name, external, internal string) corev1.Node {
	return node(name, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: external}, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: internal})
}

func pod(name, nodeName string, phase corev1.PodPhase, ready bool) corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "testing"}, Spec: corev1.PodSpec{NodeName: nodeName},
		Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
}

func srv(host string) dnsv1.Endpoint {
	return ep("_foo._tcp."+host, "SRV", "0 50 30192 "+host+".")
}

// TestServiceEndpoints_NodePort: externalTrafficPolicy Local publishes the nodes of the
// Service's Running pods only (none when no pod runs), cordoned nodes are left out under
// --exclude-unschedulable, and each node port gets its SRV record.
func TestServiceEndpoints_NodePort(t *testing.T) {
	ann := map[string]string{host: "foo.example.org"}
	nodes := []corev1.Node{extNode("node1", "54.10.11.1", "10.0.1.1"), extNode("node2", "54.10.11.2", "10.0.1.2"), extNode("node3", "54.10.11.3", "10.0.1.3")}
	cordoned := []corev1.Node{nodes[0], nodes[1]}
	cordoned[0].Spec.Unschedulable = true
	local := nodePortService("foo", corev1.ServiceExternalTrafficPolicyLocal, ann)
	cluster := nodePortService("foo", corev1.ServiceExternalTrafficPolicyCluster, ann)
	terminating := pod("pod-2", "node3", corev1.PodRunning, true)
	terminating.DeletionTimestamp = &metav1.Time{}
	a := func(targets ...string) []dnsv1.Endpoint {
		return []dnsv1.Endpoint{srv("foo.example.org"), ep("foo.example.org", "A", targets...)}
	}
	for _, tc := range []struct {
		name string // external-dns's test case or function
		in   ServiceInput
		want []dnsv1.Endpoint
	}{
		{name: "annotated NodePort services return an endpoint with IP addresses of the cluster's nodes",
			in: ServiceInput{Service: cluster, Nodes: nodes}, want: a("54.10.11.1", "54.10.11.2", "54.10.11.3")},
		{name: "nodesExternalTrafficPolicyTypeLocal: no Running pod, no node (only the SRV record)",
			in: ServiceInput{Service: local, Nodes: nodes}, want: []dnsv1.Endpoint{srv("foo.example.org")}},
		{name: "nodesExternalTrafficPolicyTypeLocal: a Pending pod publishes no node",
			in: ServiceInput{Service: local, Nodes: nodes, Pods: []corev1.Pod{pod("pod-0", "node1", corev1.PodPending, false)}}, want: []dnsv1.Endpoint{srv("foo.example.org")}},
		{name: "annotated NodePort services with ExternalTrafficPolicy=Local return an endpoint with IP addresses of the cluster's nodes where pods is running only",
			in: ServiceInput{Service: local, Nodes: nodes, Pods: []corev1.Pod{pod("pod-0", "node2", corev1.PodRunning, false)}}, want: a("54.10.11.2")},
		{name: "annotated NodePort services with ExternalTrafficPolicy=Local and multiple pods on a single node return an endpoint with unique IP addresses of the cluster's nodes where pods is running only",
			in: ServiceInput{Service: local, Nodes: nodes, Pods: []corev1.Pod{pod("pod-0", "node2", corev1.PodRunning, false), pod("pod-1", "node2", corev1.PodRunning, false)}}, want: a("54.10.11.2")},
		{name: "annotated NodePort services with ExternalTrafficPolicy=Local return pods in Ready & Running state",
			in: ServiceInput{Service: local, Nodes: nodes, Pods: []corev1.Pod{pod("pod-0", "node1", corev1.PodRunning, true), pod("pod-1", "node2", corev1.PodRunning, false)}}, want: a("54.10.11.1")},
		{name: "annotated NodePort services with ExternalTrafficPolicy=Local return pods in Ready & Running state & not in Terminating",
			in: ServiceInput{Service: local, Nodes: nodes, Pods: []corev1.Pod{pod("pod-0", "node1", corev1.PodRunning, true), pod("pod-1", "node2", corev1.PodRunning, false), terminating}}, want: a("54.10.11.1")},
		{name: "nodesExternalTrafficPolicyTypeLocal: only terminating Ready pods, their nodes",
			in: ServiceInput{Service: local, Nodes: nodes, Pods: []corev1.Pod{pod("pod-1", "node2", corev1.PodRunning, false), terminating}}, want: a("54.10.11.3")},
		{name: "NodePort services ignore unschedulable node",
			in: ServiceInput{Service: cluster, Nodes: cordoned, ExcludeUnschedulable: true}, want: a("54.10.11.2")},
		{name: "--no-exclude-unschedulable publishes the cordoned node",
			in: ServiceInput{Service: cluster, Nodes: cordoned}, want: a("54.10.11.1", "54.10.11.2")},
		{name: "access=private annotation NodePort services return an endpoint with private IP addresses of the cluster's nodes",
			in:   ServiceInput{Service: nodePortService("foo", corev1.ServiceExternalTrafficPolicyCluster, map[string]string{host: "foo.example.org", ExternalDNSPrefix + KeyAccess: "private"}), Nodes: cordoned},
			want: a("10.0.1.1", "10.0.1.2")},
		{name: "hostname annotated NodePort services are ignored (--ignore-hostname-annotation)",
			in: ServiceInput{Service: cluster, Nodes: nodes, IgnoreHostnameAnnotation: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, probs := ServiceEndpoints(tc.in)
			if !reflect.DeepEqual(got, tc.want) || len(probs) > 0 {
				t.Errorf("got %+v (problems %v)\nwant %+v", got, probs, tc.want)
			}
		})
	}
}

// TestServiceEndpoints_InternalHostname: internal-hostname gets what the Service's type gives
// (the cluster IP only for LoadBalancer and ClusterIP Services), and the target annotation wins
// for both names (external-dns's generateEndpoints, useClusterIP).
func TestServiceEndpoints_InternalHostname(t *testing.T) {
	in := ExternalDNSPrefix + KeyInternalHostname
	nodes := []corev1.Node{extNode("node1", "54.10.11.1", "10.0.1.1")}
	lb := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "foo", Namespace: "testing", Annotations: map[string]string{host: "foo.example.org", in: "foo.internal.example.org"}},
		Spec:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "1.1.1.1"},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}}}}
	withTarget := lb.DeepCopy()
	withTarget.Annotations[ExternalDNSPrefix+KeyTarget] = "192.0.2.5"
	clusterIP := lb.DeepCopy()
	clusterIP.Spec.Type = corev1.ServiceTypeClusterIP
	for _, tc := range []struct {
		name string
		in   ServiceInput
		want []dnsv1.Endpoint
	}{
		{name: "internal-host annotated and host annotated loadbalancer services return an endpoint with Cluster IP and an endpoint with lb IP",
			in: ServiceInput{Service: lb}, want: []dnsv1.Endpoint{ep("foo.example.org", "A", "1.2.3.4"), ep("foo.internal.example.org", "A", "1.1.1.1")}},
		{name: "internal-host annotated and host annotated clusterip services return an endpoint with Cluster IP",
			in: ServiceInput{Service: clusterIP}, want: []dnsv1.Endpoint{ep("foo.internal.example.org", "A", "1.1.1.1")}},
		{name: "generateEndpoints: the target annotation for both names",
			in: ServiceInput{Service: withTarget}, want: []dnsv1.Endpoint{ep("foo.example.org", "A", "192.0.2.5"), ep("foo.internal.example.org", "A", "192.0.2.5")}},
		{name: "generateEndpoints: a NodePort Service's internal-hostname gets the node addresses",
			in:   ServiceInput{Service: nodePortService("foo", corev1.ServiceExternalTrafficPolicyCluster, map[string]string{in: "foo.internal.example.org"}), Nodes: nodes},
			want: []dnsv1.Endpoint{srv("foo.internal.example.org"), ep("foo.internal.example.org", "A", "54.10.11.1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, probs := ServiceEndpoints(tc.in)
			if !reflect.DeepEqual(got, tc.want) || len(probs) > 0 {
				t.Errorf("got %+v (problems %v)\nwant %+v", got, probs, tc.want)
			}
		})
	}
}

// TestServiceEndpoints_Headless: a headless Service's names come from its EndpointSlices'
// endpoints that refer to a selected pod, named by the pod's spec.hostname, with the pod's
// target annotation or the endpoints-type's address (external-dns's TestHeadlessServices and
// extractHeadlessEndpoints).
func TestServiceEndpoints_Headless(t *testing.T) {
	svc := func(ann map[string]string) *corev1.Service {
		a := map[string]string{host: "service.example.org"}
		for k, v := range ann {
			a[k] = v
		}
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "foo", Namespace: "testing", Annotations: a},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"component": "foo"}}}
	}
	ref := func(name string) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "Pod", Name: name, Namespace: "testing"}
	}
	endpoint := func(addr, podName string, ready bool) discoveryv1.Endpoint {
		e := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}, NodeName: ptr.To("node1")}
		if podName != "" {
			e.TargetRef = ref(podName)
		}
		return e
	}
	slices := func(eps ...discoveryv1.Endpoint) []discoveryv1.EndpointSlice {
		return []discoveryv1.EndpointSlice{{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps}}
	}
	hostPod := func(name, hostname string, ann map[string]string) corev1.Pod {
		p := pod(name, "node1", corev1.PodRunning, true)
		p.Spec.Hostname, p.Annotations, p.Status.HostIP = hostname, ann, "10.0.1.1"
		return p
	}
	pods := []corev1.Pod{hostPod("foo-0", "foo-0", nil), hostPod("foo-1", "foo-1", nil)}
	two := slices(endpoint("1.1.1.1", "foo-0", true), endpoint("1.1.1.2", "foo-1", true))
	nodes := []corev1.Node{extNode("node1", "54.10.11.1", "10.0.1.1")}
	for _, tc := range []struct {
		name string
		in   ServiceInput
		want []dnsv1.Endpoint
	}{
		{name: "annotated Headless services return IPv4 endpoints for each selected Pod",
			in:   ServiceInput{Service: svc(nil), Slices: two, Pods: pods},
			want: []dnsv1.Endpoint{ep("foo-0.service.example.org", "A", "1.1.1.1"), ep("foo-1.service.example.org", "A", "1.1.1.2"), ep("service.example.org", "A", "1.1.1.1", "1.1.1.2")}},
		{name: "annotated Headless services return endpoints for each selected Pod, which are in running state",
			in:   ServiceInput{Service: svc(nil), Slices: slices(endpoint("1.1.1.1", "foo-0", true), endpoint("1.1.1.2", "foo-1", false)), Pods: pods},
			want: []dnsv1.Endpoint{ep("foo-0.service.example.org", "A", "1.1.1.1"), ep("service.example.org", "A", "1.1.1.1")}},
		{name: "annotated Headless services return endpoints for all Pod if publishNotReadyAddresses is set (--always-publish-not-ready-addresses)",
			in:   ServiceInput{Service: svc(nil), Slices: slices(endpoint("1.1.1.1", "foo-0", true), endpoint("1.1.1.2", "foo-1", false)), Pods: pods, AlwaysPublishNotReady: true},
			want: []dnsv1.Endpoint{ep("foo-0.service.example.org", "A", "1.1.1.1"), ep("foo-1.service.example.org", "A", "1.1.1.2"), ep("service.example.org", "A", "1.1.1.1", "1.1.1.2")}},
		{name: "annotated Headless services return endpoints for pods missing hostname",
			in:   ServiceInput{Service: svc(nil), Slices: two, Pods: []corev1.Pod{hostPod("foo-0", "", nil), hostPod("foo-1", "", nil)}},
			want: []dnsv1.Endpoint{ep("service.example.org", "A", "1.1.1.1", "1.1.1.2")}},
		{name: "extractHeadlessEndpoints: the pod's spec.hostname names it whatever its subdomain (the slice has no hostname)",
			in: func() ServiceInput {
				other := hostPod("web-0", "web-0", nil)
				other.Spec.Subdomain = "elsewhere"
				return ServiceInput{Service: svc(nil), Slices: slices(endpoint("1.1.1.3", "web-0", true)), Pods: []corev1.Pod{other}}
			}(),
			want: []dnsv1.Endpoint{ep("service.example.org", "A", "1.1.1.3"), ep("web-0.service.example.org", "A", "1.1.1.3")}},
		{name: "extractHeadlessEndpoints: an endpoint without a pod reference is skipped",
			in:   ServiceInput{Service: svc(nil), Slices: slices(endpoint("1.1.1.1", "foo-0", true), endpoint("1.1.1.9", "", true)), Pods: pods},
			want: []dnsv1.Endpoint{ep("foo-0.service.example.org", "A", "1.1.1.1"), ep("service.example.org", "A", "1.1.1.1")}},
		{name: "extractHeadlessEndpoints: an endpoint of a pod the selector does not select is skipped",
			in: ServiceInput{Service: svc(nil), Slices: slices(endpoint("1.1.1.9", "stranger", true))}},
		{name: "annotated Headless services return IPv4 targets from pod annotation",
			in:   ServiceInput{Service: svc(nil), Slices: slices(endpoint("1.1.1.1", "foo", true)), Pods: []corev1.Pod{hostPod("foo", "", map[string]string{ExternalDNSPrefix + KeyTarget: "1.2.3.4"})}},
			want: []dnsv1.Endpoint{ep("service.example.org", "A", "1.2.3.4")}},
		{name: "extractHeadlessEndpoints: the pod's target annotation for its own name too",
			in:   ServiceInput{Service: svc(nil), Slices: slices(endpoint("1.1.1.1", "foo-0", true)), Pods: []corev1.Pod{hostPod("foo-0", "foo-0", map[string]string{ExternalDNSPrefix + KeyTarget: "2001:db8::4"})}},
			want: []dnsv1.Endpoint{ep("foo-0.service.example.org", "AAAA", "2001:db8::4"), ep("service.example.org", "AAAA", "2001:db8::4")}},
		{name: "annotated Headless services return IPv4 targets from node external IP if endpoints-type annotation is set",
			in:   ServiceInput{Service: svc(map[string]string{ExternalDNSPrefix + KeyEndpointsType: EndpointsTypeNodeExternalIP}), Slices: slices(endpoint("1.1.1.1", "foo", true)), Pods: []corev1.Pod{hostPod("foo", "", nil)}, Nodes: nodes},
			want: []dnsv1.Endpoint{ep("service.example.org", "A", "54.10.11.1")}},
		{name: "extractHeadlessEndpoints: endpoints-type HostIP publishes the pod's host IP",
			in:   ServiceInput{Service: svc(map[string]string{ExternalDNSPrefix + KeyEndpointsType: EndpointsTypeHostIP}), Slices: slices(endpoint("1.1.1.1", "foo", true)), Pods: []corev1.Pod{hostPod("foo", "", nil)}},
			want: []dnsv1.Endpoint{ep("service.example.org", "A", "10.0.1.1")}},
		{name: "extractHeadlessEndpoints: --publish-host-ip publishes the pod's host IP",
			in:   ServiceInput{Service: svc(nil), Slices: slices(endpoint("1.1.1.1", "foo", true)), Pods: []corev1.Pod{hostPod("foo", "", nil)}, PublishHostIP: true},
			want: []dnsv1.Endpoint{ep("service.example.org", "A", "10.0.1.1")}},
		{name: "generateEndpoints: a headless Service's internal-hostname gets the headless endpoints",
			in: ServiceInput{Service: func() *corev1.Service {
				s := svc(nil)
				s.Annotations = map[string]string{ExternalDNSPrefix + KeyInternalHostname: "service.internal.example.org"}
				return s
			}(), Slices: two, Pods: pods},
			want: []dnsv1.Endpoint{ep("foo-0.service.internal.example.org", "A", "1.1.1.1"), ep("foo-1.service.internal.example.org", "A", "1.1.1.2"), ep("service.internal.example.org", "A", "1.1.1.1", "1.1.1.2")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, probs := ServiceEndpoints(tc.in)
			if !reflect.DeepEqual(got, tc.want) || len(probs) > 0 {
				t.Errorf("got %+v (problems %v)\nwant %+v", got, probs, tc.want)
			}
		})
	}
	// endpoints-type NodeExternalIP when the nodes cannot be read: reported, nothing published.
	got, probs := ServiceEndpoints(ServiceInput{Service: svc(map[string]string{ExternalDNSPrefix + KeyEndpointsType: EndpointsTypeNodeExternalIP}), Slices: two, Pods: pods})
	if len(got) != 0 || !sameSet(reasons(probs), []string{dnsv1.ReasonInvalidTarget}) {
		t.Errorf("NodeExternalIP without nodes: got %+v, %v", got, probs)
	}
	// An unknown endpoints-type is reported and the pods' addresses are published.
	got, probs = ServiceEndpoints(ServiceInput{Service: svc(map[string]string{ExternalDNSPrefix + KeyEndpointsType: "nodeexternalip"}), Slices: slices(endpoint("1.1.1.1", "foo-0", true)), Pods: pods})
	if len(got) != 2 || !sameSet(reasons(probs), []string{dnsv1.ReasonInvalidAnnotation}) {
		t.Errorf("unknown endpoints-type: got %+v, %v", got, probs)
	}
}

func TestConfigServiceTypes(t *testing.T) {
	c := Config{ServiceTypes: []string{"LoadBalancer"}}
	if !c.ServiceTypeSelected("LoadBalancer") || c.ServiceTypeSelected("NodePort") || c.ServiceTypeSelected("") {
		t.Error("--service-type-filter=LoadBalancer")
	}
	if !(Config{}).ServiceTypeSelected("NodePort") {
		t.Error("no filter refuses a type")
	}
	if err := (Config{ServiceTypes: []string{"Headless"}}).Validate(nil); err == nil {
		t.Error("an unknown Service type is accepted")
	}
}
