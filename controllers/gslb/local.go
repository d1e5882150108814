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
	"github.com/dnsplane/dnsplane/pkg/provider"
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

// readLocal reads the referenced Ingress or Service, its load-balancer addresses and its
// backends' EndpointSlices. resolveTimeout bounds hostname resolution.
func readLocal(ctx context.Context, c client.Reader, res Resolver, g *dnsv1.Gslb, resolveTimeout time.Duration) (*local, error) {
	l := &local{health: map[string]dnsv1.ServiceHealth{}, why: map[string]string{}}
	var lb []corev1.LoadBalancerIngress
	backends := map[string][]string{} // host -> Service names
	key := client.ObjectKey{Namespace: g.Namespace, Name: g.Spec.ResourceRef.Name}
	found := true
	switch g.Spec.ResourceRef.Kind {
	case dnsv1.ResourceKindIngress:
		var ing networkingv1.Ingress
		if err := c.Get(ctx, key, &ing); err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("get Ingress %s: %w", key, err)
			}
			found = false
		}
		l.hosts = g.Spec.Hosts
		if len(l.hosts) == 0 {
			for _, r := range ing.Spec.Rules {
				if r.Host != "" && !strings.HasPrefix(r.Host, "*") {
					l.hosts = append(l.hosts, provider.CanonicalName(r.Host))
				}
			}
		}
		for _, in := range ing.Status.LoadBalancer.Ingress {
			lb = append(lb, corev1.LoadBalancerIngress{IP: in.IP, Hostname: in.Hostname})
		}
		var def []string
		if b := ing.Spec.DefaultBackend; b != nil && b.Service != nil {
			def = append(def, b.Service.Name)
		}
		for _, h := range l.hosts {
			svcs := slices.Clone(def)
			for _, r := range ing.Spec.Rules {
				if provider.CanonicalName(r.Host) != h || r.HTTP == nil {
					continue
				}
				for _, p := range r.HTTP.Paths {
					if p.Backend.Service != nil {
						svcs = append(svcs, p.Backend.Service.Name)
					}
				}
			}
			slices.Sort(svcs)
			backends[h] = slices.Compact(svcs)
		}
	case dnsv1.ResourceKindService:
		var svc corev1.Service
		if err := c.Get(ctx, key, &svc); err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("get Service %s: %w", key, err)
			}
			found = false
		}
		l.hosts = g.Spec.Hosts
		lb = svc.Status.LoadBalancer.Ingress
		for _, h := range l.hosts {
			backends[h] = []string{svc.Name}
		}
	default:
		return nil, fmt.Errorf("resourceRef.kind %q is neither Ingress nor Service", g.Spec.ResourceRef.Kind)
	}
	for i, h := range l.hosts {
		l.hosts[i] = provider.CanonicalName(h)
	}
	if !found {
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
	l.targets = lbTargets(ctx, res, lb, resolveTimeout)
	ready := map[string]int{} // Service -> ready endpoints; absent = Service missing
	for _, h := range l.hosts {
		for _, s := range backends[h] {
			if _, seen := ready[s]; seen {
				continue
			}
			n, exists, err := readyEndpoints(ctx, c, g.Namespace, s)
			if err != nil {
				return nil, err
			}
			if exists {
				ready[s] = n
			}
		}
	}
	for _, h := range l.hosts {
		var missing, live []string
		for _, s := range backends[h] {
			n, ok := ready[s]
			switch {
			case !ok:
				missing = append(missing, s)
			case n > 0:
				live = append(live, s)
			}
		}
		switch {
		case len(backends[h]) == 0:
			l.health[h], l.why[h] = dnsv1.ServiceNotFound, fmt.Sprintf("%s: no backend Service", h)
		case len(missing) == len(backends[h]):
			l.health[h], l.why[h] = dnsv1.ServiceNotFound, fmt.Sprintf("%s: backend Service %s not found", h, strings.Join(missing, ", "))
		case len(live) == 0:
			l.health[h], l.why[h] = dnsv1.ServiceUnhealthy, fmt.Sprintf("%s: no ready endpoints in Service %s", h, strings.Join(backends[h], ", "))
		case len(l.targets) == 0:
			// A hidden failure is still a failure: ready pods that no load balancer reaches.
			l.health[h], l.why[h] = dnsv1.ServiceUnhealthy, fmt.Sprintf("%s: ready endpoints but no load-balancer address on %s %s", h, g.Spec.ResourceRef.Kind, key.Name)
		default:
			l.health[h] = dnsv1.ServiceHealthy
		}
	}
	return l, nil
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
