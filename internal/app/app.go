package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
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
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnsendpoint"
	"github.com/dnsplane/dnsplane/controllers/dnsrecord"
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	dynupdatecontroller "github.com/dnsplane/dnsplane/controllers/dynupdate"
	gluecontroller "github.com/dnsplane/dnsplane/controllers/glue"
	gslbcontroller "github.com/dnsplane/dnsplane/controllers/gslb"
	"github.com/dnsplane/dnsplane/internal/version"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/dynupdate"
	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/provider/webhook"
	"github.com/dnsplane/dnsplane/pkg/scraper"
	"github.com/dnsplane/dnsplane/pkg/served"
	"github.com/dnsplane/dnsplane/pkg/source"
	"github.com/dnsplane/dnsplane/pkg/xfr"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
	"github.com/dnsplane/dnsplane/pkg/zonestore"
)

// Controller names, as in logs and controller-runtime's metrics (controller label), and as
// passed to Config.Decorate.
const (
	ControllerDNSZone     = "dnszone"
	ControllerDNSEndpoint = "dnsendpoint"
	ControllerDNSRecord   = "dnsrecord"
	ControllerGslb        = "gslb"
	// ControllerGlue follows the dns Service (Config.DNSService) with the zones' glue.
	ControllerGlue = "glue"
	// ControllerDynamicUpdateKeys reads the DNSZones' dynamic-update keys on every replica;
	// ControllerDynamicUpdateExpiry deletes expired dynamic-update DNSEndpoints.
	ControllerDynamicUpdateKeys   = "dynupdate-keys"
	ControllerDynamicUpdateExpiry = "dynupdate-expiry"
	// ControllerDNSSECSigner gives every replica's embedded server the signing policies of the
	// DNSZones with spec.dnssec (controllers/signing).
	ControllerDNSSECSigner = "dnssec-signer"
)

