package source_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	sourcecontroller "github.com/dnsplane/dnsplane/controllers/source"
)

const ed = "external-dns.alpha.kubernetes.io/"

// annotate replaces obj's annotations with ann (read fresh, retried on conflict).
func annotate(t *testing.T, obj client.Object, ann map[string]string) {
	t.Helper()
	eventually(t, "annotate "+obj.GetName(), func() error {
		if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		obj.SetAnnotations(ann)
		return k8s.Update(ctxT(t), obj)
	})
}

func endpointTTL(name string, ttl dnsv1.TTL) func(*dnsv1.DNSEndpoint) error {
	return func(ep *dnsv1.DNSEndpoint) error {
		for _, e := range ep.Spec.Endpoints {
			if e.DNSName == name && e.RecordTTL == ttl {
				return nil
			}
		}
		return fmt.Errorf("no %s with TTL %d in %+v", name, ttl, ep.Spec.Endpoints)
	}
}

// TestService_LoadBalancerAnnotationsAndBadValues: a LoadBalancer Service's hostname, ttl and
// target annotations publish its DNSEndpoint (owned, labelled) and answer in DNS; a TTL that is
// not a number, a hostname that is not a DNS name and a target of the wrong family each give a
// Warning Event on the Service and change nothing published for that value; deleting the
// Service deletes the DNSEndpoint and its records.
func TestService_LoadBalancerAnnotationsAndBadValues(t *testing.T) {
	const ns, zone = "svc-a", "svc-a.test"
	zoneNamespace(t, k8s, ns, zone)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{ed + "hostname": "web." + zone + ",www." + zone, ed + "ttl": "60"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	create(t, k8s, svc)
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	if err := k8s.Status().Update(ctxT(t), svc); err != nil {
		t.Fatal(err)
	}
	ep := waitEndpoint(t, k8s, ns, "svc-web", endpointTTL("web."+zone, 60))
	if c := metav1.GetControllerOf(ep); c == nil || c.Kind != "Service" || c.Name != "web" || ep.Labels[sourcecontroller.LabelSourceKind] != "Service" || ep.Labels[sourcecontroller.LabelSourceName] != "web" {
		t.Errorf("DNSEndpoint owner %+v labels %v", c, ep.Labels)
	}
	waitAnswer(t, "web."+zone, dns.TypeA, "192.0.2.10")
	waitAnswer(t, "www."+zone, dns.TypeA, "192.0.2.10")

	// Bad values: each an Event, none a change of what is published.
	annotate(t, svc, map[string]string{ed + "hostname": "web." + zone + ",www." + zone + ",bad_name!." + zone, ed + "ttl": "sixty", ed + "target": "::ffff:192.0.2.1"})
	waitEvent(t, k8s, ns, "Service", "web", dnsv1.ReasonInvalidTTL)
	waitEvent(t, k8s, ns, "Service", "web", dnsv1.ReasonInvalidHostname)
	waitEvent(t, k8s, ns, "Service", "web", dnsv1.ReasonInvalidTarget)
	ep = waitEndpoint(t, k8s, ns, "svc-web", endpointTTL("web."+zone, 60))
	if len(ep.Spec.Endpoints) != 2 || ep.Spec.Endpoints[0].Targets[0] != "192.0.2.10" {
		t.Errorf("after bad values the DNSEndpoint changed: %+v", ep.Spec.Endpoints)
	}

	// A good target annotation and set identifier replace the load balancer's address.
	annotate(t, svc, map[string]string{ed + "hostname": "web." + zone, ed + "target": "192.0.2.99", dnsplanePrefix + "ttl": "2m"})
	waitEndpoint(t, k8s, ns, "svc-web", endpointTTL("web."+zone, 120))
	waitAnswer(t, "web."+zone, dns.TypeA, "192.0.2.99")
	waitAnswer(t, "www."+zone, dns.TypeA)

	if err := k8s.Delete(ctxT(t), svc); err != nil {
		t.Fatal(err)
	}
	waitGone(t, k8s, ns, "svc-web")
	waitAnswer(t, "web."+zone, dns.TypeA)
}

const dnsplanePrefix = "dnsplane.io/"

// TestService_HeadlessAndInternalHostname: a headless Service publishes, as external-dns's
// extractHeadlessEndpoints does, its ready endpoints that refer to a selected pod (an endpoint
// without a pod reference is left out), <spec.hostname>.<name> for a pod with a hostname
// whatever its subdomain, and a pod's target annotation instead of its address, following a
// change of that annotation; internal-hostname publishes a ClusterIP Service's cluster IP; a
// Service whose controller annotation names another controller publishes nothing.
func TestService_HeadlessAndInternalHostname(t *testing.T) {
	const ns, zone = "svc-b", "svc-b.test"
	zoneNamespace(t, k8s, ns, zone)
	headless := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", Annotations: map[string]string{ed + "hostname": "db." + zone}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "db"}, Ports: []corev1.ServicePort{{Port: 5432}}}}
	internal := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api", Annotations: map[string]string{ed + "internal-hostname": "api." + zone}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other", Annotations: map[string]string{ed + "internal-hostname": "other." + zone, ed + "controller": "someone-else"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	db0 := testPod(ns, "db-0", "", map[string]string{"app": "db"})
	db0.Spec.Hostname, db0.Spec.Subdomain = "db-0", "not-db"
	db1 := testPod(ns, "db-1", "", map[string]string{"app": "db"})
	db1.Annotations = map[string]string{ed + "target": "192.0.2.50"}
	slice := endpointSlice(ns, "db", "10.1.0.1", "10.1.0.2", "10.1.0.9")
	slice.Endpoints[0].TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "db-0"}
	slice.Endpoints[1].TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "db-1"}
	create(t, k8s, db0, db1, headless, internal, other, slice)
	waitAnswer(t, "db."+zone, dns.TypeA, "10.1.0.1", "192.0.2.50")
	waitAnswer(t, "db-0.db."+zone, dns.TypeA, "10.1.0.1")
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(internal), internal); err != nil {
		t.Fatal(err)
	}
	waitAnswer(t, "api."+zone, dns.TypeA, internal.Spec.ClusterIP)
	waitAnswer(t, "other."+zone, dns.TypeA)
	if err := k8s.Get(ctxT(t), client.ObjectKey{Namespace: ns, Name: "svc-other"}, &dnsv1.DNSEndpoint{}); client.IgnoreNotFound(err) != nil || err == nil {
		t.Errorf("a Service of another controller got a DNSEndpoint (err %v)", err)
	}
	// A pod's target annotation changes: the pod watch republishes the Service.
	annotate(t, db0, map[string]string{ed + "target": "192.0.2.51"})
	waitAnswer(t, "db."+zone, dns.TypeA, "192.0.2.50", "192.0.2.51")
	waitAnswer(t, "db-0.db."+zone, dns.TypeA, "192.0.2.51")
}

