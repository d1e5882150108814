package gslb

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/deps"
	"github.com/dnsplane/dnsplane/controllers/internal/lifecycle"
	"github.com/dnsplane/dnsplane/controllers/internal/predicates"
	"github.com/dnsplane/dnsplane/controllers/internal/requeue"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
	"github.com/dnsplane/dnsplane/pkg/gslb/probe"
	"github.com/dnsplane/dnsplane/pkg/promreg"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Reconciler reconciles Gslbs.
type Reconciler struct {
	// ledger, set by SetupWithManager (the manager's APIReader), makes a reconcile read past
	// the cache when the cached copy is not this process's last status write (status.Ledger), so that no reconcile compares its status with
	// one older than its own last write.
	ledger   *status.Ledger
	Client   client.Client
	Recorder record.EventRecorder
	// Providers is the provider factory (*factory.Factory), for the edge zone's DNS address.
	Providers deps.Providers
	// GeoTag is --geo-tag, this cluster's region.
	GeoTag string
	// Peers are the other clusters' DNS servers (--ext-gslb-clusters).
	Peers []gslb.Peer
	// Witnesses are --ext-gslb-witnesses: members that vote on targets and own none.
	Witnesses []gslb.Peer
	// Witness is --gslb-witness: this manager is a witness. Its local view is empty (no
	// targets of its own), it publishes its verdict records and nothing else: no
	// localtargets, no <host> answers, no edge NS record.
	Witness bool
	// Querier asks peers for their local targets; its Timeout is --gslb-peer-timeout.
	Querier gslb.Querier
	// Interval is --gslb-interval: how often peers are re-queried, a time.Duration.
	Interval time.Duration
	// NSAddress is --gslb-ns-address, the glue of this cluster's name server in the edge zone.
	NSAddress string
	// PeerPort is --gslb-peer-port: the DNS port of peers discovered from the edge NS set;
	// default 53.
	PeerPort int
	// Resolver resolves hostname-only load balancers; nil = they count as no address.
	Resolver Resolver
	// Metrics, when set, records healthy records and peer errors.
	Metrics *Metrics
	// Scheduler probes the targets of the Gslbs with spec.healthCheck (one per manager, a
	// Runnable); nil: spec.healthCheck is not acted on (readiness alone).
	Scheduler *probe.Scheduler
	// Judge takes the quorum decisions (health.Judge; its Clock is required with Scheduler).
	Judge health.Judge
	// ProbeMetrics, when set, records isolation (dnsplane_gslb_isolated); the Scheduler
	// records the probes.
	ProbeMetrics *probe.Metrics

	mu       sync.Mutex
	lastSeen map[string]metav1.Time // peer address -> last answer
	// discovered are, per Gslb with spec.edge, the peer clusters of the last edge NS set read.
	discovered map[types.NamespacedName][]gslb.Peer
	// health is what each Gslb with spec.healthCheck remembers between reconciles, by host.
	health map[types.NamespacedName]map[string]*hostMemory
}

// Metrics are the Gslb controller's metrics.
type Metrics struct {
	// HealthyRecords is dnsplane_gslb_healthy_records{namespace,gslb,host}: targets <host> serves.
	HealthyRecords *prometheus.GaugeVec
	// PeerErrors is dnsplane_gslb_peer_query_errors_total{peer}: failed peer queries.
	PeerErrors *prometheus.CounterVec
}

// NewMetrics creates the Gslb metrics and registers them with reg (the manager's registry; nil =
// unregistered). A registration error (a second registration with the same registry, say) is
// returned wrapped (pkg/promreg).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		HealthyRecords: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dnsplane_gslb_healthy_records",
			Help: "Targets a Gslb host serves (this cluster's healthy ones plus its peers')."}, []string{"namespace", "gslb", "host"}),
		PeerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dnsplane_gslb_peer_query_errors_total",
			Help: "Gslb peer queries that failed (timeout, refused, spoofed or malformed answers), by peer geo tag."}, []string{"peer"}),
	}
	return promreg.Registered(reg, "gslb", m, m.HealthyRecords, m.PeerErrors)
}

// +kubebuilder:rbac:groups=dnsplane.io,resources=gslbs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=dnsplane.io,resources=gslbs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=dnsplane.io,resources=gslbs/finalizers,verbs=update
// +kubebuilder:rbac:groups=dnsplane.io,resources=dnsendpoints;dnsrecords,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch

