package controllers_test

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/conditions"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/internal/testing/secretscan"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	dnsprovider "github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/scraper"
)

const ownerID = "test-cluster"

// The suite runs the manager built by the composition root (internal/app) against a real
// kube-apiserver and etcd (envtest), with the embedded DNS server on a free loopback port.
var (
	k8s       client.Client
	restCfg   *rest.Config // for tests that need a watch or uncached reads
	dnsAddr   string
	provider  *counting.Provider
	nsScraper *scraper.Scraper
	faults    faultInjector
	// scan is the suite's secret scan: no Secret value a test created may reach the manager's
	// logs, Events, object status or metrics (TestMain fails otherwise; TestSecretScan_Canary).
	scan *secretscan.Suite
	// metricsReg is the manager's metrics registry.
	metricsReg = prometheus.NewRegistry()
)

// faultInjector fails the next call at one fault point, once: a simulated crash; or holds
// the calls at one point until released (holdAt): a slow provider.
type faultInjector struct {
	mu    sync.Mutex
	point local.FaultPoint
	zone  string

	holdPoint local.FaultPoint
	holdZone  string
	held      chan struct{} // closed when a call reached the hold
	release   chan struct{} // closed by the release func
}

// holdAt makes calls at point for zone wait until release is called (or their context ends);
// held is closed once the first such call arrived.
func (f *faultInjector) holdAt(point local.FaultPoint, zone string) (held <-chan struct{}, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holdPoint, f.holdZone = point, zone
	f.held, f.release = make(chan struct{}), make(chan struct{})
	h, r := f.held, f.release
	var once sync.Once
	return h, func() {
		once.Do(func() {
			f.mu.Lock()
			f.holdPoint, f.holdZone = "", ""
			f.mu.Unlock()
			close(r)
		})
	}
}

func (f *faultInjector) failNext(point local.FaultPoint, zone string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.point, f.zone = point, zone
}

func (f *faultInjector) hook(ctx context.Context, point local.FaultPoint, zone string) error {
	f.mu.Lock()
	if f.point == point && f.zone == zone {
		f.point = ""
		f.mu.Unlock()
		return fmt.Errorf("injected crash at %s of %s", point, zone)
	}
	if f.holdPoint != point || f.holdZone != zone {
		f.mu.Unlock()
		return nil
	}
	held, release := f.held, f.release
	select {
	case <-held:
	default:
		close(held)
	}
	f.mu.Unlock()
	select {
	case <-release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	roots, err := trustHTTPTestCert() // first: before anything loads the system roots
	if err != nil {
		fmt.Fprintln(os.Stderr, "trust the httptest certificate:", err)
		return 1
	}
	defer func() { _ = os.Remove(roots) }()
	return envtest.Run(m, "..", envtest.Options{}, func(cfg *rest.Config) (func() error, error) {
		restCfg = cfg
		ctx, cancel := context.WithCancel(context.Background())
		var err error
		if scan, err = secretscan.StartSuite(ctx, cfg, app.NewScheme()); err != nil {
			cancel()
			return nil, err
		}
		logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(zapLevel())), logs.zapOption(), scan.ZapOption()))
		verdict := func() error {
			defer cancel()
			return scan.Verdict(metricsReg, ctrlmetrics.Registry)
		}
		cfg.QPS, cfg.Burst = 1000, 2000 // as the manager's --kube-api-qps/--kube-api-burst defaults
		a, err := app.New(ctx, testConfig(cfg, app.Config{
			OwnerID: ownerID, ZoneDir: mustTemp(), NameServerAddr: netip.MustParseAddr("127.0.0.1"), ScrapeInterval: 2 * time.Second,
			LocalFaultHook: faults.hook, Registerer: metricsReg,
		}))
		if err != nil {
			cancel()
			return nil, err
		}
		mgr := a.Manager
		dnsAddr = a.Server.Addr()
		provider = a.Local
		nsScraper = a.Scraper
		go func() {
			if err := mgr.Start(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "manager:", err)
			}
		}()
		k8s = mgr.GetClient()
		return verdict, nil
	})
}

// testConfig returns c over rest with the test settings of every envtest manager filled in
// where c leaves them zero: the embedded server on a free loopback port, no /metrics or probes,
// a 200ms SOA poll, hourly zone and NS resyncs, and the manager's heartbeat and Gslb defaults.
func testConfig(rest *rest.Config, c app.Config) app.Config {
	c.Rest = rest
	c.MetricsAddr, c.ProbeAddr = "0", "0"
	c.DNSAddr = cmp.Or(c.DNSAddr, "127.0.0.1:0")
	c.SOAPollInterval = cmp.Or(c.SOAPollInterval, 200*time.Millisecond)
	c.ZoneResync = cmp.Or(c.ZoneResync, time.Hour)
	c.ScrapeInterval = cmp.Or(c.ScrapeInterval, time.Hour)
	c.HeartbeatInterval = cmp.Or(c.HeartbeatInterval, 30*time.Second)
	c.HeartbeatThreshold = cmp.Or(c.HeartbeatThreshold, 5*time.Minute)
	c.GslbInterval = cmp.Or(c.GslbInterval, 30*time.Second)
	// A provider request that hangs (faultproxy's hang) costs 5 s here, not the default 30 s.
	c.ProviderRequestTimeout = cmp.Or(c.ProviderRequestTimeout, 5*time.Second)
	c.GslbPeerTimeout = cmp.Or(c.GslbPeerTimeout, 2*time.Second)
	c.GslbPeerPort = cmp.Or(c.GslbPeerPort, 53)
	return c
}

func zapLevel() int8 {
	if os.Getenv("TEST_VERBOSE") != "" {
		return -2
	}
	return 2 // errors only
}

func mustTemp() string {
	d, err := os.MkdirTemp("", "dnsplane-zones-")
	if err != nil {
		panic(err)
	}
	return d
}

// eventually is testrun.Eventually: check every 100 ms until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	testrun.Eventually(t, timeout, what, check)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// namespace creates a namespace with a dnsplane.io/local Secret named "dns".
func namespace(t *testing.T, name string) string {
	t.Helper()
	ctx := ctxT(t)
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "dns"}, Type: factory.TypeLocal}
	if err := k8s.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	return name
}

// condition returns the condition typ of obj's status, fetched fresh.
func condition(t *testing.T, obj client.Object, typ string) (*metav1.Condition, error) {
	t.Helper()
	return conditions.Get(ctxT(t), k8s, obj, typ)
}

// waitCondition waits until obj's condition typ has status and reason.
func waitCondition(t *testing.T, obj client.Object, typ string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	return conditions.Wait(t, k8s, obj, typ, conditions.Want{Status: status, Reason: reason}, 30*time.Second)
}

func providerZoneSpec(name, ref string) dnsprovider.ZoneSpec {
	return dnsprovider.ZoneSpec{Name: name, CallerReference: ref}
}
