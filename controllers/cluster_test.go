package controllers_test

import (
	"cmp"
	"context"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/conditions"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// cluster is one more "cluster" for multi-cluster tests: its own kube-apiserver and etcd
// (envtest) and a manager built by the composition root (internal/app), as main.go builds it,
// under its own --owner-id. Its manager can be stopped and started again, as a crashed and
// restarted cluster would be.
type cluster struct {
	t         *testing.T
	ownerID   string
	cfg       *rest.Config
	client    client.Client
	interval  time.Duration
	threshold time.Duration
	opts      clusterOptions
	zoneDir   string // the embedded server's zone data, kept across manager restarts
	dnsAddr   string // the embedded server's address, when it runs
	// store is the embedded server's zone store, when it runs.
	store *zonedb.Store

	// requests counts provider API requests of the current manager, by provider, operation and
	// code (dnsplane_provider_requests_total).
	requests *prometheus.CounterVec
	// reconciles counts DNSRecord reconciles of the current manager.
	reconciles *counter
	// endpointReconciles counts DNSEndpoint reconciles of the current manager.
	endpointReconciles *counter
	// gslbReconcile is the longest Gslb reconcile since its last reset.
	gslbReconcile longest

	stop func()
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) inc()     { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *counter) get() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// clusterOptions add the embedded DNS server and the DNSEndpoint and Gslb controllers to a
// cluster.
type clusterOptions struct {
	// DNSAddr is the embedded DNS server's address (provider dnsplane.io/local); default
	// 127.0.0.1:0. Every cluster runs the manager's four controllers (internal/app).
	DNSAddr string
	// GeoTag, Peers and GslbInterval configure the Gslb controller.
	GeoTag       string
	Peers        []gslb.Peer
	GslbInterval time.Duration
	PeerTimeout  time.Duration
	NSAddress    string
	PeerPort     int
	// GslbSource is --gslb-source-address.
	GslbSource gslb.SourceAddrs
	// Witnesses and Witness are --ext-gslb-witnesses and --gslb-witness.
	Witnesses []gslb.Peer
	Witness   bool
	// GslbFlapDwell is app.Config's (negative: no flap damping).
	GslbFlapDwell time.Duration
	// SOAPollInterval is the DNSZone controller's --soa-poll-interval; default 200ms.
	SOAPollInterval time.Duration
	// ZoneController names the DNSZone controller (its controller_runtime_* metrics label);
	// default "dnszone".
	ZoneController string
	// WrapTransport, when set, wraps the manager's transport to the API server
	// (rest.Config.WrapTransport), for tests that count its requests.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// ExternalDNS is --txt-prefix, --txt-suffix, --txt-wildcard-replacement and
	// --adopt-external-dns-owner.
	ExternalDNS plan.ExternalDNS
	// NotifyTargets and AllowTransfer are --local-notify and --local-allow-transfer.
	NotifyTargets []string
	AllowTransfer []netip.Prefix
	// Registerer receives the manager's metrics; default a new registry per manager start.
	Registerer prometheus.Registerer
	// ConflictRetry is app.Config.ConflictRetry; default app.DefaultConflictRetry.
	ConflictRetry time.Duration
	// ServedInterval and ServedStaleAfter are --served-check-interval and
	// --served-stale-after; default the manager's.
	ServedInterval, ServedStaleAfter time.Duration
	// GeoIPDatabase is --geoip-database; default none.
	GeoIPDatabase string
	// LocalFaultHook injects failures or holds into the embedded provider (app.Config's).
	LocalFaultHook local.FaultHook
	// RolloverTTLs is app.Config's: the TTLs key rollovers wait out; default the manager's.
	RolloverTTLs dnszone.RolloverTTLs
	// NameServerAddr is app.Config's (the embedded zones' name server address); default none.
	NameServerAddr netip.Addr
}

// longest keeps the longest duration observed since the last reset.
type longest struct {
	mu sync.Mutex
	d  time.Duration
}

func (l *longest) observe(d time.Duration) { l.mu.Lock(); l.d = max(l.d, d); l.mu.Unlock() }
func (l *longest) reset()                  { l.mu.Lock(); l.d = 0; l.mu.Unlock() }
func (l *longest) get() time.Duration      { l.mu.Lock(); defer l.mu.Unlock(); return l.d }

func startCluster(t *testing.T, ownerID string, interval, threshold time.Duration) *cluster {
	t.Helper()
	return startClusterWith(t, ownerID, interval, threshold, clusterOptions{})
}

func startClusterWith(t *testing.T, ownerID string, interval, threshold time.Duration, opts clusterOptions) *cluster {
	t.Helper()
	env, err := envtest.Launch("..", envtest.Options{})
	if err != nil {
		t.Fatalf("%s: %v", ownerID, err)
	}
	c := &cluster{t: t, ownerID: ownerID, cfg: env.Config, interval: interval, threshold: threshold, opts: opts, zoneDir: t.TempDir()}
	t.Cleanup(func() {
		c.stopManager()
		_ = env.Stop()
	})
	c.startManager()
	return c
}

func (c *cluster) scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = dnsv1.AddToScheme(s)
	return s
}

