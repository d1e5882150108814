package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	gslbcontroller "github.com/dnsplane/dnsplane/controllers/gslb"
	"github.com/dnsplane/dnsplane/internal/version"
	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/leaderlabel"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/scraper"
)

// Controller names, as in logs and controller-runtime's metrics (controller label), and as
// passed to Config.Decorate.
const (
	ControllerDNSZone     = "dnszone"
	ControllerDNSEndpoint = "dnsendpoint"
	ControllerDNSRecord   = "dnsrecord"
	ControllerGslb        = "gslb"
)

// Config is everything New needs: the manager's flags and environment (docs/api.md lists the
// flags), validated by the caller, and a few settings only tests use. Durations are
// time.Duration values and must be positive.
type Config struct {
	// Rest reaches the API server; its QPS and Burst are the caller's (--kube-api-qps/-burst).
	Rest *rest.Config
	// MetricsAddr and ProbeAddr are --metrics-bind-address and --health-probe-bind-address;
	// "0" disables them.
	MetricsAddr, ProbeAddr string
	// MetricsSecure is --metrics-secure: /metrics over HTTPS behind controller-runtime's
	// authentication and authorisation filter. A loopback MetricsAddr (IsLoopbackAddr) always
	// serves plain HTTP with no token, whatever MetricsSecure says (metricsOptions).
	MetricsSecure bool
	// PprofAddr is --pprof-bind-address, a loopback host:port for /debug/pprof/ (validated by
	// the caller); "" or "0" disables it (the default).
	PprofAddr string
	// LeaderElect is --leader-elect.
	LeaderElect bool
	// PodName and PodNamespace (downward API, config/manager): with LeaderElect, the leader's
	// pod is labelled for the dns Service (pkg/leaderlabel). Empty = no label. PodNamespace is
	// also the leader election Lease's namespace (empty = controller-runtime's default, the
	// in-cluster service account's namespace), watched or not.
	PodName, PodNamespace string
	// WatchNamespaces is --watch-namespaces: the only namespaces the manager's cache lists and
	// watches (controller-runtime cache.Options.DefaultNamespaces), with nothing cluster-scoped
	// read, so that Roles in those namespaces suffice. Empty = every namespace. It needs
	// OwnerID: New returns an error without one.
	WatchNamespaces []string

	// ZoneDir holds the embedded server's zone data (<--local-dir>/zones).
	ZoneDir string
	// DNSAddr is --local-dns-addr, the embedded server's host:port (UDP and TCP); port 0 picks
	// a free one (App.Server.Addr).
	DNSAddr string
	// DNSTransferFrom is --local-dns-axfr-from: client prefixes, besides loopback, that may AXFR
	// from the embedded server.
	DNSTransferFrom []netip.Prefix
	// NameServerAddr is the glue address of the embedded server's NS records; the zero value =
	// the store's default.
	NameServerAddr netip.Addr

	// OwnerID is --owner-id; empty = the UID of the kube-system namespace.
	OwnerID string
	// HeartbeatInterval and HeartbeatThreshold are --heartbeat-interval and
	// --heartbeat-threshold.
	HeartbeatInterval, HeartbeatThreshold time.Duration
	// SOAPollInterval is --soa-poll-interval.
	SOAPollInterval time.Duration
	// ZoneResync is --zone-resync-interval: the DNSZone sync period and the zone writers'
	// re-read age.
	ZoneResync time.Duration
	// ScrapeInterval is --scrape-interval.
	ScrapeInterval time.Duration
	// DNSResolver is --dns-resolver (host:port); empty = the zones' own name servers.
	DNSResolver string

	// GeoTag, Peers, GslbInterval, GslbPeerTimeout, GslbPeerPort and GslbNSAddress are the
	// --geo-tag, --ext-gslb-clusters, --gslb-interval, --gslb-peer-timeout, --gslb-peer-port and
	// --gslb-ns-address flags.
	GeoTag          string
	Peers           []gslb.Peer
	GslbInterval    time.Duration
	GslbPeerTimeout time.Duration
	GslbPeerPort    int
	GslbNSAddress   string
	// LBResolver resolves hostname-only load balancers for Gslb (net.DefaultResolver in the
	// manager); nil = they count as no address.
	LBResolver gslbcontroller.Resolver

	// Registerer receives every dnsplane metric; nil = controller-runtime's registry (served
	// on /metrics). Tests that start several managers in one process give each its own.
	Registerer prometheus.Registerer
	// Log is the root logger; the zero value = ctrl.Log.
	Log logr.Logger

	// Test settings; the manager leaves them zero.

	// ZoneControllerName renames the DNSZone controller (default ControllerDNSZone), for tests
	// that read its controller_runtime_* metrics apart from other managers'.
	ZoneControllerName string
	// SkipNameValidation lets several managers in one process use the same controller names.
	SkipNameValidation bool
	// LocalFaultHook, when set, injects failures into the local provider (local.Options).
	LocalFaultHook local.FaultHook
	// Decorate, when set, wraps each controller's reconciler; name is one of the Controller*
	// constants (the DNSZone controller's is ControllerDNSZone whatever its ZoneControllerName).
	Decorate func(name string, r reconcile.Reconciler) reconcile.Reconciler
}