// endpointName is the DNSEndpoint a Gslb owns; edgeName its edge DNSRecord.
func endpointName(g *dnsv1.Gslb) string { return g.Name + "-gslb" }
func edgeName(g *dnsv1.Gslb) string     { return g.Name + "-gslb-edge" }

// Reconcile publishes one Gslb's local targets and strategy answer, or deletes what it owns
// (lifecycle.Lifecycle: the read, the finalizer and the status commit around the two phases).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	l := lifecycle.Lifecycle[*dnsv1.Gslb]{
		Client: r.Client, Recorder: r.Recorder, Ledger: r.ledger,
		New:       func() *dnsv1.Gslb { return &dnsv1.Gslb{} },
		Finalizer: dnsv1.FinalizerGslb, FinalizerWrite: lifecycle.ByPatch,
		Status: func(g *dnsv1.Gslb) (any, *int64) { return &g.Status, &g.Status.ObservedGeneration },
		Events: []string{dnsv1.ConditionReady},
		Normal: func(ctx context.Context, g *dnsv1.Gslb, _ func(context.Context) error) (lifecycle.Result, error) {
			if err := r.reconcileNormal(ctx, g); err != nil {
				return lifecycle.Result{}, err // the controller's back-off
			}
			// Peers change without any event here: ask them again every --gslb-interval.
			return lifecycle.Result{Result: ctrl.Result{RequeueAfter: r.Interval}}, nil
		},
		Delete: r.reconcileDelete,
	}
	return l.Reconcile(ctx, req)
}

func (r *Reconciler) ready(g *dnsv1.Gslb, ok bool, reason, msg string) {
	status.Set(&g.Status.Conditions, g.Generation, dnsv1.ConditionReady, ok, reason, msg)
}

// reconcileNormal observes the Gslb's world, plans its records (plan.go, pure), writes them, and
// sets Ready from what it saw (readyCondition, pure).
func (r *Reconciler) reconcileNormal(ctx context.Context, g *dnsv1.Gslb) error {
	g.Status.GeoTag = r.GeoTag
	if r.GeoTag == "" {
		r.ready(g, false, dnsv1.ReasonNoGeoTag, "the manager runs without --geo-tag: restart it with --geo-tag=<this cluster's region> (Gslbs need it to name this cluster's targets)")
		return nil
	}
	obs, err := r.observe(ctx, g)
	if err != nil {
		return err
	}
	prev := g.Status.Peers
	g.Status.Peers = obs.peerStatus
	hp, err := r.decideHealth(g, obs, prev)
	if err != nil {
		r.ready(g, false, dnsv1.ReasonInvalidHealthCheck, "spec.healthCheck: "+err.Error())
		return nil
	}
	g.Status.Targets = hp.status
	setMembership(&g.Status, obs.members.size(), hp)
	p := planRecords(planInput{GeoTag: r.GeoTag, Spec: g.Spec, Local: obs.local, PeerTargets: obs.peerTargets, Capable: obs.capable,
		Decided: hp.decided, Witness: r.Witness})
	g.Status.ServiceHealth, g.Status.HealthyRecords = p.ServiceHealth, p.HealthyRecords
	r.recordHealthy(g, p.Served)
	if p.StrategyErr != nil {
		r.ready(g, false, dnsv1.ReasonInvalidStrategy, "spec.strategy: "+p.StrategyErr.Error())
		return nil
	}
	// Write: the owned DNSEndpoint, and the edge DNSRecord.
	if err := r.writeEndpoint(ctx, g, p.Endpoints); err != nil {
		return err
	}
	if err := r.writeEdge(ctx, g); err != nil {
		return err
	}
	ok, reason, msg := readyCondition(readyInput{
		Capable: obs.capable, Strategy: strategyType(g.Spec.Strategy), ZoneName: g.Spec.ZoneRef.Name, EndpointName: endpointName(g),
		EndpointReady: r.endpointCondition(ctx, g), Missing: obs.local.missing, AnyTargets: p.AnyTargets,
		Unhealthy: p.Unhealthy, PeerErrors: peerErrors(obs.discoveryErr, g.Status.Peers), Hosts: len(obs.local.hosts),
		AllDown: hp.allDown, Isolated: hp.isolated, Notes: hp.notes, HealthChecked: g.Spec.HealthCheck != nil && r.Scheduler != nil,
		Witness: r.Witness,
	})
	r.ready(g, ok, reason, msg)
	r.mirrorServed(ctx, g)
	return nil
}

