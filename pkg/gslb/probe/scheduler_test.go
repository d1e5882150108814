package probe

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

const interval = 10 * time.Second

var app = types.NamespacedName{Namespace: "shop", Name: "app"}

// counting answers with code and counts the requests.
type counting struct {
	status
	hits atomic.Int32
}

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.hits.Add(1)
	c.status.ServeHTTP(w, r)
}

func newCounting(code int) *counting {
	c := &counting{}
	c.code.Store(int32(code))
	return c
}

// harness is a Scheduler on a fake clock whose results arrive on observed.
type harness struct {
	s        *Scheduler
	fc       *testingclock.FakeClock
	observed chan TargetState
	reg      *prometheus.Registry
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{fc: testingclock.NewFakeClock(time.Unix(1764784800, 0)), observed: make(chan TargetState, 100),
		reg: prometheus.NewRegistry()}
	m, err := NewMetrics(h.reg)
	if err != nil {
		t.Fatal(err)
	}
	h.s = NewScheduler(SchedulerOptions{Clock: h.fc, GeoTag: "eu", Metrics: m, Workers: 4,
		Observed: func(st TargetState) { h.observed <- st }})
	t.Cleanup(h.s.Stop)
	return h
}

// waitFor waits, under the hang deadline, until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testrun.Eventually(t, testrun.HangTimeout, what, func() error {
		if cond() {
			return nil
		}
		return errors.New("not yet")
	})
}

// tick waits until the scheduler waits on its clock, steps it past every due probe (an interval
// plus the most jitter), and returns the n results that follow.
func (h *harness) tick(t *testing.T, n int) []TargetState {
	t.Helper()
	waitFor(t, "the scheduler to wait for its next probe", h.fc.HasWaiters)
	h.fc.Step(interval + interval/10)
	var out []TargetState
	for range n {
		select {
		case st := <-h.observed:
			out = append(out, st)
		case <-time.After(testrun.HangTimeout):
			t.Fatalf("hang: %d of %d probe results", len(out), n)
		}
	}
	return out
}

func (h *harness) change(t *testing.T) types.NamespacedName {
	t.Helper()
	select {
	case ev := <-h.s.Changes():
		return ev.Object
	case <-time.After(testrun.HangTimeout):
		t.Fatal("hang: no verdict change")
	}
	return types.NamespacedName{}
}

func (h *harness) noChange(t *testing.T) {
	t.Helper()
	select {
	case ev := <-h.s.Changes():
		t.Fatalf("unexpected verdict change of %v", ev.Object)
	default:
	}
}

func httpCheck(port int) Check {
	return Check{Spec: Spec{Protocol: HTTP, Port: port, Path: "/healthz", Host: "app.gslb.test", Timeout: 5 * time.Second},
		Interval: interval, Thresholds: health.Thresholds{Failure: 3, Success: 2}}
}

func TestScheduler_503GoesDownAfterFailureThresholdAndComesBack(t *testing.T) {
	backend := newCounting(http.StatusServiceUnavailable)
	addr, port := serve(t, "127.0.0.2:0", false, backend)
	h := newHarness(t)
	key := HostKey{Gslb: app, Host: "app.gslb.test"}
	h.s.Set(key, []Target{{Addr: addr, GeoTag: "us"}}, httpCheck(port))

	for i := 1; i <= 3; i++ {
		st := h.tick(t, 1)[0]
		want := health.Unknown
		if i == 3 {
			want = health.Down
		}
		if st.State.Verdict != want || st.State.Failures != i || st.State.LastError != "HTTP 503" || st.Target != addr {
			t.Fatalf("after failure %d: %+v; want %s, %d failures, HTTP 503", i, st, want, i)
		}
		if i < 3 {
			h.noChange(t)
		}
	}
	if g := h.change(t); g != app {
		t.Fatalf("change of %v, want %v", g, app)
	}
	if v := h.s.Verdicts(key); v[addr] != health.Down || len(v) != 1 {
		t.Fatalf("Verdicts = %v", v)
	}
	labels := []string{"shop", "app", "app.gslb.test", "ipv4", "eu", "us"}
	if got := testutil.ToFloat64(h.s.opts.Metrics.probes.WithLabelValues(append(labels, ResultFail)...)); got != 3 {
		t.Fatalf("fail probes = %v, want 3", got)
	}

	backend.code.Store(http.StatusOK)
	if st := h.tick(t, 1)[0]; st.State.Verdict != health.Down || st.State.Successes != 1 || st.State.LastError != "" {
		t.Fatalf("after one pass: %+v; want still Down", st)
	}
	h.noChange(t)
	if st := h.tick(t, 1)[0]; st.State.Verdict != health.Up {
		t.Fatalf("after two passes: %+v; want Up", st)
	}
	h.change(t)
	states := h.s.States(app)
	if len(states) != 1 || states[0].State.Verdict != health.Up || !states[0].State.LastProbe.Equal(h.fc.Now()) || states[0].GeoTag != "us" {
		t.Fatalf("States = %+v", states)
	}
	for verdict, want := range map[string]float64{"Down": 1, "Up": 1} {
		if got := testutil.ToFloat64(h.s.opts.Metrics.changes.WithLabelValues(append(labels, verdict)...)); got != want {
			t.Fatalf("verdict changes to %s = %v, want %v", verdict, got, want)
		}
	}
	if hits := backend.hits.Load(); hits != 5 {
		t.Fatalf("backend got %d probes, want 5", hits)
	}
}