// DefaultConflictRetry is Config.ConflictRetry's default: a DNSEndpoint or DNSRecord whose
// names another owner holds is planned again every 30 s against a zone view at most 30 s old, so
// that a holder deleted in another cluster hands its names over within about 30 s (two zone
// reads a minute per zone with conflicts, however many objects wait).
const DefaultConflictRetry = 30 * time.Second

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
	// LeaderElectionNamespace is --leader-election-namespace, the leader election Lease's
	// namespace (Main defaults it to POD_NAMESPACE); empty = controller-runtime's default,
	// the in-cluster service account's namespace.
	LeaderElectionNamespace string
	// WatchNamespaces is --watch-namespaces: the only namespaces the manager's cache lists and
	// watches (controller-runtime cache.Options.DefaultNamespaces), with nothing cluster-scoped
	// read, so that Roles in those namespaces suffice. Empty = every namespace. It needs
	// OwnerID: New returns an error without one.
	WatchNamespaces []string

	// ZoneStoreNamespace, when set, keeps the embedded server's zones in ConfigMaps of that
	// namespace (pkg/zonestore), written by the leader and watched and served by every replica;
	// readiness then waits for them to be loaded. Empty = ZoneDir (one replica: make run).
	ZoneStoreNamespace string
	// ZoneDir holds the embedded server's zone data (<--local-dir>/zones) without
	// ZoneStoreNamespace.
	ZoneDir string
	// DNSAddr is --local-dns-addr, the embedded server's host:port (UDP and TCP); port 0 picks
	// a free one (App.Server.Addr).
	DNSAddr string
	// DNSUDPSockets is --local-dns-udp-sockets (dnsserver.ServerOptions.UDPSockets); 0 = one
	// per core.
	DNSUDPSockets int
	// DNSDrain is --local-dns-drain (dnsserver.ServerOptions.Drain): how long the embedded
	// server answers after the manager is told to stop, with its readiness check failing.
	DNSDrain time.Duration
	// GeoIPDatabase is --geoip-database: the MaxMind-format mmdb (GeoLite2/GeoIP2 Country or
	// City, DB-IP's) that locates clients for geo Gslbs, reloaded when the file changes; "" =
	// none (only CIDR regions and the default match). GeoIPReload is how often the file is
	// checked; 0 = geo.DefaultReloadInterval.
	GeoIPDatabase string
	GeoIPReload   time.Duration
	// NameServerAddr is the glue address of the embedded server's NS records; the zero value =
	// none. DNSService, when set, replaces it.
	NameServerAddr netip.Addr
	// DNSService is --local-dns-service: the name of the dns Service in ZoneStoreNamespace (else
	// LeaderElectionNamespace), whose addresses (its load balancer's ingress IPs, else its
	// cluster IPs) are the glue of ns1.<zone> in the embedded server's zones, so that a zone
	// names how every replica is reached (docs/design.md). The glue controller watches it and
	// rewrites every zone's glue when they change. Empty = NameServerAddr.
	DNSService string
	// AllowTransfer is --local-allow-transfer: networks besides loopback that may AXFR and IXFR
	// the embedded zones.
	AllowTransfer []netip.Prefix
	// NotifyTargets is --local-notify: host:port of the secondaries sent a NOTIFY after every
	// zone change (xfr.Notifier, on every replica).
	NotifyTargets []string
	// TSIG is --local-tsig-key: transfers from beyond loopback must be signed with it, and it
	// signs every NOTIFY; nil = none.
	TSIG *dnswire.TSIGKey

	// OwnerID is --owner-id; empty = the UID of the kube-system namespace.
	OwnerID string
	// Policy is --policy, the DNSEndpoints' default (plan.Policy); "" = sync.
	Policy plan.Policy
	// ExternalDNS is --txt-prefix, --txt-suffix, --txt-wildcard-replacement and
	// --adopt-external-dns-owner, for DNSEndpoints (plan.ExternalDNS).
	ExternalDNS plan.ExternalDNS
	// HeartbeatInterval and HeartbeatThreshold are --heartbeat-interval and
	// --heartbeat-threshold.
	HeartbeatInterval, HeartbeatThreshold time.Duration
	// SOAPollInterval is --soa-poll-interval.
	SOAPollInterval time.Duration
	// ConflictRetry is how often a DNSEndpoint or DNSRecord whose names another owner holds is
	// planned again against a zone view at most that old, a time.Duration; 0 is
	// DefaultConflictRetry (docs/api.md, "Ownership").
	ConflictRetry time.Duration
	// WriteLinger is --write-linger: zonewriter.Options.Linger, a time.Duration; 0 = none.
	WriteLinger time.Duration
	// ZoneResync is --zone-resync-interval: the DNSZone sync period and the zone writers'
	// re-read age.
	ZoneResync time.Duration
	// ScrapeInterval is --scrape-interval.
	ScrapeInterval time.Duration
	// DNSResolver is --dns-resolver (host:port); empty = the zones' own name servers.
	DNSResolver string
	// ProviderRequestTimeout is --provider-request-timeout: the bound of one HTTP request of
	// the PowerDNS and cloud providers (factory.Factory.RequestTimeout); 0 = 30 s.
	ProviderRequestTimeout time.Duration
	// ServedInterval and ServedStaleAfter are --served-check-interval and
	// --served-stale-after (served.Options.Interval, StaleAfter); 0 = the package defaults.
	ServedInterval   time.Duration
	ServedStaleAfter time.Duration
	// RolloverTTLs overrides the TTLs key rollovers wait out (dnszone.Reconciler.RolloverTTLs;
	// zero: the defaults). Tests set it; there is no flag.
	RolloverTTLs dnszone.RolloverTTLs
	// ServedZoneInterval is --served-zone-check-interval (dnszone.Reconciler.ServedCheckInterval).
	ServedZoneInterval time.Duration
	// DynamicUpdateTTL, DynamicUpdateRate and DynamicUpdateBurst are --dynamic-update-ttl,
	// --dynamic-update-rate and --dynamic-update-burst (controllers/dynupdate.Applier's TTL,
	// Rate and Burst); zero = its defaults.
	DynamicUpdateTTL   time.Duration
	DynamicUpdateRate  float64
	DynamicUpdateBurst int

	// GeoTag, Peers, GslbInterval, GslbPeerTimeout, GslbPeerPort and GslbNSAddress are the
	// --geo-tag, --ext-gslb-clusters, --gslb-interval, --gslb-peer-timeout, --gslb-peer-port and
	// --gslb-ns-address flags.
	GeoTag          string
	Peers           []gslb.Peer
	GslbInterval    time.Duration
	GslbPeerTimeout time.Duration
	GslbPeerPort    int
	GslbNSAddress   string
	// GslbSource is --gslb-source-address: where peer queries and health probes leave from.
	GslbSource gslb.SourceAddrs
	// GslbWitnesses is --ext-gslb-witnesses: the witnesses every Gslb's membership counts.
	GslbWitnesses []gslb.Peer
	// GslbFlapDwell is the Gslb flap damping's dwell (health.Judge.FlapDwell): 0 is the
	// default, a negative one turns damping off (tests whose targets flap on purpose).
	GslbFlapDwell time.Duration
	// GslbWitness is --gslb-witness: the Gslb controller runs as a witness (no targets of its
	// own, no edge NS record, no <host> answers; its verdict records only).
	GslbWitness bool
	// GslbClock, when set, is the Gslb health checks' clock (probe schedule, verdict times and
	// freshness); nil is the real clock (tests pass a fake one).
	GslbClock clock.Clock
	// LBResolver resolves hostname-only load balancers for Gslb (net.DefaultResolver in the
	// manager); nil = they count as no address.
	LBResolver gslbcontroller.Resolver

	// Sources are the --source flags and their filters (pkg/source); the zero value runs no
	// source. SourcePollInterval is how often a source whose CRD is not installed asks
	// discovery again (default controllers/source.DefaultInterval).
	Sources            source.Config
	SourcePollInterval time.Duration

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
	// ZoneStoreMaxShardBytes bounds a zone object's shard (zonestore.Options.MaxShardBytes);
	// zero = the default.
	ZoneStoreMaxShardBytes int
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
	Store  *zonedb.Store
	Server *dnsserver.Server
	// Local is the counted local provider (the factory guards it like every other provider).
	Local *counting.Provider
	// Providers resolves provider Secrets.
	Providers *factory.Factory
	// Requests holds dnsplane_provider_requests_total{provider,operation,code}.
	Requests *counting.Metrics
	// Scraper is the NS scraper.
	Scraper *scraper.Scraper
	// Served is the Served check of DNSEndpoints and DNSRecords (docs/served.md).
	Served *served.Tracker
	// ZoneSync feeds Store from the zone objects with Config.ZoneStoreNamespace; nil without.
	ZoneSync *zonestore.Syncer
	// ZoneObjects is the zone objects' writer with Config.ZoneStoreNamespace; nil without.
	ZoneObjects *zonestore.Objects
	// Updates answers the embedded server's RFC 2136 UPDATEs; Keyring holds the
	// dynamic-update keys it verifies them with.
	Updates *dynupdatecontroller.Applier
	Keyring *dynupdate.Keyring

	local *local.Provider // Local's provider, for the glue controller
	// fence, with --leader-elect, refuses provider writes once this replica's Lease renewal is
	// older than the renew deadline (zonewriter.Options.Fence); nil without leader election.
	fence *leaseFence
	log   logr.Logger
}