// mirrorServed sets the Gslb's Served condition from its owned DNSEndpoint's, which publishes
// every record of the Gslb (docs/served.md): the DNSEndpoint's status, reason and message,
// named; Unknown NotChecked until it has one. A change of the DNSEndpoint's status reconciles
// the Gslb (Owns).
func (r *Reconciler) mirrorServed(ctx context.Context, g *dnsv1.Gslb) {
	c := r.endpointConditionOf(ctx, g, dnsv1.ConditionServed)
	if c == nil || c.Status == metav1.ConditionUnknown {
		msg := "its DNSEndpoint " + endpointName(g) + " was not checked yet"
		if c != nil {
			msg = "DNSEndpoint " + endpointName(g) + ": " + c.Message
		}
		status.SetUnknown(&g.Status.Conditions, g.Generation, dnsv1.ConditionServed, dnsv1.ReasonNotChecked, msg)
		return
	}
	status.Set(&g.Status.Conditions, g.Generation, dnsv1.ConditionServed, c.Status == metav1.ConditionTrue, c.Reason,
		"DNSEndpoint "+endpointName(g)+": "+c.Message)
}

// observed is what the observe phase read for one Gslb.
type observed struct {
	local *local
	// peerTargets are the peers' targets by host and geo tag; peerStatus is status.peers.
	peerTargets  map[string]map[string][]string
	peerStatus   []dnsv1.PeerStatus
	discoveryErr error
	// members is the membership asked; peers is members.all(); reads every answer by host
	// and geo tag.
	members membership
	peers   []gslb.Peer
	reads   map[string]map[string]peerRead
	// endpoints are the owned DNSEndpoint's as last written (none when it does not exist).
	endpoints []dnsv1.Endpoint
	// capable: the Gslb zone's provider serves the strategy's weighted or geo record sets
	// (true for the other strategies).
	capable bool
}

// observe reads this cluster's targets (none for a witness), the members' (--ext-gslb-clusters,
// else the edge NS set as last read, and --ext-gslb-witnesses; concurrently, each under the
// peer timeout) and, for a weighted Gslb, its provider's capability. Errors: reading the local
// resources failed.
func (r *Reconciler) observe(ctx context.Context, g *dnsv1.Gslb) (*observed, error) {
	resolveTimeout := r.Querier.Timeout
	if resolveTimeout <= 0 {
		resolveTimeout = 2 * time.Second
	}
	loc := witnessLocal(g)
	if !r.Witness {
		var err error
		if loc, err = readLocal(ctx, r.Client, r.Resolver, g, resolveTimeout); err != nil {
			return nil, err
		}
	}
	obs := &observed{local: loc, capable: true}
	m, derr := r.members(ctx, g)
	obs.discoveryErr = derr
	checked := g.Spec.HealthCheck != nil && r.Scheduler != nil
	obs.members = m
	obs.peers = m.all()
	obs.peerTargets, obs.peerStatus, obs.reads = r.queryPeers(ctx, m, loc.hosts, checked, g.Status.Peers)
	if checked {
		var ep dnsv1.DNSEndpoint
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: endpointName(g)}, &ep); err == nil {
			obs.endpoints = ep.Spec.Endpoints
		} else if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("read DNSEndpoint %s: %w", endpointName(g), err)
		}
	}
	if t := g.Spec.Strategy.Type; t == dnsv1.GslbWeighted || t == dnsv1.GslbGeo {
		obs.capable = r.routingCapable(ctx, g, t)
	}
	return obs, nil
}

// recordHealthy sets dnsplane_gslb_healthy_records for each planned host (served: host -> targets).
func (r *Reconciler) recordHealthy(g *dnsv1.Gslb, served map[string]int) {
	if r.Metrics == nil {
		return
	}
	for h, n := range served {
		r.Metrics.HealthyRecords.WithLabelValues(g.Namespace, g.Name, h).Set(float64(n))
	}
}