// App is the built manager and the parts tests look at. Its fields are read-only.
type App struct {
	Manager ctrl.Manager
	// OwnerID is the resolved owner ID.
	OwnerID string
	// Store and Server are the embedded zone store and authoritative DNS server.
	Store  *dnsserver.Store
	Server *dnsserver.Server
	// Local is the counted local provider (the factory guards it like every other provider).
	Local *counting.Provider
	// Providers resolves provider Secrets.
	Providers *factory.Factory
	// Requests holds dnsplane_provider_requests_total{provider,operation,code}.
	Requests *counting.Metrics
	// Scraper is the NS scraper.
	Scraper *scraper.Scraper

	log logr.Logger
}

// NewScheme returns the scheme of every kind the manager reads: client-go's and dnsplane's.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(dnsv1.AddToScheme(s))
	return s
}

// New builds the manager and everything it runs, not yet started; ctx bounds the zone writers
// and the heartbeat checks, and must live as long as Run's. The embedded DNS server is already
// listening when New returns. Errors name the part that failed, wrapped.
func New(ctx context.Context, cfg Config) (*App, error) {
	if cfg.Log.GetSink() == nil {
		cfg.Log = ctrl.Log
	}
	if cfg.Registerer == nil {
		cfg.Registerer = ctrlmetrics.Registry
	}
	scheme := NewScheme()
	if len(cfg.WatchNamespaces) > 0 && cfg.OwnerID == "" {
		return nil, errors.New("--watch-namespaces needs --owner-id: the default owner ID is the UID of the kube-system namespace, which a manager limited to namespaces may not read")
	}
	ownerID, err := resolveOwnerID(ctx, cfg.Rest, scheme, cfg.OwnerID)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg.Rest, managerOptions(cfg, scheme))
	if err != nil {
		return nil, fmt.Errorf("new manager: %w", err)
	}
	a := &App{Manager: mgr, OwnerID: ownerID, log: cfg.Log.WithName("setup")}
	for _, step := range []func(context.Context, Config) error{
		a.addBuildInfo, a.addDNSServer, a.addLeaderLabel, a.addProviders, a.addControllers, a.addProbes,
	} {
		if err := step(ctx, cfg); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// managerOptions returns the controller-runtime manager's options of cfg.
func managerOptions(cfg Config, scheme *runtime.Scheme) ctrl.Options {
	opts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOptions(cfg.MetricsAddr, cfg.MetricsSecure),
		HealthProbeBindAddress:  cfg.ProbeAddr,
		PprofBindAddress:        cfg.PprofAddr,
		LeaderElection:          cfg.LeaderElect,
		LeaderElectionID:        "manager.dnsplane.io",
		LeaderElectionNamespace: cfg.PodNamespace,
		// Secrets are read by name when needed (factory.Factory), never listed, watched or
		// cached: the manager holds only get on them (docs/design.md, "Provider Secrets").
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		// The cache keeps objects without managedFields: a server-side-applied DNSEndpoint's
		// managedFields name every endpoint field again, a second copy of each endpoint that no
		// controller reads (docs/design.md, "Memory").
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields(), DefaultNamespaces: namespaces(cfg.WatchNamespaces)},
	}
	if cfg.SkipNameValidation {
		opts.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	}
	return opts
}

