package gslb

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// Resolver resolves load-balancer hostnames; *net.Resolver satisfies it.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// local is this cluster's view of a Gslb's hosts.
type local struct {
	hosts []string
	// health per host: Healthy, Unhealthy or NotFound.
	health map[string]dnsv1.ServiceHealth
	// targets are the load balancer's addresses, canonical, sorted (every host of one
	// resource shares them).
	targets []string
	// why explains Unhealthy and NotFound hosts, for the condition message.
	why map[string]string
	// missing, when the referenced Ingress or Service does not exist, says so
	// ("Ingress <namespace>/<name> does not exist").
	missing string
}

// healthy returns host's targets when it is Healthy, else nil.
func (l *local) healthy(host string) []string {
	if l.health[host] != dnsv1.ServiceHealthy {
		return nil
	}
	return l.targets
}

// witnessLocal is a witness's local view of g: spec.hosts, canonical, and no targets (it reads
// no resource: a witness owns nothing).
func witnessLocal(g *dnsv1.Gslb) *local {
	l := &local{health: map[string]dnsv1.ServiceHealth{}, why: map[string]string{}}
	for _, h := range g.Spec.Hosts {
		if h = dnswire.Dotless(h); !slices.Contains(l.hosts, h) {
			l.hosts = append(l.hosts, h)
		}
	}
	return l
}

// readLocal reads the referenced Ingress or Service, its load-balancer addresses and its
// backends' EndpointSlices. resolveTimeout bounds hostname resolution.
func readLocal(ctx context.Context, c client.Reader, res Resolver, g *dnsv1.Gslb, resolveTimeout time.Duration) (*local, error) {
	l := &local{health: map[string]dnsv1.ServiceHealth{}, why: map[string]string{}}
	key := client.ObjectKey{Namespace: g.Namespace, Name: g.Spec.ResourceRef.Name}
	var rr *resourceRead
	var err error
	switch g.Spec.ResourceRef.Kind {
	case dnsv1.ResourceKindIngress:
		rr, err = readIngress(ctx, c, key, g.Spec.Hosts)
	case dnsv1.ResourceKindService:
		rr, err = readService(ctx, c, key, g.Spec.Hosts)
	default:
		err = fmt.Errorf("resourceRef.kind %q is neither Ingress nor Service", g.Spec.ResourceRef.Kind)
	}
	if err != nil {
		return nil, err
	}
	l.hosts = rr.hosts
	for i, h := range l.hosts {
		l.hosts[i] = dnswire.Dotless(h)
	}
	if !rr.found {
		l.missing = fmt.Sprintf("%s %s does not exist", g.Spec.ResourceRef.Kind, key)
		if len(l.hosts) == 0 {
			// An Ingress gives the hosts, and it is gone: its hosts are those last served.
			l.hosts = knownHosts(g)
		}
		for _, h := range l.hosts {
			l.health[h], l.why[h] = dnsv1.ServiceNotFound, fmt.Sprintf("%s: %s", h, l.missing)
		}
		return l, nil
	}
	l.targets = lbTargets(ctx, res, rr.lb, resolveTimeout)
	ready, err := readBackends(ctx, c, g.Namespace, l.hosts, rr.backends)
	if err != nil {
		return nil, err
	}
	for _, h := range l.hosts {
		l.health[h], l.why[h] = hostHealth(h, rr.backends[h], ready, len(l.targets) > 0, fmt.Sprintf("%s %s", g.Spec.ResourceRef.Kind, key.Name))
	}
	return l, nil
}

// resourceRead is what readIngress or readService read of the referenced resource.
type resourceRead struct {
	// found: the resource exists.
	found bool
	// hosts are spec.hosts, else (an Ingress) its rules' non-wildcard hosts.
	hosts []string
	lb    []corev1.LoadBalancerIngress
	// backends maps a host to its backend Service names, sorted.
	backends map[string][]string
}

// readIngress reads the Ingress key: hosts (spec hosts, else its rules'), load-balancer
// addresses and each host's backend Services (the default backend's and its rules' paths').
// Errors: the Get failed other than NotFound.
func readIngress(ctx context.Context, c client.Reader, key client.ObjectKey, specHosts []string) (*resourceRead, error) {
	var ing networkingv1.Ingress
	rr, err := startRead(ctx, c, "Ingress", key, &ing, specHosts)
	if err != nil {
		return nil, err
	}
	if len(rr.hosts) == 0 {
		for _, r := range ing.Spec.Rules {
			if r.Host != "" && !strings.HasPrefix(r.Host, "*") {
				rr.hosts = append(rr.hosts, dnswire.Dotless(r.Host))
			}
		}
	}
	for _, in := range ing.Status.LoadBalancer.Ingress {
		rr.lb = append(rr.lb, corev1.LoadBalancerIngress{IP: in.IP, Hostname: in.Hostname})
	}
	var def []string
	if b := ing.Spec.DefaultBackend; b != nil && b.Service != nil {
		def = append(def, b.Service.Name)
	}
	for _, h := range rr.hosts {
		svcs := slices.Clone(def)
		for _, r := range ing.Spec.Rules {
			if dnswire.Dotless(r.Host) != h || r.HTTP == nil {
				continue
			}
			for _, p := range r.HTTP.Paths {
				if p.Backend.Service != nil {
					svcs = append(svcs, p.Backend.Service.Name)
				}
			}
		}
		slices.Sort(svcs)
		rr.backends[h] = slices.Compact(svcs)
	}
	return rr, nil
}