func TestScheduler_TCPTargetsPerFamilyAndSetReplaces(t *testing.T) {
	lp := ports.Acceptor(t, "127.0.0.3")
	port := lp.Port()
	up := netip.MustParseAddr("127.0.0.3")
	refused := netip.MustParseAddr("127.0.0.4") // nothing listens there
	h := newHarness(t)
	key := HostKey{Gslb: app, Host: "app.gslb.test"}
	check := Check{Spec: Spec{Protocol: TCP, Port: int(port), Timeout: 5 * time.Second}, Interval: interval,
		Thresholds: health.Thresholds{Failure: 1, Success: 1}}
	h.s.Set(key, []Target{{Addr: up, GeoTag: "eu"}, {Addr: refused, GeoTag: "us"}, {Addr: up, GeoTag: "eu"}, {}}, check)
	got := map[netip.Addr]TargetState{}
	for _, st := range h.tick(t, 2) {
		got[st.Target] = st
	}
	if got[up].State.Verdict != health.Up || got[refused].State.Verdict != health.Down ||
		got[refused].State.LastError != "connect: connection refused" {
		t.Fatalf("results %+v", got)
	}
	if states := h.s.States(app); len(states) != 2 || states[0].Target != up || states[1].Target != refused {
		t.Fatalf("States = %+v, want 2 sorted", states)
	}
	// The same targets again keep their state; a target dropped is forgotten.
	h.s.Set(key, []Target{{Addr: up, GeoTag: "eu"}}, check)
	if states := h.s.States(app); len(states) != 1 || states[0].State.Verdict != health.Up {
		t.Fatalf("States after Set = %+v, want the up target, still Up", states)
	}
	// Another spec starts over.
	check.Spec.Port = 1
	h.s.Set(key, []Target{{Addr: up, GeoTag: "eu"}}, check)
	if states := h.s.States(app); len(states) != 1 || states[0].State.Verdict != health.Unknown {
		t.Fatalf("States after a new spec = %+v, want Unknown", states)
	}
}

func TestScheduler_NothingDeclaredNoGoroutineAndForgetStops(t *testing.T) {
	backend := newCounting(http.StatusOK)
	addr, port := serve(t, "127.0.0.2:0", false, backend)
	base := runtime.NumGoroutine()
	h := newHarness(t)
	h.s.Set(HostKey{Gslb: app, Host: "app.gslb.test"}, nil, httpCheck(port))
	if h.s.running || h.fc.HasWaiters() || runtime.NumGoroutine() != base {
		t.Fatalf("with nothing declared: running %v, timer %v, goroutines %d (before %d)",
			h.s.running, h.fc.HasWaiters(), runtime.NumGoroutine(), base)
	}

	other := types.NamespacedName{Namespace: "shop", Name: "other"}
	h.s.Set(HostKey{Gslb: app, Host: "app.gslb.test"}, []Target{{Addr: addr}}, httpCheck(port))
	h.s.Set(HostKey{Gslb: other, Host: "other.gslb.test"}, []Target{{Addr: addr}}, httpCheck(port))
	h.tick(t, 2)
	h.s.Forget(app)
	if states := h.s.States(app); len(states) != 0 {
		t.Fatalf("States after Forget = %+v", states)
	}
	if st := h.tick(t, 1)[0]; st.Gslb != other {
		t.Fatalf("probed %v after Forget(%v)", st.Gslb, app)
	}
	if n := testutil.CollectAndCount(h.reg, "dnsplane_gslb_probes_total"); n != 1 {
		t.Fatalf("%d probe series after Forget, want other's only", n)
	}
	h.s.Forget(other)
	waitFor(t, "the scheduler's goroutine to end", func() bool {
		h.s.mu.Lock()
		defer h.s.mu.Unlock()
		return !h.s.running
	})
	hits := backend.hits.Load()
	h.fc.Step(10 * interval)
	if h.fc.HasWaiters() || backend.hits.Load() != hits || len(h.observed) != 0 {
		t.Fatalf("probing after Forget: timer %v, hits %d -> %d", h.fc.HasWaiters(), hits, backend.hits.Load())
	}
	// The server's connection goroutines end as the probes' connections close.
	waitFor(t, "no goroutine left", func() bool { return runtime.NumGoroutine() <= base })
	if n := testutil.CollectAndCount(h.reg); n != 0 {
		t.Fatalf("%d series left after forgetting every Gslb", n)
	}
}