// startManager starts a fresh manager process-equivalent: new caches, zone writers, reporter
// and metrics; nothing survives from the previous one but what is in the API server and DNS.
func (c *cluster) startManager() {
	t := c.t
	t.Helper()
	cfg := rest.CopyConfig(c.cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.WrapTransport = c.opts.WrapTransport
	ctx, cancel := context.WithCancel(context.Background())
	c.reconciles = &counter{}
	c.endpointReconciles = &counter{}
	a, err := app.New(ctx, testConfig(cfg, app.Config{
		OwnerID: c.ownerID, ZoneDir: c.zoneDir, DNSAddr: c.opts.DNSAddr,
		HeartbeatInterval: c.interval, HeartbeatThreshold: c.threshold,
		SOAPollInterval: c.opts.SOAPollInterval, ZoneControllerName: c.opts.ZoneController,
		GeoTag: c.opts.GeoTag, Peers: c.opts.Peers, GslbInterval: c.opts.GslbInterval,
		GslbPeerTimeout: c.opts.PeerTimeout, GslbNSAddress: c.opts.NSAddress, GslbPeerPort: c.opts.PeerPort, GslbSource: c.opts.GslbSource,
		GslbWitnesses: c.opts.Witnesses, GslbWitness: c.opts.Witness, GslbFlapDwell: c.opts.GslbFlapDwell,
		NotifyTargets: c.opts.NotifyTargets, AllowTransfer: c.opts.AllowTransfer, ExternalDNS: c.opts.ExternalDNS,
		ConflictRetry: c.opts.ConflictRetry, ServedInterval: c.opts.ServedInterval, ServedStaleAfter: c.opts.ServedStaleAfter,
		GeoIPDatabase: c.opts.GeoIPDatabase, LocalFaultHook: c.opts.LocalFaultHook, RolloverTTLs: c.opts.RolloverTTLs, NameServerAddr: c.opts.NameServerAddr,
		Registerer: cmp.Or[prometheus.Registerer](c.opts.Registerer, prometheus.NewRegistry()), SkipNameValidation: true, Decorate: c.observe,
	}))
	if err != nil {
		cancel()
		t.Fatalf("%s: %v", c.ownerID, err)
	}
	mgr := a.Manager
	c.requests = a.Requests.Requests
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager %s: %v", c.ownerID, err)
		}
	}()
	c.client = mgr.GetClient()
	// The client reads from the manager's cache, which refuses reads until it has started: wait
	// for it, so that a test's first read after a restart does not race the start.
	syncCtx, syncCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Errorf("%s: the manager's cache did not sync within 2 min", c.ownerID)
	}
	c.dnsAddr = a.Server.Addr()
	c.store = a.Store
	c.stop = func() { cancel(); <-done }
}

// observe counts the DNSRecord and DNSEndpoint controllers' reconciles and times the Gslb controller's
// (app.Config.Decorate).
func (c *cluster) observe(name string, r reconcile.Reconciler) reconcile.Reconciler {
	switch name {
	case app.ControllerDNSRecord:
		return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			c.reconciles.inc()
			return r.Reconcile(ctx, req)
		})
	case app.ControllerDNSEndpoint:
		return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			c.endpointReconciles.inc()
			return r.Reconcile(ctx, req)
		})
	case app.ControllerGslb:
		return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			start := time.Now()
			defer func() { c.gslbReconcile.observe(time.Since(start)) }()
			return r.Reconcile(ctx, req)
		})
	}
	return r
}

func (c *cluster) stopManager() {
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
}

func (c *cluster) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	c.t.Cleanup(cancel)
	return ctx
}

func (c *cluster) create(objs ...client.Object) {
	c.t.Helper()
	for _, o := range objs {
		if sec, ok := o.(*corev1.Secret); ok {
			scan.AddSecret(sec) // the suite's secret scan watches the suite's API server only
		}
		if err := c.client.Create(c.ctx(), o); err != nil {
			c.t.Fatalf("%s: create %T %s: %v", c.ownerID, o, o.GetName(), err)
		}
	}
}

// waitCondition waits until obj's condition typ has status and reason, and returns the
// condition.
func (c *cluster) waitCondition(obj client.Object, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) *metav1.Condition {
	c.t.Helper()
	return conditions.Wait(c.t, c.client, obj, typ, conditions.Want{Status: status, Reason: reason, In: c.ownerID}, timeout)
}
