// Package glue keeps the glue of the embedded server's name server, ns1.<zone> in every zone the
// local provider (dnsplane.io/local) created, equal to the dns Service's addresses
// (--local-dns-service; docs/design.md, "Name servers and glue").
//
// What it owns: one watch on that one Service (a cache of its namespace holding only it, so
// that a Role there is all it needs), and the rewrite of every zone's glue when the Service's
// addresses change: a Service deleted and created again (another cluster IP), its type
// changed, or its load balancer given or changed its ingress IPs. It also sets the glue of the
// zones created afterwards. Events on the Service say what was published and why.
//
// What it must not do: write a glue set that a DNSEndpoint owns (local.Provider's rule), strip
// the glue when the Service has no address, or write DNS anywhere but the embedded store.
package glue

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// The dns Service is read and watched in the manager's namespace only (its Events are written
// with the manager's cluster-wide events rule, or the watched namespaces' Roles in namespaced
// mode, which always include the manager's namespace).
// +kubebuilder:rbac:groups="",namespace=system,resources=services,verbs=get;list;watch

// Event reasons on the dns Service.
const (
	// ReasonGlueRewritten (Normal): the glue of ns1.<zone> was rewritten in the named zones.
	ReasonGlueRewritten = "GlueRewritten"
	// ReasonGlueIsClusterIP (Warning): the load balancer reports only a hostname (an AWS NLB),
	// so the glue is the cluster IP, which only clients inside the cluster reach.
	ReasonGlueIsClusterIP = "GlueIsClusterIP"
	// ReasonNoGlueAddress (Warning): the Service has no IP address (headless); the zones keep
	// the glue they have.
	ReasonNoGlueAddress = "NoGlueAddress"
)

// Source says which of the Service's addresses are the glue.
type Source string

// The sources of the glue, in the order ServiceAddrs tries them.
const (
	SourceLoadBalancer Source = "load balancer"
	SourceClusterIP    Source = "cluster IP"
)

// Addrs is the glue a Service gives: its addresses and where they come from. Hostnames are the
// load balancer's ingress hostnames when it reports no IP (the glue is then the cluster IP).
type Addrs struct {
	IPs       []netip.Addr
	Source    Source
	Hostnames []string
}

// ServiceAddrs returns the addresses through which svc is reached, the glue of ns1.<zone>: its
// load balancer's ingress IPs when it has any (any type: status.loadBalancer is only set for a
// LoadBalancer), else its cluster IPs (spec.clusterIP and spec.clusterIPs; "None" and unparsable
// entries skipped), with the load balancer's hostnames when it reports only those. A glue
// record is an address (RFC 1034 §4.2.1), so a hostname cannot be published as glue. IPs is
// empty for a headless Service.
func ServiceAddrs(svc *corev1.Service) Addrs {
	var out Addrs
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil && !slices.Contains(out.IPs, a) {
			out.IPs = append(out.IPs, a)
		} else if in.Hostname != "" {
			out.Hostnames = append(out.Hostnames, in.Hostname)
		}
	}
	if len(out.IPs) > 0 {
		out.Source, out.Hostnames = SourceLoadBalancer, nil
		return out
	}
	out.Source = SourceClusterIP
	for _, ip := range append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...) {
		if a, err := netip.ParseAddr(ip); err == nil && !slices.Contains(out.IPs, a) {
			out.IPs = append(out.IPs, a)
		}
	}
	return out
}

// Writer rewrites the zones' glue: *local.Provider.
type Writer interface {
	// SetNameServerAddrs makes addrs the glue of ns1.<zone> in every zone and in the zones
	// created afterwards, and returns the zones it rewrote.
	SetNameServerAddrs(ctx context.Context, addrs []netip.Addr) ([]string, error)
}

// Reconciler reconciles the one dns Service. Build it with its fields and SetupWithManager.
type Reconciler struct {
	// Service names the dns Service: --local-dns-service in the manager's namespace.
	Service types.NamespacedName
	// Writer rewrites the glue (*local.Provider).
	Writer Writer
	// Recorder records Events on the Service.
	Recorder record.EventRecorder
	// ResyncInterval is how long after a reconcile the Service is reconciled again (a zone
	// restored from a backup, a write that failed), a time.Duration: --zone-resync-interval.
	ResyncInterval time.Duration

	// reader is the Service's cache, set by SetupWithManager.
	reader client.Reader
	mu     sync.Mutex
	last   string // the glue last published, with its source (for Events: once per change)
}