// NewScheme returns the scheme of every kind the manager reads: client-go's, dnsplane's and the
// Gateway API's (v1; external-dns's DNSEndpoint is read as unstructured).
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(dnsv1.AddToScheme(s))
	utilruntime.Must(gwv1.Install(s)) // the Gateway API's kinds, for the gateway-* sources
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
	opts := managerOptions(cfg, scheme)
	var fence *leaseFence
	if cfg.LeaderElect {
		if fence, err = newLeaseFence(ctx, cfg.Rest, scheme, cfg.LeaderElectionNamespace); err != nil {
			return nil, err
		}
		opts.LeaderElectionResourceLockInterface = fence
	}
	mgr, err := ctrl.NewManager(cfg.Rest, opts)
	if err != nil {
		return nil, fmt.Errorf("new manager: %w", err)
	}
	a := &App{Manager: mgr, OwnerID: ownerID, log: cfg.Log.WithName("setup"), fence: fence}
	for _, step := range []func(context.Context, Config) error{
		a.addBuildInfo, a.addDNSServer, a.addProviders, a.addControllers, a.addGlue, a.addSources, a.addProbes,
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
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: cfg.LeaderElectionNamespace,
		LeaseDuration:           ptr.To(leaseDuration),
		RenewDeadline:           ptr.To(renewDeadline),
		RetryPeriod:             ptr.To(retryPeriod),
		// A leader that stops (SIGTERM, a rollout) gives the Lease up once its controllers and
		// the embedded server have stopped, so a follower leads within its retry period (2 s)
		// instead of waiting out the 15 s lease. controller-runtime's condition holds: nothing
		// writes after Manager.Start returns (the zone writers end with ctx, before the
		// controllers stop), and main exits then (docs/design.md, "Leaving the dns Service").
		LeaderElectionReleaseOnCancel: true,
		// Secrets are read by name when needed (factory.Factory), never listed, watched or
		// cached: the manager holds only get on them (docs/design.md, "Provider Secrets").
		// Unstructured objects (external-dns's DNSEndpoints, --source=crd) are read from the
		// cache that their watch fills, like every typed kind.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}, Unstructured: true}},
		// The cache keeps objects without managedFields: a server-side-applied DNSEndpoint's
		// managedFields name every endpoint field again, a second copy of each endpoint that no
		// controller reads (docs/design.md, "Memory and goroutines").
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields(), DefaultNamespaces: namespaces(cfg.WatchNamespaces)},
		// Its waits for the informers react within 5 ms instead of 100 (syncwait.go).
		NewCache: newSyncWaitCache,
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