// addressEndpoints returns name's A and AAAA endpoints for targets (none when empty).
func addressEndpoints(name string, targets []string, ttl int64, setID string, weight *int64) []dnsv1.Endpoint {
	var v4, v6 dnsv1.Targets
	for _, t := range targets {
		if a, err := netip.ParseAddr(t); err == nil && a.Is4() {
			v4 = append(v4, t)
		} else if err == nil {
			v6 = append(v6, t)
		}
	}
	var out []dnsv1.Endpoint
	for _, x := range []struct {
		typ     string
		targets dnsv1.Targets
	}{{"A", v4}, {"AAAA", v6}} {
		if len(x.targets) == 0 {
			continue
		}
		e := dnsv1.Endpoint{DNSName: name, RecordType: x.typ, RecordTTL: dnsv1.TTL(ttl), Targets: x.targets, SetIdentifier: setID}
		if weight != nil {
			// external-dns' name for a set's weight; the record controllers carry it as the
			// record set's weight for every provider with weighted routing.
			e.ProviderSpecific = dnsv1.ProviderSpecific{{Name: provider.KeyWeight, Value: strconv.FormatInt(*weight, 10)}}
		}
		out = append(out, e)
	}
	return out
}

// discoverPeers reads the edge zone's NS set for the Gslb zone (every cluster contributes
// ns-<geotag>.<gslb zone> with its glue, writeEdge) from the edge zone's DNS server (its Secret's
// DNS_ADDRESS, else its first name server on port 53) and returns every cluster but this one as
// a peer at its glue address and PeerPort. Errors: the edge or Gslb DNSZone is unknown, or the
// query failed.
func (r *Reconciler) discoverPeers(ctx context.Context, g *dnsv1.Gslb) ([]gslb.Peer, error) {
	zone, err := r.zone(ctx, g.Namespace, g.Spec.ZoneRef)
	if err != nil {
		return nil, err
	}
	edge, err := r.zone(ctx, g.Namespace, g.Spec.Edge.ZoneRef)
	if err != nil {
		return nil, err
	}
	server := ""
	if r.Providers != nil {
		if res, err := r.Providers.Resolve(ctx, edge.Namespace, edge.Spec.ProviderRef.Name); err == nil {
			server = res.DNSAddress
		}
	}
	if server == "" && len(edge.Status.NameServers) > 0 {
		server = net.JoinHostPort(edge.Status.NameServers[0], "53")
	}
	if server == "" {
		return nil, fmt.Errorf("edge DNSZone %s/%s has no DNS server yet", edge.Namespace, edge.Name)
	}
	port := r.PeerPort
	if port <= 0 {
		port = 53
	}
	return edgePeers(ctx, dnsclient.Client{Timeout: r.Querier.Timeout}, server, zone.Spec.Zone, r.GeoTag, port)
}

// edgePeers asks server for the NS set of zone and returns the clusters of the referral
// (gslb.ParseReferral), this one (geoTag) left out, at their glue (else asked for) and port,
// sorted by geo tag. Errors: the NS query failed, its rcode is not NOERROR, the answer holds
// no NS record of zone (an edge server that lost the zone is a failed read, not an empty
// fleet), or a server without glue has no address (its A query failed or holds none): a failed
// lookup is a failed read, never a smaller membership.
func edgePeers(ctx context.Context, c dnsclient.Client, server, zone, geoTag string, port int) ([]gslb.Peer, error) {
	resp, err := c.Query(ctx, server, zone, dns.TypeNS)
	if err != nil {
		return nil, err // the condition message quotes it as it is
	}
	if resp.Rcode != dns.RcodeSuccess {
		return nil, fmt.Errorf("NS %s at %s: rcode %s", zone, server, dns.RcodeToString[resp.Rcode])
	}
	if !hasNS(resp, zone) {
		return nil, fmt.Errorf("NS %s at %s: no NS record of the zone in the answer", zone, server)
	}
	servers := gslb.ParseReferral(resp, zone, geoTag)
	for i := range servers {
		if servers[i].Addr != "" {
			continue
		}
		a, err := c.Query(ctx, server, servers[i].Name, dns.TypeA)
		if err != nil {
			return nil, fmt.Errorf("A %s at %s: %w", servers[i].Name, server, err)
		}
		if servers[i].Addr = gslb.FirstA(a); servers[i].Addr == "" {
			return nil, fmt.Errorf("A %s at %s: rcode %s, no address", servers[i].Name, server, dns.RcodeToString[a.Rcode])
		}
	}
	return gslb.EdgePeers(servers, port), nil
}