// SetupWithManager builds the Service's own cache (its namespace, a field selector on its name:
// every other Service is neither listed nor held), adds it to mgr and watches it. The cache and
// the controller run on the leader only, the one replica that writes zones.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, name string) error {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultNamespaces:    map[string]cache.Config{r.Service.Namespace: {}},
		DefaultFieldSelector: fields.OneTermEqualSelector("metadata.name", r.Service.Name),
		DefaultTransform:     cache.TransformStripManagedFields(),
	})
	if err != nil {
		return fmt.Errorf("the dns Service's cache: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("the dns Service's cache: %w", err)
	}
	r.reader = c
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WatchesRawSource(source.Kind(c, &corev1.Service{}, &handler.TypedEnqueueRequestForObject[*corev1.Service]{})).
		Complete(r)
}

// Reconcile reads the Service and publishes its addresses (ServiceAddrs) as every zone's glue.
// A Service that is gone or has no address changes nothing: the zones keep their glue until it
// has one. Errors: the Writer's (retried with backoff).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.NamespacedName != r.Service {
		return reconcile.Result{}, nil
	}
	logger := log.FromContext(ctx)
	var svc corev1.Service
	if err := r.reader.Get(ctx, req.NamespacedName, &svc); err != nil {
		if apierrors.IsNotFound(err) {
			logger.Info("the dns Service is gone; the zones keep their glue until it is back", "service", r.Service.String())
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("read the dns Service %s: %w", r.Service, err)
	}
	addrs := ServiceAddrs(&svc)
	state := describe(addrs)
	if len(addrs.IPs) == 0 {
		r.once(state, func() {
			r.Recorder.Eventf(&svc, corev1.EventTypeWarning, ReasonNoGlueAddress,
				"the Service has no IP address (headless?): the zones keep the glue of ns1.<zone> they have")
		})
		return reconcile.Result{RequeueAfter: r.ResyncInterval}, nil
	}
	changed, err := r.Writer.SetNameServerAddrs(ctx, addrs.IPs)
	if len(changed) > 0 {
		logger.Info("rewrote the zones' glue", "service", r.Service.String(), "glue", state, "zones", len(changed))
		r.Recorder.Eventf(&svc, corev1.EventTypeNormal, ReasonGlueRewritten, "the glue of ns1.<zone> is %s in %d zones: %s",
			state, len(changed), abbreviate(changed, 5))
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("rewrite the zones' glue to %s: %w", state, err)
	}
	if len(addrs.Hostnames) > 0 {
		r.once(state, func() {
			r.Recorder.Eventf(&svc, corev1.EventTypeWarning, ReasonGlueIsClusterIP,
				"the load balancer reports only the hostname %s, and glue is an address: the glue of ns1.<zone> is the %s, reached only inside the cluster; delegate from outside to the load balancer's name (docs/install.md)",
				strings.Join(addrs.Hostnames, ", "), state)
		})
	} else {
		r.once(state, func() {})
	}
	return reconcile.Result{RequeueAfter: r.ResyncInterval}, nil
}

// once runs f when state differs from the last one seen, and remembers state.
func (r *Reconciler) once(state string, f func()) {
	r.mu.Lock()
	seen := r.last == state
	r.last = state
	r.mu.Unlock()
	if !seen {
		f()
	}
}

// describe names the glue for logs and Events: "cluster IP 10.96.0.53".
func describe(a Addrs) string {
	ips := make([]string, 0, len(a.IPs))
	for _, ip := range a.IPs {
		ips = append(ips, ip.String())
	}
	if len(ips) == 0 {
		return "no address"
	}
	return string(a.Source) + " " + strings.Join(ips, ", ")
}

// abbreviate joins the first n of names, and counts the rest.
func abbreviate(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