// namespaces returns the cache's DefaultNamespaces of --watch-namespaces: nil (every namespace)
// for none.
func namespaces(names []string) map[string]cache.Config {
	if len(names) == 0 {
		return nil
	}
	m := make(map[string]cache.Config, len(names))
	for _, n := range names {
		m[n] = cache.Config{}
	}
	return m
}

// The metrics filter authenticates a caller's bearer token with a TokenReview and authorises
// "get" on the /metrics path with a SubjectAccessReview (Kubebuilder's scaffold;
// config/rbac/metrics_reader_role.yaml grants that path to scrapers).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsOptions returns the /metrics server's options of --metrics-bind-address addr and
// --metrics-secure: "0" disables it; a loopback host serves plain HTTP with no token whatever
// secure says (make run, the tests and the benchmarks); any other host serves HTTPS (a
// self-signed certificate controller-runtime generates) behind
// filters.WithAuthenticationAndAuthorization when secure, else plain HTTP.
func metricsOptions(addr string, secure bool) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr}
	if addr == "0" || !secure || IsLoopbackAddr(addr) {
		return o
	}
	o.SecureServing = true
	o.FilterProvider = filters.WithAuthenticationAndAuthorization
	return o
}

// IsLoopbackAddr reports whether hostport's host is a loopback IP (127.0.0.0/8, ::1) or
// "localhost". An empty host (every address) or a malformed hostport is not.
func IsLoopbackAddr(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Run starts the manager and blocks until ctx ends or the manager fails.
func (a *App) Run(ctx context.Context) error {
	a.log.Info("starting manager", "ownerID", a.OwnerID, "dns", a.Server.Addr())
	return a.Manager.Start(ctx)
}

// addBuildInfo registers dnsplane_build_info{version,revision,goversion} (internal/version) on
// cfg.Registerer.
func (a *App) addBuildInfo(_ context.Context, cfg Config) error {
	_, err := version.NewMetrics(cfg.Registerer)
	return err
}

// addDNSServer loads the zone store from cfg.ZoneDir and starts listening on cfg.DNSAddr.
func (a *App) addDNSServer(_ context.Context, cfg Config) error {
	log := cfg.Log.WithName("dnsserver")
	var glue []netip.Addr
	if cfg.NameServerAddr.IsValid() {
		glue = []netip.Addr{cfg.NameServerAddr}
	}
	a.Store = dnsserver.NewStore(dnsserver.StoreOptions{Dir: cfg.ZoneDir, NameServerAddrs: glue, Logger: log})
	if err := a.Store.Load(); err != nil {
		return fmt.Errorf("load zones from %s: %w", cfg.ZoneDir, err)
	}
	metrics, err := dnsserver.NewMetrics(cfg.Registerer)
	if err != nil {
		return err
	}
	srv, err := dnsserver.NewServer(a.Store, dnsserver.ServerOptions{Addr: cfg.DNSAddr, Logger: log, Metrics: metrics, TransferFrom: cfg.DNSTransferFrom})
	if err != nil {
		return fmt.Errorf("embedded DNS server: %w", err)
	}
	if err := srv.Listen(); err != nil {
		return fmt.Errorf("embedded DNS server on %s: %w", cfg.DNSAddr, err)
	}
	a.Server = srv
	return a.Manager.Add(srv)
}

// addLeaderLabel labels the leader's pod for the dns Service, with leader election in a pod:
// only the leader's zone store is current (pkg/leaderlabel).
func (a *App) addLeaderLabel(ctx context.Context, cfg Config) error {
	if !cfg.LeaderElect || cfg.PodName == "" || cfg.PodNamespace == "" {
		return nil
	}
	direct, err := client.New(cfg.Rest, client.Options{Scheme: a.Manager.GetScheme()})
	if err != nil {
		return fmt.Errorf("leader label client: %w", err)
	}
	labeler := &leaderlabel.Labeler{Client: direct, Namespace: cfg.PodNamespace, Pod: cfg.PodName, Log: cfg.Log.WithName("leaderlabel")}
	if err := labeler.Clear(ctx); err != nil {
		return fmt.Errorf("clear this pod's leader label: %w", err)
	}
	return a.Manager.Add(labeler)
}

// addProviders builds the provider factory, its request counter and the scraper.
func (a *App) addProviders(_ context.Context, cfg Config) error {
	requests, err := counting.NewMetrics(cfg.Registerer)
	if err != nil {
		return err
	}
	a.Requests = requests
	a.Local = counting.Wrap(local.New(a.Store, local.Options{FaultHook: cfg.LocalFaultHook}), "local", a.Requests)
	a.Providers = &factory.Factory{
		Client:    a.Manager.GetAPIReader(),            // Secrets by name, never cached (get only)
		Local:     guard.New(a.Local, guard.Options{}), // no rate limit, no zone-list cache: a local store
		LocalAddr: a.Server.Addr(),
		Resolver:  cfg.DNSResolver,
		Requests:  a.Requests,
	}
	scrapeMetrics, err := scraper.NewMetrics(cfg.Registerer)
	if err != nil {
		return err
	}
	a.Scraper = scraper.New(scraper.Options{Interval: cfg.ScrapeInterval, Metrics: scrapeMetrics, Log: cfg.Log.WithName("scraper")})
	return a.Manager.Add(a.Scraper)
}

func (a *App) addProbes(context.Context, Config) error {
	if err := a.Manager.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("healthz: %w", err)
	}
	if err := a.Manager.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("readyz: %w", err)
	}
	return nil
}

