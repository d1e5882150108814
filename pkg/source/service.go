package source

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// ServiceInput is what ServiceEndpoints reads for one Service.
type ServiceInput struct {
	Service *corev1.Service
	// Nodes are the cluster's nodes, for a NodePort Service's targets and a headless Service's
	// endpoints-type NodeExternalIP (nil when they cannot be read, as with --watch-namespaces).
	Nodes []corev1.Node
	// Slices are the Service's EndpointSlices, for a headless Service's targets.
	Slices []discoveryv1.EndpointSlice
	// Pods are the pods of the Service's namespace that its spec.selector selects (every pod
	// of the namespace for an empty selector, as external-dns lists them), for a headless
	// Service and a NodePort Service with externalTrafficPolicy Local.
	Pods []corev1.Pod
	// PublishInternal is --publish-internal-services: a ClusterIP Service's hostname annotation
	// publishes its cluster IP.
	PublishInternal bool
	// ExcludeUnschedulable is --exclude-unschedulable: NodePort targets leave out cordoned
	// nodes (spec.unschedulable).
	ExcludeUnschedulable bool
	// IgnoreHostnameAnnotation is --ignore-hostname-annotation: nothing is published.
	IgnoreHostnameAnnotation bool
	// PublishHostIP is --publish-host-ip and AlwaysPublishNotReady
	// --always-publish-not-ready-addresses, for headless Services.
	PublishHostIP, AlwaysPublishNotReady bool
	Domains                              DomainFilter
}

// ServiceEndpoints returns the endpoints of one Service as external-dns v0.22's service source
// derives them (sigs.k8s.io/external-dns source/service.go), for each hostname and
// internal-hostname annotation:
//   - the target annotation, when set, for every type and both annotations;
//   - LoadBalancer: spec.externalIPs, else status.loadBalancer.ingress (IP or host name); for
//     an internal-hostname the cluster IP;
//   - ClusterIP: headless (clusterIP None): per ready endpoint of a pod (see headless);
//     otherwise the cluster IP, for a hostname only with PublishInternal;
//   - NodePort: the nodes' ExternalIP addresses, else their InternalIP ones (access public or
//     private chooses), without cordoned nodes under ExcludeUnschedulable; under
//     externalTrafficPolicy Local only the nodes that run a pod of the Service (see
//     localNodes), none when no such pod runs; and an SRV record
//     _<service>._<protocol>.<name> "0 50 <nodePort> <name>." per node port, which
//     Config.ManagedOnly leaves out unless --managed-record-types has SRV (as external-dns's
//     plan does);
//   - ExternalName: spec.externalIPs, else spec.externalName (a CNAME).
//
// The problems are the unusable annotation values, and nodes that cannot be read.
func ServiceEndpoints(in ServiceInput) ([]dnsv1.Endpoint, []Problem) {
	svc := in.Service
	if in.IgnoreHostnameAnnotation {
		return nil, nil
	}
	a, probs := ParseAnnotations(svc.Annotations, KeyHostnameSource)
	var out []dnsv1.Endpoint
	for _, host := range a.Hostnames {
		eps, p := in.forHostname(host, a, false)
		out, probs = append(out, eps...), append(probs, p...)
	}
	for _, host := range a.InternalHostnames {
		eps, p := in.forHostname(host, a, true)
		out, probs = append(out, eps...), append(probs, p...)
	}
	return in.Domains.Finish(out, probs)
}

func clusterIP(svc *corev1.Service) []string {
	if svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP == "" {
		return nil
	}
	return []string{svc.Spec.ClusterIP}
}

// forHostname returns the endpoints of one hostname (internal: of one internal-hostname).
func (in ServiceInput) forHostname(host string, a Annotations, internal bool) ([]dnsv1.Endpoint, []Problem) {
	svc := in.Service
	if len(a.Targets) > 0 {
		return forHost(host, a.Targets, a, "target annotation")
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeLoadBalancer:
		if internal {
			return forHost(host, clusterIP(svc), a, "spec.clusterIP")
		}
		if len(svc.Spec.ExternalIPs) > 0 {
			return parsedForHost(host, svc.Spec.ExternalIPs, a, "spec.externalIPs")
		}
		return parsedForHost(host, lbTargets(svc.Status.LoadBalancer.Ingress, serviceLBAddr), a, "status.loadBalancer.ingress")
	case corev1.ServiceTypeNodePort:
		if in.Nodes == nil {
			return nil, []Problem{problem(dnsv1.ReasonInvalidTarget, "NodePort Service %s: the nodes cannot be read (the manager runs with --watch-namespaces), so it has no targets; set the target annotation", host)}
		}
		out, probs := parsedForHost(host, in.nodeTargets(a.Access), a, "node addresses")
		return append(out, in.nodePortSRV(host, a)...), probs
	case corev1.ServiceTypeExternalName:
		if len(svc.Spec.ExternalIPs) > 0 {
			return parsedForHost(host, svc.Spec.ExternalIPs, a, "spec.externalIPs")
		}
		return parsedForHost(host, []string{svc.Spec.ExternalName}, a, "spec.externalName")
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return in.headless(host, a)
	}
	if internal || in.PublishInternal {
		return forHost(host, clusterIP(svc), a, "spec.clusterIP")
	}
	return nil, nil
}