// addDNSServer builds the zone store (over the zone objects with cfg.ZoneStoreNamespace, else
// loaded from cfg.ZoneDir), starts listening on cfg.DNSAddr, and adds the NOTIFY sender of
// cfg.NotifyTargets.
func (a *App) addDNSServer(ctx context.Context, cfg Config) error {
	log := cfg.Log.WithName("dnsserver")
	glue, err := a.glue(ctx, cfg)
	if err != nil {
		return err
	}
	opts := zonedb.StoreOptions{Dir: cfg.ZoneDir, NameServerAddrs: glue, Logger: log}
	if cfg.ZoneStoreNamespace != "" {
		if opts.Backend, err = a.zoneObjects(cfg); err != nil {
			return err
		}
	}
	a.Store = zonedb.NewStore(opts)
	if err := a.Store.Load(); err != nil {
		return fmt.Errorf("load zones from %s: %w", cfg.ZoneDir, err)
	}
	if a.ZoneObjects != nil {
		a.ZoneSync = a.ZoneObjects.Syncer(a.Store)
		if err := a.Manager.Add(a.ZoneSync); err != nil {
			return fmt.Errorf("zone store: %w", err)
		}
	}
	metrics, err := dnsserver.NewMetrics(cfg.Registerer)
	if err != nil {
		return err
	}
	if err := a.addUpdates(cfg); err != nil {
		return err
	}
	sopts := dnsserver.ServerOptions{Addr: cfg.DNSAddr, UDPSockets: cfg.DNSUDPSockets, Drain: cfg.DNSDrain, Logger: log, Metrics: metrics,
		AllowTransfer: cfg.AllowTransfer, TSIG: cfg.TSIG, Updates: a.Updates}
	if cfg.GeoIPDatabase != "" {
		if sopts.Geo, err = a.geoDatabase(cfg); err != nil {
			return err
		}
	}
	srv, err := dnsserver.NewServer(a.Store, sopts)
	if err != nil {
		return fmt.Errorf("embedded DNS server: %w", err)
	}
	if err := srv.Listen(); err != nil {
		return fmt.Errorf("embedded DNS server on %s: %w", cfg.DNSAddr, err)
	}
	a.Server = srv
	if err := a.Manager.Add(srv); err != nil {
		return fmt.Errorf("embedded DNS server: %w", err)
	}
	notifier := xfr.NewNotifier(a.Store, xfr.NotifierOptions{Targets: cfg.NotifyTargets, Metrics: metrics.XFR, Logger: log.WithName("notify"), TSIG: cfg.TSIG})
	if err := a.Manager.Add(notifier); err != nil {
		return fmt.Errorf("NOTIFY sender: %w", err)
	}
	return nil
}

