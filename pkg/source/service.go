package source

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// ServiceInput is what ServiceEndpoints reads for one Service.
type ServiceInput struct {
	Service *corev1.Service
	// Nodes are the cluster's nodes, for a NodePort Service's targets (nil when they cannot be
	// read, as with --watch-namespaces).
	Nodes []corev1.Node
	// Slices are the Service's EndpointSlices, for a headless Service's targets and for a
	// NodePort Service with externalTrafficPolicy Local.
	Slices []discoveryv1.EndpointSlice
	// PublishInternal is --publish-internal-services: a ClusterIP Service's hostname annotation
	// publishes its cluster IP.
	PublishInternal bool
	Domains         DomainFilter
}

// ServiceEndpoints returns the endpoints of one Service as external-dns's service source
// derives them, for each hostname annotation:
//   - the target annotation, when set, for every type;
//   - LoadBalancer: spec.externalIPs, else status.loadBalancer.ingress (IP or host name);
//   - ClusterIP: headless (clusterIP None): the ready endpoints' addresses, and
//     <endpoint hostname>.<hostname> for endpoints with a hostname; otherwise the cluster IP
//     with PublishInternal only;
//   - NodePort: the nodes' ExternalIP addresses, else their InternalIP ones (access public or
//     private chooses), only the nodes with a ready endpoint under externalTrafficPolicy Local;
//   - ExternalName: spec.externalIPs, else spec.externalName (a CNAME).
//
// Each internal-hostname annotation publishes the cluster IP. The problems are the unusable
// annotation values, and a NodePort Service when nodes cannot be read.
func ServiceEndpoints(in ServiceInput) ([]dnsv1.Endpoint, []Problem) {
	svc := in.Service
	a, probs := ParseAnnotations(svc.Annotations, KeyHostnameSource)
	var out []dnsv1.Endpoint
	for _, host := range a.Hostnames {
		eps, p := in.forHostname(host, a)
		out, probs = append(out, eps...), append(probs, p...)
	}
	if ip := clusterIP(svc); ip != "" {
		for _, host := range a.InternalHostnames {
			eps, p := forHost(host, []string{ip}, a, "spec.clusterIP")
			out, probs = append(out, eps...), append(probs, p...)
		}
	}
	return in.Domains.Finish(out, probs)
}

func clusterIP(svc *corev1.Service) string {
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return ""
	}
	return svc.Spec.ClusterIP
}

// forHostname returns one hostname annotation's endpoints.
func (in ServiceInput) forHostname(host string, a Annotations) ([]dnsv1.Endpoint, []Problem) {
	svc := in.Service
	if len(a.Targets) > 0 {
		return forHost(host, a.Targets, a, "target annotation")
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeLoadBalancer:
		if len(svc.Spec.ExternalIPs) > 0 {
			return parsedForHost(host, svc.Spec.ExternalIPs, a, "spec.externalIPs")
		}
		return parsedForHost(host, lbTargets(svc.Status.LoadBalancer.Ingress, serviceLBAddr), a, "status.loadBalancer.ingress")
	case corev1.ServiceTypeNodePort:
		if in.Nodes == nil {
			return nil, []Problem{problem(dnsv1.ReasonInvalidTarget, "NodePort Service %s: the nodes cannot be read (the manager runs with --watch-namespaces), so it has no targets; set the target annotation", host)}
		}
		return parsedForHost(host, in.nodeTargets(a.Access), a, "node addresses")
	case corev1.ServiceTypeExternalName:
		if len(svc.Spec.ExternalIPs) > 0 {
			return parsedForHost(host, svc.Spec.ExternalIPs, a, "spec.externalIPs")
		}
		return parsedForHost(host, []string{svc.Spec.ExternalName}, a, "spec.externalName")
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return in.headless(host, a)
	}
	if in.PublishInternal {
		return forHost(host, []string{svc.Spec.ClusterIP}, a, "spec.clusterIP")
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

// readyEndpoints returns the ready endpoints of the slices (ready unset counts as ready, as
// the EndpointSlice API defines it).
func (in ServiceInput) readyEndpoints() []discoveryv1.Endpoint {
	var out []discoveryv1.Endpoint
	for _, s := range in.Slices {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				out = append(out, e)
			}
		}
	}
	return out
}

// headless returns host's endpoints of the ready addresses, and one per endpoint hostname.
func (in ServiceInput) headless(host string, a Annotations) ([]dnsv1.Endpoint, []Problem) {
	var all []string
	byHost := map[string][]string{}
	for _, e := range in.readyEndpoints() {
		all = append(all, e.Addresses...)
		if e.Hostname != nil && *e.Hostname != "" {
			byHost[*e.Hostname+"."+host] = append(byHost[*e.Hostname+"."+host], e.Addresses...)
		}
	}
	out, probs := parsedForHost(host, all, a, "endpoint addresses")
	for h, addrs := range byHost {
		eps, p := parsedForHost(h, addrs, a, "endpoint addresses")
		out, probs = append(out, eps...), append(probs, p...)
	}
	return out, probs
}

// nodeTargets returns the NodePort targets: ExternalIP addresses (access public), InternalIP
// ones (access private), or without access the ExternalIP ones if any node has one, else the
// InternalIP ones; under externalTrafficPolicy Local only of nodes with a ready endpoint.
func (in ServiceInput) nodeTargets(access string) []string {
	var local []string
	if in.Service.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		for _, e := range in.readyEndpoints() {
			if e.NodeName != nil {
				local = append(local, *e.NodeName)
			}
		}
	}
	var external, internal []string
	for _, n := range in.Nodes {
		if local != nil && !slices.Contains(local, n.Name) {
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