// testPod returns a pod of ns named name with labels, on node nodeName ("" = none).
func testPod(ns, name, nodeName string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}}
}

// testNode creates a node with ExternalIP addr, deleted at the test's end.
func testNode(t *testing.T, name, addr string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	create(t, k8s, n)
	t.Cleanup(func() { _ = k8s.Delete(ctxT(t), n) })
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: addr}}
	if err := k8s.Status().Update(ctxT(t), n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestService_NodePortLocalAndCordoned: a NodePort Service with externalTrafficPolicy Local
// publishes no node (and no SRV record, not a managed type by default) while none of its pods runs, and only the node of its Running (even not
// Ready) pod once one does, as external-dns's nodesExternalTrafficPolicyTypeLocal; a cordoned
// node leaves the targets of a NodePort Service (external-dns's "NodePort services ignore
// unschedulable node", --exclude-unschedulable's default).
func TestService_NodePortLocalAndCordoned(t *testing.T) {
	const ns, zone = "svc-d", "svc-d.test"
	zoneNamespace(t, k8s, ns, zone)
	n1 := testNode(t, "source-test-n1", "203.0.113.11")
	testNode(t, "source-test-n2", "203.0.113.12")
	local := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "loc", Annotations: map[string]string{ed + "hostname": "loc." + zone}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, Selector: map[string]string{"app": "loc"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	all := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all", Annotations: map[string]string{ed + "hostname": "all." + zone}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}
	create(t, k8s, local, all)
	waitAnswer(t, "all."+zone, dns.TypeA, "203.0.113.11", "203.0.113.12")
	// No target while no pod runs, and no SRV record (not a managed type by default): nothing,
	// so no DNSEndpoint.
	waitAnswer(t, "loc."+zone, dns.TypeA)
	if err := k8s.Get(ctxT(t), client.ObjectKey{Namespace: ns, Name: "svc-loc"}, &dnsv1.DNSEndpoint{}); !apierrors.IsNotFound(err) {
		t.Errorf("DNSEndpoint svc-loc while no pod runs: %v, want none (an SRV record alone is not published by default)", err)
	}

	p := testPod(ns, "loc-0", "source-test-n2", map[string]string{"app": "loc"})
	create(t, k8s, p)
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	if err := k8s.Status().Update(ctxT(t), p); err != nil {
		t.Fatal(err)
	}
	waitAnswer(t, "loc."+zone, dns.TypeA, "203.0.113.12")

	eventually(t, "cordon "+n1.Name, func() error {
		if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(n1), n1); err != nil {
			return err
		}
		n1.Spec.Unschedulable = true
		return k8s.Update(ctxT(t), n1)
	})
	waitAnswer(t, "all."+zone, dns.TypeA, "203.0.113.12")
}

// TestIngress_HostsAnnotationsAndBadValues: an Ingress's rule hosts and hostname annotation
// publish its load balancer's address; ingress-hostname-source=annotation-only keeps only the
// annotation's; bad values give Events; deleting it removes its DNSEndpoint.
func TestIngress_HostsAnnotationsAndBadValues(t *testing.T) {
	const ns, zone = "ing-a", "ing-a.test"
	zoneNamespace(t, k8s, ns, zone)
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{ed + "hostname": "extra." + zone, ed + "ttl": "90"}},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx"), Rules: []networkingv1.IngressRule{{Host: "shop." + zone}}}}
	create(t, k8s, ing)
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.20"}}
	if err := k8s.Status().Update(ctxT(t), ing); err != nil {
		t.Fatal(err)
	}
	waitEndpoint(t, k8s, ns, "ing-web", endpointTTL("shop."+zone, 90))
	waitAnswer(t, "shop."+zone, dns.TypeA, "192.0.2.20")
	waitAnswer(t, "extra."+zone, dns.TypeA, "192.0.2.20")

	annotate(t, ing, map[string]string{ed + "hostname": "extra." + zone + ",-bad-." + zone, ed + "ttl": "1x", ed + "target": "300.1.2.3", ed + "ingress-hostname-source": "annotation-only"})
	waitEvent(t, k8s, ns, "Ingress", "web", dnsv1.ReasonInvalidTTL)
	waitEvent(t, k8s, ns, "Ingress", "web", dnsv1.ReasonInvalidHostname)
	waitEvent(t, k8s, ns, "Ingress", "web", dnsv1.ReasonInvalidTarget)
	waitAnswer(t, "shop."+zone, dns.TypeA)
	waitEndpoint(t, k8s, ns, "ing-web", endpointTTL("extra."+zone, 90))

	if err := k8s.Delete(ctxT(t), ing); err != nil {
		t.Fatal(err)
	}
	waitGone(t, k8s, ns, "ing-web")
	waitAnswer(t, "extra."+zone, dns.TypeA)
}