// geoDatabase loads --geoip-database and adds its reloader to the manager (every replica: each
// serves). A file that does not load yet is logged and does not stop the manager: geo answers
// then match CIDR regions and the default until a good file arrives (docs/design.md, "Geo
// answers").
func (a *App) geoDatabase(cfg Config) (*geo.DB, error) {
	log := cfg.Log.WithName("geoip")
	db := &geo.DB{Path: cfg.GeoIPDatabase, Interval: cfg.GeoIPReload, Logger: log}
	if err := db.Load(); err != nil {
		log.Error(err, "the geoip database did not load; geo answers use CIDR regions and the default until it does", "path", cfg.GeoIPDatabase)
	}
	if err := a.Manager.Add(geoReloader{db}); err != nil {
		return nil, fmt.Errorf("geoip database reloader: %w", err)
	}
	return db, nil
}

// geoReloader runs a geo.DB's Run on every replica (controller-runtime Runnable).
type geoReloader struct{ db *geo.DB }

func (g geoReloader) Start(ctx context.Context) error { return g.db.Run(ctx) }

// NeedLeaderElection: every replica serves geo answers, so every replica reloads.
func (geoReloader) NeedLeaderElection() bool { return false }

// addUpdates builds the dynamic-update applier (the embedded server's UpdateHandler) over a
// new keyring, run on every replica; addControllers adds the keys and expiry controllers.
func (a *App) addUpdates(cfg Config) error {
	m, err := dynupdatecontroller.NewMetrics(cfg.Registerer)
	if err != nil {
		return err
	}
	a.Keyring = dynupdate.NewKeyring()
	a.Updates = &dynupdatecontroller.Applier{
		Client: a.Manager.GetClient(), APIReader: a.Manager.GetAPIReader(), Cache: a.Manager.GetCache(),
		Keyring: a.Keyring, Recorder: a.Manager.GetEventRecorderFor("dynupdate"), Metrics: m,
		Log: cfg.Log.WithName("dynupdate"), TTL: cfg.DynamicUpdateTTL, Rate: rate.Limit(cfg.DynamicUpdateRate), Burst: cfg.DynamicUpdateBurst,
	}
	for _, p := range cfg.Peers { // UPDATEs of Gslb zones are relayed to the other clusters
		a.Updates.Peers = append(a.Updates.Peers, p.Addr)
	}
	if err := a.Manager.Add(a.Updates); err != nil {
		return fmt.Errorf("dynamic updates: %w", err)
	}
	return nil
}

// The zone store's objects: ConfigMaps of the manager's namespace, written by the leader and
// watched by every replica (pkg/zonestore).
// +kubebuilder:rbac:groups="",namespace=system,resources=configmaps,verbs=get;list;watch;create;update;delete

// zoneObjects builds the zone objects' Backend (a.ZoneObjects) in cfg.ZoneStoreNamespace.
func (a *App) zoneObjects(cfg Config) (*zonestore.Objects, error) {
	cs, err := kubernetes.NewForConfig(cfg.Rest)
	if err != nil {
		return nil, fmt.Errorf("zone store client: %w", err)
	}
	m, err := zonestore.NewMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	a.ZoneObjects = zonestore.New(zonestore.Options{Client: cs, Namespace: cfg.ZoneStoreNamespace, Metrics: m,
		MaxShardBytes: cfg.ZoneStoreMaxShardBytes, Log: cfg.Log.WithName("zonestore")})
	return a.ZoneObjects, nil
}