// hasNS reports whether resp's answer or authority section holds an NS record owned by zone.
func hasNS(resp *dns.Msg, zone string) bool {
	for _, rr := range append(slices.Clone(resp.Answer), resp.Ns...) {
		if ns, ok := rr.(*dns.NS); ok && strings.EqualFold(ns.Hdr.Name, dns.Fqdn(zone)) {
			return true
		}
	}
	return false
}

// zone reads the DNSZone ref names (in ns unless it says otherwise).
func (r *Reconciler) zone(ctx context.Context, ns string, ref dnsv1.ZoneReference) (*dnsv1.DNSZone, error) {
	key := ref.NamespacedName(ns)
	z := &dnsv1.DNSZone{}
	if err := r.Client.Get(ctx, key, z); err != nil {
		return nil, fmt.Errorf("DNSZone %s: %w", key, err)
	}
	return z, nil
}

// routingCapable reports whether the Gslb zone's provider serves the record sets of strategy t:
// weighted (WeightedRouting) or geo (GeoRouting).
func (r *Reconciler) routingCapable(ctx context.Context, g *dnsv1.Gslb, t dnsv1.GslbStrategyType) bool {
	var z dnsv1.DNSZone
	if err := r.Client.Get(ctx, g.Spec.ZoneRef.NamespacedName(g.Namespace), &z); err != nil || r.Providers == nil {
		return true // the DNSEndpoint reports the missing zone
	}
	res, err := r.Providers.Resolve(ctx, z.Namespace, z.Spec.ProviderRef.Name)
	if err != nil {
		return true
	}
	if t == dnsv1.GslbGeo {
		return res.Provider.Capabilities().GeoRouting
	}
	return res.Provider.Capabilities().WeightedRouting
}

// writeEndpoint creates or updates the DNSEndpoint the Gslb owns.
func (r *Reconciler) writeEndpoint(ctx context.Context, g *dnsv1.Gslb, eps []dnsv1.Endpoint) error {
	ep := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: g.Namespace, Name: endpointName(g)}}
	zr := g.Spec.ZoneRef
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, ep, func() error {
		ep.Spec.Endpoints = eps
		ep.Spec.ZoneRef = &zr
		return controllerutil.SetControllerReference(g, ep, r.Client.Scheme())
	})
	if err != nil {
		return fmt.Errorf("write DNSEndpoint %s: %w", ep.Name, err)
	}
	return nil
}

// writeEdge publishes, with spec.edge, this cluster's NS ns-<geotag>.<gslb zone> and its glue at
// the Gslb zone's apex in the edge zone, as a DNSRecord (so every cluster's NS set merges and
// heartbeats); without spec.edge, or on a witness, it removes that DNSRecord.
func (r *Reconciler) writeEdge(ctx context.Context, g *dnsv1.Gslb) error {
	rec := &dnsv1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: g.Namespace, Name: edgeName(g)}}
	if g.Spec.Edge == nil || r.NSAddress == "" || r.Witness {
		if err := r.Client.Delete(ctx, rec); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete DNSRecord %s: %w", rec.Name, err)
		}
		return nil
	}
	var z dnsv1.DNSZone
	if err := r.Client.Get(ctx, g.Spec.ZoneRef.NamespacedName(g.Namespace), &z); err != nil {
		return client.IgnoreNotFound(err)
	}
	nsName := "ns-" + strings.ToLower(r.GeoTag) + "." + z.Spec.Zone
	glueType := "A"
	if a, err := netip.ParseAddr(r.NSAddress); err == nil && a.Is6() {
		glueType = "AAAA"
	}
	er := g.Spec.Edge.ZoneRef
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, rec, func() error {
		rec.Spec.RootHost = z.Spec.Zone
		rec.Spec.ZoneRef = &er
		rec.Spec.Endpoints = []dnsv1.Endpoint{
			{DNSName: z.Spec.Zone, RecordType: "NS", Targets: dnsv1.Targets{nsName}},
			{DNSName: nsName, RecordType: glueType, Targets: dnsv1.Targets{r.NSAddress}},
		}
		return controllerutil.SetControllerReference(g, rec, r.Client.Scheme())
	})
	if err != nil {
		return fmt.Errorf("write DNSRecord %s: %w", rec.Name, err)
	}
	return nil
}