// TestService_NodePortAccessSetIdentifierAndWeight: a NodePort Service publishes its nodes'
// addresses, ExternalIP by default and InternalIP with access=private, and no SRV record (not in
// external-dns's default --managed-record-types); set-identifier and
// aws-weight make it a weighted record set; an access value that is neither public nor private
// as written ("Private") gives an InvalidAnnotation Event naming it and falls back to the default.
func TestService_NodePortAccessSetIdentifierAndWeight(t *testing.T) {
	const ns, zone = "svc-c", "svc-c.test"
	zoneNamespace(t, k8s, ns, zone)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "source-test-node"}}
	create(t, k8s, node)
	t.Cleanup(func() { _ = k8s.Delete(ctxT(t), node) })
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "203.0.113.7"}, {Type: corev1.NodeInternalIP, Address: "10.0.0.7"}}
	if err := k8s.Status().Update(ctxT(t), node); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "np", Annotations: map[string]string{ed + "hostname": "np." + zone}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}
	create(t, k8s, svc)
	waitAnswer(t, "np."+zone, dns.TypeA, "203.0.113.7")

	annotate(t, svc, map[string]string{ed + "hostname": "np." + zone, ed + "access": "private", ed + "set-identifier": "eu", ed + "aws-weight": "20"})
	waitEndpoint(t, k8s, ns, "svc-np", func(ep *dnsv1.DNSEndpoint) error {
		// The A set only: the node port's SRV record (external-dns's extractNodePortEndpoints) is
		// not a managed type without --managed-record-types=...,SRV.
		e := ep.Spec.Endpoints
		if len(e) != 1 || e[0].RecordType != "A" || e[0].SetIdentifier != "eu" || len(e[0].ProviderSpecific) != 1 || e[0].ProviderSpecific[0] != (dnsv1.ProviderSpecificProperty{Name: "aws/weight", Value: "20"}) ||
			len(e[0].Targets) != 1 || e[0].Targets[0] != "10.0.0.7" {
			return fmt.Errorf("endpoints %+v", e)
		}
		return nil
	})
	waitAnswer(t, "np."+zone, dns.TypeA, "10.0.0.7")

	// "Private" is not "private": access is compared as written (external-dns reads it so), so
	// the default (the ExternalIP) comes back, with an Event naming the value.
	annotate(t, svc, map[string]string{ed + "hostname": "np." + zone, ed + "access": "Private"})
	waitEventMessage(t, k8s, ns, "Service", "np", dnsv1.ReasonInvalidAnnotation, ed+`access "Private"`)
	waitAnswer(t, "np."+zone, dns.TypeA, "203.0.113.7")
}