// parsedForHost is forHost of targets read from the object, checked first.
func parsedForHost(host string, raw []string, a Annotations, field string) ([]dnsv1.Endpoint, []Problem) {
	targets, probs := ParseTargets(raw, field)
	eps, p := forHost(host, targets, a, field)
	return eps, append(probs, p...)
}

// lbTargets returns the IP, then the hostname, of each load-balancer ingress of a Service
// (corev1.LoadBalancerIngress) or an Ingress (networkingv1.IngressLoadBalancerIngress), in
// order, leaving out the empty ones; addr reads the two fields, which the types share.
func lbTargets[T any](ing []T, addr func(T) (ip, hostname string)) []string {
	var out []string
	for _, i := range ing {
		ip, hostname := addr(i)
		if ip != "" {
			out = append(out, ip)
		}
		if hostname != "" {
			out = append(out, hostname)
		}
	}
	return out
}

func serviceLBAddr(i corev1.LoadBalancerIngress) (string, string) { return i.IP, i.Hostname }

// ready reports the EndpointSlice API's readiness (ready unset counts as ready).
func ready(e discoveryv1.Endpoint) bool { return e.Conditions.Ready == nil || *e.Conditions.Ready }

// headless returns a headless Service's endpoints for host, as external-dns builds them: for
// each endpoint of the EndpointSlices that is ready (or any, with spec.publishNotReadyAddresses
// or AlwaysPublishNotReady) and refers to one of the selected pods (an endpoint without a pod
// reference is left out), the name host and, when the pod has spec.hostname,
// <spec.hostname>.<host> (whatever the pod's subdomain), get the pod's target annotation if
// set, else per endpoints-type the ExternalIP addresses of the pod's node (NodeExternalIP) or
// the pod's status.hostIP (HostIP, or PublishHostIP), else the endpoint's first address.
func (in ServiceInput) headless(host string, a Annotations) ([]dnsv1.Endpoint, []Problem) {
	svc := in.Service
	notReady := svc.Spec.PublishNotReadyAddresses || in.AlwaysPublishNotReady
	hostIP := a.EndpointsType == EndpointsTypeHostIP || in.PublishHostIP
	nodeIP := a.EndpointsType == EndpointsTypeNodeExternalIP
	if nodeIP && in.Nodes == nil {
		return nil, []Problem{problem(dnsv1.ReasonInvalidTarget, "headless Service %s: endpoints-type NodeExternalIP needs the nodes, which cannot be read (the manager runs with --watch-namespaces); nothing is published", host)}
	}
	var probs []Problem
	targets := map[string][]string{}
	var names []string
	for _, s := range in.Slices {
		podAddrs := s.AddressType == discoveryv1.AddressTypeIPv4 || s.AddressType == discoveryv1.AddressTypeIPv6
		for _, e := range s.Endpoints {
			if !ready(e) && !notReady {
				continue
			}
			if !podAddrs && !hostIP && !nodeIP {
				continue // FQDN slices: their addresses are not pod IPs
			}
			pod := in.pod(e.TargetRef)
			if pod == nil {
				continue
			}
			ts, tp := TargetAnnotation(pod.Annotations)
			for _, p := range tp {
				probs = append(probs, problem(p.Reason, "pod %s: %s", pod.Name, p.Message))
			}
			switch {
			case len(ts) > 0:
			case nodeIP:
				ts = in.nodeExternalIPs(pod.Spec.NodeName)
			case hostIP:
				ts = []string{pod.Status.HostIP}
			case len(e.Addresses) > 0:
				ts = e.Addresses[:1] // further addresses have no defined meaning (EndpointSlice API)
			}
			hosts := []string{host}
			if pod.Spec.Hostname != "" {
				hosts = append(hosts, pod.Spec.Hostname+"."+host)
			}
			for _, h := range hosts {
				if _, ok := targets[h]; !ok {
					names = append(names, h)
				}
				targets[h] = append(targets[h], ts...)
			}
		}
	}
	var out []dnsv1.Endpoint
	for _, h := range names {
		if ValidateHostname(h) != nil {
			probs = append(probs, problem(dnsv1.ReasonInvalidHostname, "headless Service name %q (a pod's spec.hostname below %s) is not a DNS name; not published", h, host))
			continue
		}
		eps, p := parsedForHost(h, targets[h], a, "endpoint addresses")
		out, probs = append(out, eps...), append(probs, p...)
	}
	return out, probs
}

