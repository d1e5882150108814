package controllers_test

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnsendpoint"
	"github.com/dnsplane/dnsplane/controllers/dnsrecord"
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	gslbcontroller "github.com/dnsplane/dnsplane/controllers/gslb"
	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/heartbeat"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/scraper"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// cluster is one more "cluster" for multi-cluster tests: its own kube-apiserver and etcd
// (envtest) and a manager with the DNSZone and DNSRecord controllers and the heartbeat reporter,
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

	// requests counts provider API requests of the current manager, by provider, operation and
	// code (dnsplane_provider_requests_total).
	requests *prometheus.CounterVec
	// reconciles counts DNSRecord reconciles of the current manager.
	reconciles *counter
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
	// DNSAddr, when set, runs the embedded DNS server there (provider dnsplane.io/local) with the
	// DNSEndpoint controller.
	DNSAddr string
	// GeoTag, Peers and GslbInterval run the Gslb controller (with DNSAddr).
	GeoTag       string
	Peers        []gslb.Peer
	GslbInterval time.Duration
	PeerTimeout  time.Duration
	NSAddress    string
	PeerPort     int
	// SOAPollInterval is the DNSZone controller's --soa-poll-interval; default 200ms.
	SOAPollInterval time.Duration
	// ZoneController names the DNSZone controller (its controller_runtime_* metrics label);
	// default "dnszone".
	ZoneController string
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
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: filepath.Join("..", "bin"),
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest for %s: %v", ownerID, err)
	}
	c := &cluster{t: t, ownerID: ownerID, cfg: cfg, interval: interval, threshold: threshold, opts: opts, zoneDir: t.TempDir()}
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
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: c.scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.requests = counting.NewMetric()
	c.reconciles = &counter{}
	providers := &factory.Factory{Client: mgr.GetAPIReader(), Metadata: mgr.GetClient(), Requests: c.requests}
	writers := zonewriter.NewSet(ctx, zonewriter.Options{Resolve: providers.ResolveAccount}) // as the manager runs
	if c.opts.DNSAddr != "" {
		store := dnsserver.NewStore(dnsserver.StoreOptions{Dir: c.zoneDir})
		srv, err := dnsserver.NewServer(store, dnsserver.ServerOptions{Addr: c.opts.DNSAddr})
		if err == nil {
			err = srv.Listen()
		}
		if err != nil {
			t.Fatalf("%s: embedded DNS server: %v", c.ownerID, err)
		}
		_ = mgr.Add(srv)
		providers.Local, providers.LocalAddr = local.New(store, local.Options{}), srv.Addr()
		if err := (&dnsendpoint.Reconciler{
			Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("dnsendpoint-controller"),
			Providers: providers, Writers: writers, OwnerID: c.ownerID,
		}).SetupWithManager(mgr); err != nil {
			t.Fatal(err)
		}
	}
	if c.opts.GeoTag != "" {
		if err := (&gslbcontroller.Reconciler{
			Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("gslb-controller"), Providers: providers,
			GeoTag: c.opts.GeoTag, Peers: c.opts.Peers, Querier: gslb.Querier{Timeout: c.opts.PeerTimeout},
			Interval: c.opts.GslbInterval, NSAddress: c.opts.NSAddress, PeerPort: c.opts.PeerPort,
		}).SetupWithManagerAndWrap(mgr, func(r reconcile.Reconciler) reconcile.Reconciler {
			return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				start := time.Now()
				defer func() { c.gslbReconcile.observe(time.Since(start)) }()
				return r.Reconcile(ctx, req)
			})
		}); err != nil {
			t.Fatal(err)
		}
	}
	ns := scraper.New(scraper.Options{Interval: time.Hour})
	_ = mgr.Add(ns)
	if err := (&dnszone.Reconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("dnszone-controller"),
		Providers: providers, Writers: writers, OwnerID: c.ownerID, Scraper: ns,
		SOAPollInterval: cmp.Or(c.opts.SOAPollInterval, 200*time.Millisecond), ResyncInterval: time.Hour,
		ControllerName: c.opts.ZoneController,
	}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	records := &dnsrecord.Reconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("dnsrecord-controller"),
		Providers: providers, Writers: writers, OwnerID: c.ownerID, Threshold: c.threshold,
	}
	reporter := heartbeat.New(heartbeat.Options{Interval: c.interval, Threshold: c.threshold, OnCheck: records.CheckFunc(ctx, 10*time.Second)})
	records.Heartbeats = reporter
	_ = mgr.Add(reporter)
	if err := records.SetupWithManagerAndWrap(mgr, func(r reconcile.Reconciler) reconcile.Reconciler {
		return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			c.reconciles.inc()
			return r.Reconcile(ctx, req)
		})
	}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager %s: %v", c.ownerID, err)
		}
	}()
	c.client = mgr.GetClient()
	c.dnsAddr = providers.LocalAddr
	c.stop = func() { cancel(); <-done }
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
		if err := c.client.Create(c.ctx(), o); err != nil {
			c.t.Fatalf("%s: create %T %s: %v", c.ownerID, o, o.GetName(), err)
		}
	}
}

// waitCondition waits until obj's condition typ has status and reason (and, when contains is
// set, a message containing it), and returns the condition.
func (c *cluster) waitCondition(obj client.Object, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) *metav1.Condition {
	c.t.Helper()
	var last *metav1.Condition
	eventually(c.t, timeout, fmt.Sprintf("%s: %s %s=%s/%s", c.ownerID, obj.GetName(), typ, status, reason), func() error {
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		var conds []metav1.Condition
		switch o := obj.(type) {
		case *dnsv1.DNSZone:
			conds = o.Status.Conditions
		case *dnsv1.DNSRecord:
			conds = o.Status.Conditions
		case *dnsv1.DNSEndpoint:
			conds = o.Status.Conditions
		}
		cond := meta.FindStatusCondition(conds, typ)
		if cond == nil {
			return fmt.Errorf("no %s condition yet", typ)
		}
		last = cond
		if cond.Status != status || cond.Reason != reason {
			return fmt.Errorf("%s=%s reason %s: %s", typ, cond.Status, cond.Reason, cond.Message)
		}
		return nil
	})
	return last
}