// glue returns the glue addresses of new zones' ns1 when the manager starts: the dns Service's
// (cfg.DNSService, glue.ServiceAddrs: its load balancer's ingress IPs, else its cluster IPs),
// else cfg.NameServerAddr, else none. With cfg.DNSService the glue controller (addGlue) then
// follows the Service's changes. Errors: the Service cannot be read or has no IP address.
func (a *App) glue(ctx context.Context, cfg Config) ([]netip.Addr, error) {
	if cfg.DNSService == "" {
		if cfg.NameServerAddr.IsValid() {
			return []netip.Addr{cfg.NameServerAddr}, nil
		}
		return nil, nil
	}
	c, err := client.New(cfg.Rest, client.Options{Scheme: a.Manager.GetScheme()})
	if err != nil {
		return nil, fmt.Errorf("--local-dns-service client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	key := dnsServiceKey(cfg)
	var svc corev1.Service
	if err := c.Get(ctx, key, &svc); err != nil {
		return nil, fmt.Errorf("--local-dns-service %s: %w", key, err)
	}
	addrs := gluecontroller.ServiceAddrs(&svc).IPs
	if len(addrs) == 0 {
		return nil, fmt.Errorf("--local-dns-service %s has no IP address (a headless Service?)", key)
	}
	return addrs, nil
}

// dnsServiceKey names the dns Service: cfg.DNSService in the zone store's namespace, else the
// leader election's (--local-dns-service's help: "in the leader election namespace").
func dnsServiceKey(cfg Config) client.ObjectKey {
	return client.ObjectKey{Namespace: cmp.Or(cfg.ZoneStoreNamespace, cfg.LeaderElectionNamespace), Name: cfg.DNSService}
}

// addGlue adds, with cfg.DNSService, the glue controller: it watches the dns Service and
// rewrites the glue of ns1.<zone> in every zone of the embedded server when the Service's
// addresses change (controllers/glue).
func (a *App) addGlue(_ context.Context, cfg Config) error {
	if cfg.DNSService == "" {
		return nil
	}
	r := &gluecontroller.Reconciler{
		Service:        dnsServiceKey(cfg),
		Writer:         a.local,
		Recorder:       a.Manager.GetEventRecorderFor("glue-controller"),
		ResyncInterval: cfg.ZoneResync,
	}
	if err := r.SetupWithManager(a.Manager, ControllerGlue); err != nil {
		return fmt.Errorf("set up the glue controller: %w", err)
	}
	return nil
}

// addProviders builds the provider factory, its request counter and the scraper.
func (a *App) addProviders(_ context.Context, cfg Config) error {
	requests, err := counting.NewMetrics(cfg.Registerer)
	if err != nil {
		return err
	}
	a.Requests = requests
	hooks, err := webhook.NewMetrics(cfg.Registerer)
	if err != nil {
		return err
	}
	lopts := local.Options{FaultHook: cfg.LocalFaultHook}
	if a.ZoneSync != nil {
		lopts.Ready = func() error { return a.ZoneSync.Ready(nil) }
	}
	a.local = local.New(a.Store, lopts)
	a.Local = counting.Wrap(a.local, "local", a.Requests)
	a.Providers = &factory.Factory{
		Client:    a.Manager.GetAPIReader(),            // Secrets by name, never cached (get only)
		Local:     guard.New(a.Local, guard.Options{}), // no rate limit, no zone-list cache: a local store
		LocalAddr: a.Server.Addr(),
		// The embedded zones' secondaries, which the Served check asks too.
		LocalNotify: cfg.NotifyTargets,
		Resolver:    cfg.DNSResolver,
		Requests:    a.Requests,
		Webhook:     hooks,
		// RequestTimeout bounds each provider HTTP request (--provider-request-timeout).
		RequestTimeout: cfg.ProviderRequestTimeout,
	}
	scrapeMetrics, err := scraper.NewMetrics(cfg.Registerer)
	if err != nil {
		return err
	}
	a.Scraper = scraper.New(scraper.Options{Interval: cfg.ScrapeInterval, Metrics: scrapeMetrics, Log: cfg.Log.WithName("scraper")})
	if err := a.Manager.Add(a.Scraper); err != nil {
		return err
	}
	servedMetrics, err := served.NewMetrics(cfg.Registerer)
	if err != nil {
		return err
	}
	a.Served = served.New(served.Options{DNS: dnsclient.Client{}, Interval: cfg.ServedInterval, StaleAfter: cfg.ServedStaleAfter,
		Metrics: servedMetrics, Log: cfg.Log.WithName("served")}, dnsendpoint.Kind, dnsrecord.Kind, served.KindDNSZone)
	return a.Manager.Add(a.Served)
}

func (a *App) addProbes(context.Context, Config) error {
	if err := a.Manager.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("healthz: %w", err)
	}
	if err := a.Manager.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("readyz: %w", err)
	}
	if a.Server != nil {
		// A draining server (--local-dns-drain) leaves the dns Service's serving endpoints
		// while it still answers.
		if err := a.Manager.AddReadyzCheck("dns-drain", a.Server.Ready); err != nil {
			return fmt.Errorf("readyz dns-drain: %w", err)
		}
	}
	if a.ZoneSync != nil {
		// A replica serves only once its store holds the zone objects' versions: never REFUSED
		// for a zone it should serve (docs/design.md).
		if err := a.Manager.AddReadyzCheck("zones", a.ZoneSync.Ready); err != nil {
			return fmt.Errorf("readyz zones: %w", err)
		}
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