// TestService_TwoServicesOneName pins the one difference from external-dns that the sources keep
// (docs/migrating-from-external-dns.md, first lines): of two LoadBalancer Services with one
// hostname, external-dns publishes one set with both targets; here the first one's DNSEndpoint
// holds the name and the second's is Ready=False OwnershipConflict, naming the holder, and the
// answer stays the first one's.
func TestService_TwoServicesOneName(t *testing.T) {
	const ns, zone = "svc-e", "svc-e.test"
	zoneNamespace(t, k8s, ns, zone)
	lb := func(name, ip string) {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{ed + "hostname": "shared." + zone}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
		create(t, k8s, svc)
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		if err := k8s.Status().Update(ctxT(t), svc); err != nil {
			t.Fatal(err)
		}
	}
	lb("first", "192.0.2.71")
	waitEndpoint(t, k8s, ns, "svc-first", nil)
	waitAnswer(t, "shared."+zone, dns.TypeA, "192.0.2.71")
	lb("second", "192.0.2.72")
	eventually(t, "svc-second OwnershipConflict", func() error {
		ep := &dnsv1.DNSEndpoint{}
		if err := k8s.Get(ctxT(t), client.ObjectKey{Namespace: ns, Name: "svc-second"}, ep); err != nil {
			return err
		}
		r := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionReady)
		if r == nil || r.Status != metav1.ConditionFalse || r.Reason != dnsv1.ReasonOwnershipConflict || !strings.Contains(r.Message, "svc-first") {
			return fmt.Errorf("Ready %+v", r)
		}
		return nil
	})
	waitAnswer(t, "shared."+zone, dns.TypeA, "192.0.2.71")
}
