package source

import (
	"slices"

	networkingv1 "k8s.io/api/networking/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// IngressClassAnnotation is the Ingress class annotation that predates spec.ingressClassName.
const IngressClassAnnotation = "kubernetes.io/ingress.class"

// IngressClassMatches reports whether ing's class (spec.ingressClassName, else the
// kubernetes.io/ingress.class annotation) is one of classes (--ingress-class); every Ingress
// matches when classes is empty.
func IngressClassMatches(ing *networkingv1.Ingress, classes []string) bool {
	if len(classes) == 0 {
		return true
	}
	class := ing.Annotations[IngressClassAnnotation]
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	return slices.Contains(classes, class)
}

// IngressOptions are the flags that shape what IngressEndpoints reads.
type IngressOptions struct {
	Domains DomainFilter
	// IgnoreTLSSpec and IgnoreRulesSpec are --ignore-ingress-tls-spec and
	// --ignore-ingress-rules-spec; IgnoreHostnameAnnotation is --ignore-hostname-annotation.
	IgnoreTLSSpec, IgnoreRulesSpec, IgnoreHostnameAnnotation bool
}

// IngressEndpoints returns the endpoints of one Ingress as external-dns's ingress source derives
// them: hostnames from spec.rules[].host and spec.tls[].hosts (unless ingress-hostname-source is
// annotation-only, or the flags leave either out) and from the hostname annotation (unless it is
// defined-hosts-only or --ignore-hostname-annotation); targets from the target annotation, else
// status.loadBalancer.ingress (IP or host name).
func IngressEndpoints(ing *networkingv1.Ingress, opts IngressOptions) ([]dnsv1.Endpoint, []Problem) {
	a, probs := ParseAnnotations(ing.Annotations, KeyHostnameSource)
	var hosts []string
	if a.HostnameSource != HostnameSourceAnnotationOnly {
		var spec []string
		if !opts.IgnoreRulesSpec {
			for _, r := range ing.Spec.Rules {
				spec = append(spec, r.Host)
			}
		}
		if !opts.IgnoreTLSSpec {
			for _, t := range ing.Spec.TLS {
				spec = append(spec, t.Hosts...)
			}
		}
		var hp []Problem
		hosts, hp = specHostnames(spec, "spec.rules[].host")
		probs = append(probs, hp...)
	}
	if a.HostnameSource != HostnameSourceDefinedHostsOnly && !opts.IgnoreHostnameAnnotation {
		hosts = append(hosts, a.Hostnames...)
	}
	targets, field := a.Targets, "target annotation"
	if len(targets) == 0 {
		var tp []Problem
		targets, tp = ParseTargets(lbTargets(ing.Status.LoadBalancer.Ingress, ingressLBAddr), "status.loadBalancer.ingress")
		probs, field = append(probs, tp...), "status.loadBalancer.ingress"
	}
	var out []dnsv1.Endpoint
	for _, h := range dedupeStrings(hosts) {
		eps, p := forHost(h, targets, a, field)
		out, probs = append(out, eps...), append(probs, p...)
	}
	return opts.Domains.Finish(out, probs)
}

// specHostnames returns the valid, non-empty names of hosts, reporting the others, naming field.
func specHostnames(hosts []string, field string) ([]string, []Problem) {
	var out []string
	var probs []Problem
	for _, h := range hosts {
		if h == "" {
			continue
		}
		if err := ValidateHostname(h); err != nil {
			probs = append(probs, problem(dnsv1.ReasonInvalidHostname, "%s %q: %v; not published", field, h, err))
			continue
		}
		out = append(out, dnswire.Dotless(h))
	}
	return out, probs
}

func dedupeStrings(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func ingressLBAddr(i networkingv1.IngressLoadBalancerIngress) (string, string) {
	return i.IP, i.Hostname
}
