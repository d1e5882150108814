package gslb

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
	"github.com/dnsplane/dnsplane/pkg/gslb/probe"
)

func TestProbeCheck_DefaultsAndMapping(t *testing.T) {
	hold := int32(0)
	tests := []struct {
		name string
		hc   dnsv1.GslbHealthCheck
		want probe.Check
		hold time.Duration
	}{
		{name: "defaults: HTTP, Host is the Gslb host", hc: dnsv1.GslbHealthCheck{Port: 8080},
			want: probe.Check{Spec: probe.Spec{Protocol: probe.HTTP, Port: 8080, Host: "app.gslb.test", Expected: probe.DefaultStatus,
				Timeout: 2 * time.Second}, Interval: 10 * time.Second, Thresholds: health.Thresholds{Failure: 3, Success: 1}},
			hold: 300 * time.Second},
		{name: "HTTPS with everything set", hc: dnsv1.GslbHealthCheck{Protocol: dnsv1.HealthCheckHTTPS, Port: 443, Path: "/healthz",
			Host: "shop.example.com", ExpectedStatus: []string{"200", "300-302"}, IntervalSeconds: 5, TimeoutSeconds: 1,
			FailureThreshold: 2, SuccessThreshold: 4, InsecureSkipVerify: true, IsolationHoldSeconds: &hold},
			want: probe.Check{Spec: probe.Spec{Protocol: probe.HTTPS, Port: 443, Path: "/healthz", Host: "shop.example.com",
				Expected: []probe.StatusRange{{Lo: 200, Hi: 200}, {Lo: 300, Hi: 302}}, Timeout: time.Second, InsecureSkipVerify: true},
				Interval: 5 * time.Second, Thresholds: health.Thresholds{Failure: 2, Success: 4}}},
		{name: "TCP: no Host, no status", hc: dnsv1.GslbHealthCheck{Protocol: dnsv1.HealthCheckTCP, Port: 22},
			want: probe.Check{Spec: probe.Spec{Protocol: probe.TCP, Port: 22, Timeout: 2 * time.Second},
				Interval: 10 * time.Second, Thresholds: health.Thresholds{Failure: 3, Success: 1}}, hold: 300 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := probeCheck(&tt.hc, "App.gslb.test.")
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("probeCheck = %+v, %v\nwant %+v", got, err, tt.want)
			}
			if h := isolationHold(&tt.hc); h != tt.hold {
				t.Fatalf("isolationHold = %v, want %v", h, tt.hold)
			}
		})
	}
	if _, err := probeCheck(&dnsv1.GslbHealthCheck{Port: 80, ExpectedStatus: []string{"700"}}, "a.test"); err == nil {
		t.Fatal("a bad expectedStatus passed")
	}
}

func TestProbeTargets_OncePerAddressSorted(t *testing.T) {
	a := netip.MustParseAddr
	got := probeTargets(map[string][]netip.Addr{
		"us": {a("2001:db8::2"), a("192.0.2.9"), a("192.0.2.1")},
		"eu": {a("192.0.2.9"), a("192.0.2.5"), {}},
	})
	want := []probe.Target{{Addr: a("192.0.2.1"), GeoTag: "us"}, {Addr: a("192.0.2.5"), GeoTag: "eu"},
		{Addr: a("192.0.2.9"), GeoTag: "eu"}, {Addr: a("2001:db8::2"), GeoTag: "us"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("probeTargets = %v\nwant %v", got, want)
	}
}

func TestProbeSource_VerdictChangeEnqueuesTheGslb(t *testing.T) {
	ap := ports.Acceptor(t, "127.0.0.2")
	fc := testingclock.NewFakeClock(time.Unix(1764784800, 0))
	s := probe.NewScheduler(probe.SchedulerOptions{Clock: fc})
	t.Cleanup(s.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), testrun.HangTimeout)
	defer cancel()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	if err := probeSource(s).Start(ctx, queue); err != nil {
		t.Fatal(err)
	}
	g := types.NamespacedName{Namespace: "shop", Name: "app"}
	s.Set(probe.HostKey{Gslb: g, Host: "app.gslb.test"}, []probe.Target{{Addr: ap.Addr(), GeoTag: "eu"}},
		probe.Check{Spec: probe.Spec{Protocol: probe.TCP, Port: int(ap.Port())}, Interval: 10 * time.Second})
	testrun.Eventually(t, testrun.HangTimeout, "the scheduler to wait for its first probe", func() error {
		if !fc.HasWaiters() {
			return errors.New("no timer yet")
		}
		return nil
	})
	fc.Step(11 * time.Second)
	got := make(chan reconcile.Request, 1)
	go func() {
		if req, shutdown := queue.Get(); !shutdown {
			got <- req
		}
	}()
	select {
	case req := <-got:
		if req.NamespacedName != g {
			t.Fatalf("enqueued %v, want %v", req, g)
		}
	case <-ctx.Done():
		t.Fatal("hang: no reconcile request after the first verdict")
	}
}