func TestScheduler_StopEndsProbesInFlight(t *testing.T) {
	// A server that accepts and never answers: the probe is in flight until Stop cancels it.
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("listen: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- c
		}
	}()
	ap := netip.MustParseAddrPort(l.Addr().String())
	h := newHarness(t)
	check := httpCheck(int(ap.Port()))
	check.Spec.Timeout = time.Hour
	h.s.Set(HostKey{Gslb: app, Host: "app.gslb.test"}, []Target{{Addr: ap.Addr()}}, check)
	waitFor(t, "the scheduler to wait", h.fc.HasWaiters)
	h.fc.Step(interval)
	var c net.Conn
	select {
	case c = <-accepted:
	case <-time.After(testrun.HangTimeout):
		t.Fatal("hang: no probe")
	}
	defer c.Close()
	stopped := make(chan struct{})
	go func() { h.s.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(testrun.HangTimeout):
		t.Fatal("hang: Stop with a probe in flight")
	}
	h.s.Set(HostKey{Gslb: app, Host: "app.gslb.test"}, []Target{{Addr: ap.Addr()}}, check)
	if h.s.running || len(h.s.States(app)) != 0 || len(h.observed) != 0 {
		t.Fatal("Set after Stop declared something")
	}
}

func TestMetrics_IsolatedAndForgetHost(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.SetIsolated(app, "a.gslb.test", true)
	m.SetIsolated(app, "b.gslb.test", false)
	if got := testutil.ToFloat64(m.isolated.WithLabelValues("shop", "app", "a.gslb.test")); got != 1 {
		t.Fatalf("isolated = %v, want 1", got)
	}
	m.ForgetHost(app, "a.gslb.test")
	if n := testutil.CollectAndCount(reg, "dnsplane_gslb_isolated"); n != 1 {
		t.Fatalf("%d isolated series after ForgetHost, want b's only", n)
	}
	var none *Metrics // records nothing
	none.SetIsolated(app, "a.gslb.test", true)
	none.ForgetHost(app, "a.gslb.test")
	none.ForgetGslb(app)
}

func TestScheduler_AtMostWorkersInFlight(t *testing.T) {
	var active, most atomic.Int32
	release := make(chan struct{})
	addr, port := serve(t, "127.0.0.2:0", false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := active.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		active.Add(-1)
	}))
	h := newHarness(t) // Workers: 4
	const hosts = 10
	for i := range hosts {
		h.s.Set(HostKey{Gslb: app, Host: fmt.Sprintf("h%d.gslb.test", i)}, []Target{{Addr: addr}}, httpCheck(port))
	}
	waitFor(t, "the scheduler to wait", h.fc.HasWaiters)
	h.fc.Step(interval + interval/10)
	waitFor(t, "4 probes in flight", func() bool { return active.Load() >= 4 })
	close(release)
	for range hosts {
		select {
		case st := <-h.observed:
			if st.State.LastError != "" {
				t.Fatalf("%+v", st)
			}
		case <-time.After(testrun.HangTimeout):
			t.Fatal("hang: results")
		}
	}
	if m := most.Load(); m != 4 {
		t.Fatalf("at most %d probes in flight, want 4 (Workers)", m)
	}
}

// TestScheduler_CannotProbeFromHereIsNoVote: a target this vantage point cannot probe (a real
// EADDRNOTAVAIL: the IPv4 source address is on no interface) stays Unknown after more failed
// attempts than the failure threshold: no Down vote, no verdict change, counted as abstain.
func TestScheduler_CannotProbeFromHereIsNoVote(t *testing.T) {
	target := ports.Acceptor(t, "127.0.0.3")
	h := &harness{fc: testingclock.NewFakeClock(time.Unix(1764784800, 0)), observed: make(chan TargetState, 100), reg: prometheus.NewRegistry()}
	m, err := NewMetrics(h.reg)
	if err != nil {
		t.Fatal(err)
	}
	prober := &Prober{Clock: h.fc, Source: gslb.SourceAddrs{V4: netip.MustParseAddr("198.51.100.7")}}
	h.s = NewScheduler(SchedulerOptions{Clock: h.fc, GeoTag: "eu", Metrics: m, Workers: 4, Prober: prober,
		Observed: func(st TargetState) { h.observed <- st }})
	t.Cleanup(h.s.Stop)
	key := HostKey{Gslb: app, Host: "app.gslb.test"}
	h.s.Set(key, []Target{{Addr: target.Addr(), GeoTag: "us"}}, Check{Spec: Spec{Protocol: TCP, Port: int(target.Port()), Timeout: 5 * time.Second},
		Interval: interval, Thresholds: health.Thresholds{Failure: 1, Success: 1}})
	for i := range 3 {
		st := h.tick(t, 1)[0]
		if st.State.Verdict != health.Unknown || st.State.Failures != 0 || !strings.HasPrefix(st.State.LastError, "cannot probe from here: ") {
			t.Fatalf("attempt %d: %+v; want Unknown, no failure counted, the reason kept", i+1, st.State)
		}
	}
	h.noChange(t)
	labels := []string{"shop", "app", "app.gslb.test", "ipv4", "eu", "us", ResultAbstain}
	if got := testutil.ToFloat64(m.probes.WithLabelValues(labels...)); got != 3 {
		t.Fatalf("abstain probes = %v, want 3", got)
	}
}