// pod returns the selected pod an endpoint refers to, or nil: no reference, not a Pod, or not
// one of in.Pods.
func (in ServiceInput) pod(ref *corev1.ObjectReference) *corev1.Pod {
	if ref == nil || ref.Kind != "Pod" || (ref.APIVersion != "" && ref.APIVersion != "v1") {
		return nil
	}
	for i := range in.Pods {
		if in.Pods[i].Name == ref.Name {
			return &in.Pods[i]
		}
	}
	return nil
}

// nodeExternalIPs returns the ExternalIP addresses of the node named name (none when it is not
// known).
func (in ServiceInput) nodeExternalIPs(name string) []string {
	var out []string
	for _, n := range in.Nodes {
		if n.Name != name {
			continue
		}
		for _, addr := range n.Status.Addresses {
			if addr.Type == corev1.NodeExternalIP {
				out = append(out, addr.Address)
			}
		}
	}
	return out
}

// nodeTargets returns the NodePort targets: ExternalIP addresses (access public), InternalIP
// ones (access private), or without access the ExternalIP ones if any node has one, else the
// InternalIP ones; of the nodes localNodes chooses under externalTrafficPolicy Local, else of
// every node; without cordoned nodes under ExcludeUnschedulable.
func (in ServiceInput) nodeTargets(access string) []string {
	nodes := in.Nodes
	if in.Service.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		nodes = in.localNodes()
	}
	var external, internal []string
	for _, n := range nodes {
		if in.ExcludeUnschedulable && n.Spec.Unschedulable {
			continue
		}
		for _, addr := range n.Status.Addresses {
			switch addr.Type {
			case corev1.NodeExternalIP:
				external = append(external, addr.Address)
			case corev1.NodeInternalIP:
				internal = append(internal, addr.Address)
			}
		}
	}
	switch {
	case access == AccessPublic:
		return external
	case access == AccessPrivate:
		return internal
	case len(external) > 0:
		return external
	}
	return internal
}

// localNodes returns the nodes of a Service with externalTrafficPolicy Local, as external-dns
// chooses them from the selected pods in phase Running: the nodes of those that are Ready and
// not terminating; if none, of those that are Ready; if none, of every Running one (so a
// Running pod that is not Ready still publishes its node). No Running pod: no node, so no
// target (traffic to any node would be dropped).
func (in ServiceInput) localNodes() []corev1.Node {
	var live, readyOnly, running []string
	for _, p := range in.Pods {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" {
			continue
		}
		running = append(running, p.Spec.NodeName)
		if PodReady(p) {
			readyOnly = append(readyOnly, p.Spec.NodeName)
			if p.DeletionTimestamp == nil {
				live = append(live, p.Spec.NodeName)
			}
		}
	}
	names := running
	switch {
	case len(live) > 0:
		names = live
	case len(readyOnly) > 0:
		names = readyOnly
	}
	var out []corev1.Node
	for _, n := range in.Nodes {
		if slices.Contains(names, n.Name) {
			out = append(out, n)
		}
	}
	return out
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodePortSRV returns a NodePort Service's SRV records for host, as external-dns publishes
// them: per port with a node port, _<service name>._<protocol>.<host> with the target
// "0 50 <nodePort> <host>." (priority 0, weight 50, RFC 2782). A wildcard host has none (the
// SRV owner name would have a '*' inside).
func (in ServiceInput) nodePortSRV(host string, a Annotations) []dnsv1.Endpoint {
	if strings.HasPrefix(host, "*.") {
		return nil
	}
	var out []dnsv1.Endpoint
	for _, p := range in.Service.Spec.Ports {
		if p.NodePort <= 0 {
			continue
		}
		proto := strings.ToLower(string(p.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		name := fmt.Sprintf("_%s._%s.%s", in.Service.Name, proto, host)
		if ValidateHostname(name) != nil {
			continue
		}
		out = append(out, a.endpoint(name, "SRV", dnsv1.Targets{fmt.Sprintf("0 50 %d %s.", p.NodePort, host)}))
	}
	return out
}