// startRead reads the kind's object key into obj and returns the read with the spec hosts: found
// false when there is no such object. Errors: the Get failed other than NotFound.
func startRead(ctx context.Context, c client.Reader, kind string, key client.ObjectKey, obj client.Object, specHosts []string) (*resourceRead, error) {
	rr := &resourceRead{found: true, hosts: specHosts, backends: map[string][]string{}}
	if err := c.Get(ctx, key, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get %s %s: %w", kind, key, err)
		}
		rr.found = false
	}
	return rr, nil
}

// readService reads the Service key: its load-balancer addresses, and itself as every spec
// host's backend. Errors: the Get failed other than NotFound.
func readService(ctx context.Context, c client.Reader, key client.ObjectKey, specHosts []string) (*resourceRead, error) {
	var svc corev1.Service
	rr, err := startRead(ctx, c, "Service", key, &svc, specHosts)
	if err != nil {
		return nil, err
	}
	rr.lb = svc.Status.LoadBalancer.Ingress
	for _, h := range rr.hosts {
		rr.backends[h] = []string{svc.Name}
	}
	return rr, nil
}

// readBackends returns the ready endpoints of every backend Service of hosts, each read once; a
// Service that does not exist is absent. Errors are API read errors.
func readBackends(ctx context.Context, c client.Reader, ns string, hosts []string, backends map[string][]string) (map[string]int, error) {
	ready := map[string]int{}
	for _, h := range hosts {
		for _, s := range backends[h] {
			if _, seen := ready[s]; seen {
				continue
			}
			n, exists, err := readyEndpoints(ctx, c, ns, s)
			if err != nil {
				return nil, err
			}
			if exists {
				ready[s] = n
			}
		}
	}
	return ready, nil
}

// hostHealth decides host's health and why from its backend Services, their ready endpoints
// (ready: Service -> count, absent = missing) and whether the resource (named res, "<Kind>
// <name>") has a load-balancer address. Pure.
func hostHealth(h string, backends []string, ready map[string]int, hasTargets bool, res string) (dnsv1.ServiceHealth, string) {
	var missing, live []string
	for _, s := range backends {
		n, ok := ready[s]
		switch {
		case !ok:
			missing = append(missing, s)
		case n > 0:
			live = append(live, s)
		}
	}
	switch {
	case len(backends) == 0:
		return dnsv1.ServiceNotFound, fmt.Sprintf("%s: no backend Service", h)
	case len(missing) == len(backends):
		return dnsv1.ServiceNotFound, fmt.Sprintf("%s: backend Service %s not found", h, strings.Join(missing, ", "))
	case len(live) == 0:
		return dnsv1.ServiceUnhealthy, fmt.Sprintf("%s: no ready endpoints in Service %s", h, strings.Join(backends, ", "))
	case !hasTargets:
		// A hidden failure is still a failure: ready pods that no load balancer reaches.
		return dnsv1.ServiceUnhealthy, fmt.Sprintf("%s: ready endpoints but no load-balancer address on %s", h, res)
	}
	return dnsv1.ServiceHealthy, ""
}

// knownHosts returns the hosts g's status last reported, sorted.
func knownHosts(g *dnsv1.Gslb) []string {
	var out []string
	for h := range g.Status.ServiceHealth {
		if !strings.Contains(h, "/") { // not a resource key (see reconcileNormal)
			out = append(out, h)
		}
	}
	for h := range g.Status.HealthyRecords {
		out = append(out, h)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// readyEndpoints counts the ready endpoints of Service ns/name over its EndpointSlices
// (label kubernetes.io/service-name; an endpoint whose ready condition is unset counts as ready,
// as the EndpointSlice API says consumers should). exists is false when the Service is missing.
func readyEndpoints(ctx context.Context, c client.Reader, ns, name string) (n int, exists bool, _ error) {
	var svc corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &svc); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("get Service %s/%s: %w", ns, name, err)
	}
	var slices discoveryv1.EndpointSliceList
	if err := c.List(ctx, &slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: name}); err != nil {
		return 0, true, fmt.Errorf("list EndpointSlices of %s/%s: %w", ns, name, err)
	}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				n++
			}
		}
	}
	return n, true, nil
}

// lbTargets returns the load balancer's addresses: its IPs, and its hostnames resolved (AWS ELBs
// publish only a hostname), canonical, sorted, deduplicated. A hostname that does not resolve
// within timeout adds nothing.
func lbTargets(ctx context.Context, res Resolver, lb []corev1.LoadBalancerIngress, timeout time.Duration) []string {
	var out []string
	for _, in := range lb {
		if a, err := netip.ParseAddr(in.IP); err == nil {
			out = append(out, a.Unmap().String())
			continue
		}
		if in.Hostname == "" || res == nil {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, timeout)
		addrs, err := res.LookupHost(rctx, in.Hostname)
		cancel()
		if err != nil {
			continue
		}
		for _, s := range addrs {
			if a, err := netip.ParseAddr(s); err == nil {
				out = append(out, a.Unmap().String())
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
