package promreg_test

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dnsplane/dnsplane/controllers/dnszone"
	gslbcontroller "github.com/dnsplane/dnsplane/controllers/gslb"
	"github.com/dnsplane/dnsplane/internal/version"
	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/gslb/probe"
	"github.com/dnsplane/dnsplane/pkg/heartbeat"
	"github.com/dnsplane/dnsplane/pkg/promreg"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/scraper"
	"github.com/dnsplane/dnsplane/pkg/xfr"
)

func counter(name string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: name})
}

func TestRegister_DuplicateIsAnErrorAndLeavesNothingHalfRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := promreg.Register(reg, "first", counter("a_total")); err != nil {
		t.Fatal(err)
	}
	err := promreg.Register(reg, "second", counter("b_total"), counter("a_total"))
	var dup prometheus.AlreadyRegisteredError
	if !errors.As(err, &dup) {
		t.Fatalf("second registration of a_total: %v, want an AlreadyRegisteredError", err)
	}
	// b_total was unregistered again: registering it anew works.
	if err := promreg.Register(reg, "third", counter("b_total")); err != nil {
		t.Errorf("b_total after the failed registration: %v, want it free", err)
	}
}

func TestRegister_NilRegistererRegistersNothing(t *testing.T) {
	if err := promreg.Register(nil, "test", counter("a_total"), counter("a_total")); err != nil {
		t.Fatalf("nil Registerer: %v", err)
	}
}

// TestNewMetrics_EveryPackageRegistersOnTheGivenRegistry: each
// package that exports metrics builds them with NewMetrics(reg), registers its series (names
// unchanged) on reg and nowhere else, and a second NewMetrics on the same reg is an error.
func TestNewMetrics_EveryPackageRegistersOnTheGivenRegistry(t *testing.T) {
	for _, tc := range []struct {
		pkg    string
		build  func(prometheus.Registerer) (touch func(), err error)
		series []string
	}{
		{"controllers/dnszone", func(r prometheus.Registerer) (func(), error) {
			m, err := dnszone.NewMetrics(r)
			return func() { m.AvailableDelay.Observe(1) }, err
		}, []string{"dnsplane_dnszone_available_delay_seconds"}},
		{"controllers/gslb", func(r prometheus.Registerer) (func(), error) {
			m, err := gslbcontroller.NewMetrics(r)
			return func() {
				m.HealthyRecords.WithLabelValues("n", "g", "h").Set(1)
				m.PeerErrors.WithLabelValues("p").Inc()
			}, err
		}, []string{"dnsplane_gslb_healthy_records", "dnsplane_gslb_peer_query_errors_total"}},
		{"pkg/provider/counting", func(r prometheus.Registerer) (func(), error) {
			m, err := counting.NewMetrics(r)
			return func() { m.Requests.WithLabelValues("local", counting.OpApplyChanges, counting.CodeOK).Inc() }, err
		}, []string{"dnsplane_provider_requests_total"}},
		{"pkg/dnsserver", func(r prometheus.Registerer) (func(), error) {
			m, err := dnsserver.NewMetrics(r)
			return func() { m.Queries.WithLabelValues("udp", "NOERROR").Inc() }, err
		}, []string{"dnsplane_dnsserver_queries_total"}},
		{"pkg/xfr", func(r prometheus.Registerer) (func(), error) {
			m, err := xfr.NewMetrics(r)
			return func() {
				m.Transfers.WithLabelValues("axfr", xfr.ResultFull).Inc()
				m.Notifies.WithLabelValues("acked").Inc()
				m.JournalDeltas.WithLabelValues("z.test.").Set(1)
			}, err
		}, []string{"dnsplane_dnsserver_transfers_total", "dnsplane_dnsserver_notifies_total", "dnsplane_dnsserver_journal_deltas"}},
		{"pkg/scraper", func(r prometheus.Registerer) (func(), error) {
			m, err := scraper.NewMetrics(r)
			return func() { m.Subdomains.WithLabelValues("p").Set(1); m.Duration.WithLabelValues("ok").Observe(1) }, err
		}, []string{"dnsplane_scraper_subdomains", "dnsplane_scraper_scrape_duration_seconds"}},
		{"internal/version", func(r prometheus.Registerer) (func(), error) {
			_, err := version.NewMetrics(r)
			return func() {}, err
		}, []string{"dnsplane_build_info"}},
		{"pkg/gslb/probe", func(r prometheus.Registerer) (func(), error) {
			m, err := probe.NewMetrics(r)
			return func() { m.SetIsolated(types.NamespacedName{Namespace: "n", Name: "g"}, "h", true) }, err
		}, []string{"dnsplane_gslb_isolated"}}, // the probe series appear per probe; pkg/gslb/probe's tests scrape them
		{"pkg/heartbeat", func(r prometheus.Registerer) (func(), error) {
			_, err := heartbeat.NewMetrics(r)
			return func() {}, err
		}, nil}, // its series appear per owner; pkg/heartbeat's tests scrape them
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			touch, err := tc.build(reg)
			if err != nil {
				t.Fatalf("NewMetrics: %v", err)
			}
			touch()
			for _, name := range tc.series {
				if n, err := testutil.GatherAndCount(reg, name); err != nil || n == 0 {
					t.Errorf("series %s on the given registry: %d (%v), want it there", name, n, err)
				}
			}
			var dup prometheus.AlreadyRegisteredError
			if _, err := tc.build(reg); !errors.As(err, &dup) {
				t.Errorf("second NewMetrics on one registry: %v, want an AlreadyRegisteredError", err)
			}
		})
	}
}

func TestVecs_CarryNameHelpBucketsAndLabels(t *testing.T) {
	h := promreg.HistogramVec("h_seconds", "an h", []float64{1, 2}, "a", "b")
	h.WithLabelValues("x", "y").Observe(1.5)
	if n := testutil.CollectAndCount(h, "h_seconds"); n != 1 {
		t.Errorf("histogram series %d, want 1", n)
	}
	c := promreg.CounterVec("c_total", "a c", "a")
	c.WithLabelValues("x").Inc()
	g := promreg.GaugeVec("g", "a g", "a")
	g.WithLabelValues("x").Set(2)
	if testutil.ToFloat64(c.WithLabelValues("x")) != 1 || testutil.ToFloat64(g.WithLabelValues("x")) != 2 {
		t.Error("counter or gauge lost its value")
	}
	reg := prometheus.NewRegistry()
	if err := promreg.Register(reg, "test", h, c, g); err != nil {
		t.Fatal(err)
	}
}

func TestRegistered_ReturnsTheMetricsOrNilWithTheError(t *testing.T) {
	type metrics struct{ c prometheus.Counter }
	reg := prometheus.NewRegistry()
	m := &metrics{c: counter("r_total")}
	if got, err := promreg.Registered(reg, "first", m, m.c); got != m || err != nil {
		t.Fatalf("first registration: %v, %v; want m", got, err)
	}
	again := &metrics{c: counter("r_total")}
	if got, err := promreg.Registered(reg, "second", again, again.c); got != nil || err == nil {
		t.Fatalf("second registration: %v, %v; want nil and an error", got, err)
	}
}