// decorator returns cfg.Decorate for the controller name, or nil.
func decorator(cfg Config, name string) func(reconcile.Reconciler) reconcile.Reconciler {
	if cfg.Decorate == nil {
		return nil
	}
	return func(r reconcile.Reconciler) reconcile.Reconciler { return cfg.Decorate(name, r) }
}

// The default owner ID is kube-system's UID: get on that one namespace, nothing else cluster-scoped
// (a manager with --watch-namespaces needs --owner-id and never reads it).
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get,resourceNames=kube-system

// resolveOwnerID returns flag, or else the UID of the kube-system namespace, waiting up to
// about 30 s for kube-apiserver to create it; a Forbidden answer fails at once.
func resolveOwnerID(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return "", fmt.Errorf("default --owner-id: %w", err)
	}
	var ns corev1.Namespace
	// kube-apiserver creates kube-system shortly after it starts serving.
	for i := 0; ; i++ {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = c.Get(cctx, client.ObjectKey{Name: "kube-system"}, &ns)
		cancel()
		if err == nil {
			return string(ns.UID), nil
		}
		if apierrors.IsForbidden(err) { // RBAC does not change by waiting: say what to fix
			return "", fmt.Errorf("default --owner-id: read namespace kube-system (grant get on namespaces/kube-system, as config/rbac/role.yaml does, or pass --owner-id): %w", err)
		}
		if i == 30 || ctx.Err() != nil {
			return "", fmt.Errorf("default --owner-id: read namespace kube-system: %w", err)
		}
		time.Sleep(time.Second)
	}
}