// endpointCondition returns the owned DNSEndpoint's Ready condition, nil when none yet.
func (r *Reconciler) endpointCondition(ctx context.Context, g *dnsv1.Gslb) *metav1.Condition {
	return r.endpointConditionOf(ctx, g, dnsv1.ConditionReady)
}

// endpointConditionOf returns the owned DNSEndpoint's condition typ, nil when none yet or when
// its status is not of its current generation.
func (r *Reconciler) endpointConditionOf(ctx context.Context, g *dnsv1.Gslb, typ string) *metav1.Condition {
	var ep dnsv1.DNSEndpoint
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: endpointName(g)}, &ep); err != nil {
		return nil
	}
	if ep.Status.ObservedGeneration != ep.Generation {
		return nil
	}
	return meta.FindStatusCondition(ep.Status.Conditions, typ)
}

// reconcileDelete deletes the DNSEndpoint and DNSRecord the Gslb owns (no garbage collector is
// assumed) and waits until they are gone (their own finalizers remove their records); a zero
// Result and no error let the lifecycle drop the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, g *dnsv1.Gslb) (ctrl.Result, error) {
	pending := false
	for _, obj := range []client.Object{
		&dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: g.Namespace, Name: endpointName(g)}},
		&dnsv1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: g.Namespace, Name: edgeName(g)}},
	} {
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return ctrl.Result{}, err
		}
		pending = true
		if obj.GetDeletionTimestamp().IsZero() {
			if err := r.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, fmt.Errorf("delete %s: %w", obj.GetName(), err)
			}
		}
	}
	if pending {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	r.forgetHealth(client.ObjectKeyFromObject(g))
	r.forgetMembers(client.ObjectKeyFromObject(g))
	if r.Metrics != nil {
		r.Metrics.HealthyRecords.DeletePartialMatch(prometheus.Labels{"namespace": g.Namespace, "gslb": g.Name})
	}
	return ctrl.Result{}, nil
}

// SetupWithManager wires the controller: Gslbs; the DNSEndpoints they own; and the Ingresses,
// Services and EndpointSlices of their namespace, so that a readiness change is published at
// once, not at the next --gslb-interval.
// decorate, when not nil, wraps the reconciler (the composition root's Config.Decorate).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, decorate func(reconcile.Reconciler) reconcile.Reconciler) error {
	r.ledger = &status.Ledger{Live: mgr.GetAPIReader()}
	rec := requeue.Decorate(r, decorate)
	b := ctrl.NewControllerManagedBy(mgr).
		For(&dnsv1.Gslb{}, builder.WithPredicates(predicates.SpecOrDeletion())).
		Owns(&dnsv1.DNSEndpoint{}).
		Watches(&networkingv1.Ingress{}, handler.EnqueueRequestsFromMapFunc(r.gslbsOf(string(dnsv1.ResourceKindIngress)))).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.gslbsOf(string(dnsv1.ResourceKindService)))).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(r.gslbsOf("EndpointSlice"))).
		Named("gslb")
	if r.Scheduler != nil {
		b = b.WatchesRawSource(probeSource(r.Scheduler)) // a probe verdict changed
	}
	return requeue.Complete(b, rec) // the peer re-query every --gslb-interval counts as a success
}

// gslbsOf maps an event on a kind to the Gslbs of its namespace it may concern: those referring
// to it by name (a Service, or the Service of an EndpointSlice), and, for anything else, every
// Gslb of the namespace over an Ingress (whose backends are known only by reading it).
func (r *Reconciler) gslbsOf(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		name := o.GetName()
		if kind == "EndpointSlice" {
			name = o.GetLabels()[discoveryv1.LabelServiceName]
			if name == "" {
				return nil
			}
		}
		var list dnsv1.GslbList
		if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
			log.FromContext(ctx).Error(err, "listing Gslbs for a watched object failed; the next event or resync catches up",
				"kind", kind, "namespace", o.GetNamespace(), "name", o.GetName())
			return nil
		}
		var out []reconcile.Request
		for _, g := range list.Items {
			ref := g.Spec.ResourceRef
			if ref.Kind == dnsv1.ResourceKindIngress || (string(ref.Kind) == kind && ref.Name == name) || (kind == "EndpointSlice" && ref.Kind == dnsv1.ResourceKindService && ref.Name == name) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
		return out
	}
}
