package controllers_test

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/dnscase"
	"github.com/dnsplane/dnsplane/internal/testing/metrictest"
	"github.com/dnsplane/dnsplane/internal/testing/partition"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

// backend is one HTTP target of the health tests: it stays Ready in Kubernetes (its
// EndpointSlice is not touched) and answers GET /healthz with the status the test sets.
type backend struct {
	addr   netip.Addr
	status atomic.Int32
	srv    *http.Server
}

// stop closes the backend's server: its address refuses connections, as a dead cluster's.
func (b *backend) stop() { _ = b.srv.Close() }

// startBackend serves /healthz on addr:port until the test ends.
func startBackend(t *testing.T, addr netip.Addr, port int) *backend {
	t.Helper()
	b := &backend{addr: addr}
	b.status.Store(http.StatusOK)
	ln, err := net.Listen("tcp", netip.AddrPortFrom(addr, uint16(port)).String())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(b.status.Load()))
	})}
	b.srv = srv
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return b
}

// healthCluster is one cluster of the health tests: its Gslb cluster, the loopback address its
// DNS server listens on and its peer queries and probes leave from, and its IPv4 backend.
type healthCluster struct {
	*gslbCluster
	ip      netip.Addr
	backend *backend
	reg     *prometheus.Registry
}

// answers returns the A and AAAA targets addr serves for name, sorted (IPv4 first).
func answers(addr, name string) ([]string, error) {
	var out []string
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qt)
		r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
		if err != nil {
			return nil, err
		}
		if r.Rcode != dns.RcodeSuccess {
			return nil, fmt.Errorf("%s %s: rcode %s", name, dns.TypeToString[qt], dns.RcodeToString[r.Rcode])
		}
		out = append(out, dnscase.Addrs(r.Answer)...)
	}
	slices.SortFunc(out, func(a, b string) int { return netip.MustParseAddr(a).Compare(netip.MustParseAddr(b)) })
	return out, nil
}

// waitAnswers waits until every cluster answers app.gslb.test with exactly want, and returns
// how long that took (a figure: the deadline only catches a hang).
func waitAnswers(t *testing.T, what string, want []string, cs ...*healthCluster) time.Duration {
	t.Helper()
	start := time.Now()
	for _, c := range cs {
		testrun.Eventually(t, testrun.HangTimeout, fmt.Sprintf("%s at %s", what, c.geo), func() error {
			got, err := answers(c.dnsAddr, "app.gslb.test")
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("served %v, want %v", got, want)
			}
			return nil
		})
	}
	return time.Since(start)
}

// gslbNow reads the cluster's Gslb.
func (c *healthCluster) gslbNow(t *testing.T) *dnsv1.Gslb {
	t.Helper()
	var g dnsv1.Gslb
	if err := c.client.Get(c.ctx(), client.ObjectKey{Namespace: "apps", Name: "app"}, &g); err != nil {
		t.Fatal(err)
	}
	return &g
}

// targetIs reports whether the cluster's status.targets shows target with decision and reason
// and, when local is not "", this cluster's own probe verdict local; else it says what it shows.
func (c *healthCluster) targetIs(t *testing.T, target string, decision dnsv1.TargetVerdict, reason string, local dnsv1.TargetVerdict) (dnsv1.GslbTargetStatus, error) {
	t.Helper()
	for _, ts := range c.gslbNow(t).Status.Targets {
		if ts.Target != target {
			continue
		}
		if ts.Decision != decision || ts.Reason != reason || (local != "" && (ts.Local == nil || ts.Local.Verdict != local)) {
			return ts, fmt.Errorf("%s: target %+v (local %+v)", c.geo, ts, ts.Local)
		}
		return ts, nil
	}
	return dnsv1.GslbTargetStatus{}, fmt.Errorf("%s: no status.targets entry for %s", c.geo, target)
}

// waitTarget waits until targetIs, and returns the target's status.
func (c *healthCluster) waitTarget(t *testing.T, target string, decision dnsv1.TargetVerdict, reason string, local dnsv1.TargetVerdict) dnsv1.GslbTargetStatus {
	t.Helper()
	var found dnsv1.GslbTargetStatus
	testrun.Eventually(t, testrun.HangTimeout, fmt.Sprintf("%s: target %s %s (%s)", c.geo, target, decision, reason), func() (err error) {
		found, err = c.targetIs(t, target, decision, reason, local)
		return err
	})
	return found
}

// waitReady waits until the cluster's Gslb has Ready with status and reason.
func (c *healthCluster) waitReady(t *testing.T, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	return c.waitCondition(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}}, dnsv1.ConditionReady, status, reason, testrun.HangTimeout)
}

// waitEvent waits until the cluster's API server holds an Event of the Gslb with reason whose
// message contains text.
func (c *healthCluster) waitEvent(t *testing.T, reason, text string) {
	t.Helper()
	testrun.Eventually(t, testrun.HangTimeout, fmt.Sprintf("%s: Event %s %q", c.geo, reason, text), func() error {
		direct, err := client.New(c.cfg, client.Options{Scheme: c.scheme()})
		if err != nil {
			return err
		}
		var evs corev1.EventList
		if err := direct.List(c.ctx(), &evs, client.InNamespace("apps")); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Gslb" && e.Reason == reason && strings.Contains(e.Message, text) {
				return nil
			}
		}
		return fmt.Errorf("none among %d Events", len(evs.Items))
	})
}

// soak queries every cluster's answer for app.gslb.test for d and counts the answers that are
// not want, by cluster; it fails the test on an empty answer.
func soak(t *testing.T, d time.Duration, want []string, cs ...*healthCluster) (total int, wrong map[string][]string) {
	t.Helper()
	wrong = map[string][]string{}
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, c := range cs {
			got, err := answers(c.dnsAddr, "app.gslb.test")
			if err != nil {
				t.Fatalf("%s: %v", c.geo, err)
			}
			total++
			if len(got) == 0 {
				t.Fatalf("%s answered app.gslb.test empty", c.geo)
			}
			if !slices.Equal(got, want) {
				wrong[c.geo] = append(wrong[c.geo], strings.Join(got, ","))
			}
		}
	}
	return total, wrong
}

// TestGslbHealth_ThreeClustersProbeAndDecideByQuorum runs three clusters (eu, us, ap), each
// with its own API server, manager and embedded DNS server on its own loopback address
// (127.0.28.1 to .3), and an HTTP backend per cluster (127.0.28.11 to .13; eu also has [::1]).
// Each cluster probes every target and publishes its verdicts over DNS; a target leaves the
// answers only on a majority's verdict (docs/design.md, "Health and partitions"). The
// partitions are real: iptables drops the traffic between two clusters' source addresses.
func TestGslbHealth_ThreeClustersProbeAndDecideByQuorum(t *testing.T) {
	ips := map[string]netip.Addr{"eu": netip.MustParseAddr("127.0.28.1"), "us": netip.MustParseAddr("127.0.28.2"), "ap": netip.MustParseAddr("127.0.28.3")}
	backs := map[string]netip.Addr{"eu": netip.MustParseAddr("127.0.28.11"), "us": netip.MustParseAddr("127.0.28.12"), "ap": netip.MustParseAddr("127.0.28.13")}
	v6 := netip.MustParseAddr("::1")
	dnsPort := ports.TCPUDP(t, "127.0.28.1", "127.0.28.2", "127.0.28.3")
	backendPort := ports.TCPUDP(t, "127.0.28.11", "127.0.28.12", "127.0.28.13", "::1")
	addr := func(geo string) string { return netip.AddrPortFrom(ips[geo], uint16(dnsPort)).String() }
	geos := []string{"eu", "us", "ap"}

	eu6 := startBackend(t, v6, backendPort)
	cs := map[string]*healthCluster{}
	for _, geo := range geos {
		var peers []gslb.Peer
		for _, p := range geos {
			if p != geo {
				peers = append(peers, gslb.Peer{GeoTag: p, Addr: addr(p)})
			}
		}
		lb := []string{backs[geo].String()}
		if geo == "eu" {
			lb = append(lb, v6.String())
		}
		reg := prometheus.NewRegistry()
		// The subtests take the same targets down again within minutes on purpose: no flap
		// damping here (pkg/gslb/health tests it).
		g := startGslbClusterWith(t, geo, addr(geo), peers, clusterOptions{GslbSource: gslb.SourceAddrs{V4: ips[geo]}, Registerer: reg, GslbFlapDwell: -1}, lb...)
		cs[geo] = &healthCluster{gslbCluster: g, ip: ips[geo], backend: startBackend(t, backs[geo], backendPort), reg: reg}
	}
	eu, us, ap := cs["eu"], cs["us"], cs["ap"]
	all := []*healthCluster{eu, us, ap}
	const interval, threshold = 1, 2
	for _, c := range all {
		c.create(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
			ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.gslb.test"},
			ZoneRef: dnsv1.ZoneReference{Name: "gslb"}, Strategy: dnsv1.GslbStrategy{Type: "roundRobin", DNSTTLSeconds: 5},
			HealthCheck: &dnsv1.GslbHealthCheck{Protocol: "HTTP", Port: int32(backendPort), Path: "/healthz", IntervalSeconds: interval,
				TimeoutSeconds: 1, FailureThreshold: threshold, SuccessThreshold: 1, IsolationHoldSeconds: ptr.To[int32](3600)},
		}})
	}
	everyone := []string{"127.0.28.11", "127.0.28.12", "127.0.28.13", "::1"}
	euTargets := []string{"127.0.28.11", "::1"}
	bound := time.Duration(interval*threshold+interval) * time.Second

	t.Run("every cluster probes every target and publishes its verdicts", func(t *testing.T) {
		waitAnswers(t, "every target", everyone, all...)
		for _, target := range everyone {
			testrun.Eventually(t, testrun.HangTimeout, "eu: both peers' verdicts on "+target, func() error {
				ts, err := eu.targetIs(t, target, dnsv1.VerdictUp, dnsv1.TargetReasonHealthy, dnsv1.VerdictUp)
				if err == nil && len(ts.Peers) != 2 {
					err = fmt.Errorf("peers' verdicts %+v, want us's and ap's", ts.Peers)
				}
				return err
			})
		}
		// The verdict record a peer reads, over DNS.
		rrs, err := (gslb.Querier{}).QueryTXT(eu.ctx(), us.dnsAddr, health.VerdictsName("app.gslb.test"))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := health.DecodeTXT(rrs, "us", nil)
		if err != nil || rec == nil {
			t.Fatalf("us's verdict record %q: %v", rrs, err)
		}
		if len(rec.Up) != 4 || len(rec.Down) != 0 {
			t.Fatalf("us's verdicts: up %v down %v, want the 4 targets up", rec.Up, rec.Down)
		}
		t.Logf("us publishes %q (%d bytes)", strings.Join(rrs[0], ""), len(strings.Join(rrs[0], "")))
	})

	t.Run("a Ready backend that answers 503 leaves every cluster's answer", func(t *testing.T) {
		eu.backend.status.Store(http.StatusServiceUnavailable)
		took := waitAnswers(t, "eu's IPv4 target out", []string{"127.0.28.12", "127.0.28.13", "::1"}, all...)
		t.Logf("503 at eu's backend -> out of all 3 clusters' answers after %s (interval x failureThreshold + interval = %s)", took.Round(10*time.Millisecond), bound)
		ts := us.waitTarget(t, "127.0.28.11", dnsv1.VerdictDown, dnsv1.TargetReasonQuorumDown, dnsv1.VerdictDown)
		if ts.Local.LastError != "HTTP 503" || ts.Served {
			t.Fatalf("us's view of eu's target: %+v (local %+v), want its last error HTTP 503 and not served", ts, ts.Local)
		}
		us.waitEvent(t, dnsv1.ReasonTargetDown, "127.0.28.11")
		eu.backend.status.Store(http.StatusOK)
		took = waitAnswers(t, "eu's IPv4 target back", everyone, all...)
		t.Logf("eu's backend healthy again -> back in all answers after %s", took.Round(10*time.Millisecond))
		us.waitEvent(t, dnsv1.ReasonTargetUp, "127.0.28.11")
	})

	t.Run("an IPv6 target down while its IPv4 twin is up", func(t *testing.T) {
		// [::1] is the only IPv6 candidate: Down by quorum, and still served, since a family
		// with a candidate never answers empty (NoHealthyTargets for IPv6); A is unchanged.
		eu6.status.Store(http.StatusServiceUnavailable)
		ap.waitTarget(t, "::1", dnsv1.VerdictDown, dnsv1.TargetReasonQuorumDown, dnsv1.VerdictDown)
		ap.waitTarget(t, "127.0.28.11", dnsv1.VerdictUp, dnsv1.TargetReasonHealthy, dnsv1.VerdictUp)
		ap.waitReady(t, metav1.ConditionFalse, dnsv1.ReasonNoHealthyTargets)
		total, wrong := soak(t, 2*time.Second, everyone, all...)
		if len(wrong) > 0 {
			t.Fatalf("IPv6 family all down: %d of %d answers were not every target: %v", countAll(wrong), total, wrong)
		}
		eu6.status.Store(http.StatusOK)
		ap.waitTarget(t, "::1", dnsv1.VerdictUp, dnsv1.TargetReasonHealthy, dnsv1.VerdictUp)
		waitAnswers(t, "[::1] back", everyone, all...)
	})

	t.Run("every target down: all are served, NoHealthyTargets", func(t *testing.T) {
		setAll := func(code int32) {
			for _, b := range []*backend{eu.backend, us.backend, ap.backend, eu6} {
				b.status.Store(code)
			}
		}
		setAll(http.StatusServiceUnavailable)
		for _, c := range all {
			for _, target := range everyone {
				c.waitTarget(t, target, dnsv1.VerdictDown, dnsv1.TargetReasonQuorumDown, dnsv1.VerdictDown)
			}
			c.waitReady(t, metav1.ConditionFalse, dnsv1.ReasonNoHealthyTargets)
		}
		waitAnswers(t, "every target served", everyone, all...)
		total, wrong := soak(t, 3*time.Second, everyone, all...)
		if len(wrong) > 0 {
			t.Fatalf("all targets down: %d of %d answers were not every target: %v", countAll(wrong), total, wrong)
		}
		setAll(http.StatusOK)
		for _, c := range all {
			c.waitReady(t, metav1.ConditionTrue, dnsv1.ReasonPublished)
		}
		waitAnswers(t, "every target back", everyone, all...)
	})

	t.Run("one cluster's partition from the primary does not fail over", func(t *testing.T) {
		partition.Require(t)
		for _, c := range all {
			c.setStrategy(t, dnsv1.GslbStrategy{Type: "failover", PrimaryGeoTag: "eu", DNSTTLSeconds: 5})
		}
		waitAnswers(t, "primary eu", euTargets, all...)
		// us and eu lose each other: DNS and probes, both ways. ap sees both.
		cut := partition.Symmetric(t, []netip.Addr{ips["us"], backs["us"]}, []netip.Addr{ips["eu"], backs["eu"]})
		// us's own probes call eu's IPv4 target down; eu's last record stays fresh for its
		// validity plus the clock skew, then stops counting. ap still sees it up: one of two.
		soakFor := health.DefaultMaxSkew + 3*time.Duration(interval)*time.Second + 10*time.Second
		total, wrong := soakUntil(t, soakFor, func() error {
			_, err := us.targetIs(t, "127.0.28.11", dnsv1.VerdictUp, dnsv1.TargetReasonHealthy, dnsv1.VerdictDown)
			return err
		}, euTargets, all...)
		if len(wrong) > 0 {
			t.Fatalf("partition us|eu: %d answers failed over (of %d): %v", countAll(wrong), total, wrong)
		}
		g := us.gslbNow(t)
		if c := readyOf(g); c == nil || c.Reason == dnsv1.ReasonIsolated {
			t.Fatalf("us with one of two peers cut is not isolated; Ready %+v", c)
		}
		t.Logf("partition us|eu for %s: %d answers from the 3 clusters, 0 failed over; us: eu's target own probe Down, decision Up (Healthy)", soakFor, total)
		cut.Heal()
		waitAnswers(t, "healed: primary eu", euTargets, all...)
		us.waitReady(t, metav1.ConditionTrue, dnsv1.ReasonPublished)
	})

	t.Run("an isolated cluster holds the last agreed answer, then its own probes, never empty", func(t *testing.T) {
		partition.Require(t)
		waitAnswers(t, "primary eu", euTargets, all...)
		us.waitTarget(t, "127.0.28.11", dnsv1.VerdictUp, dnsv1.TargetReasonHealthy, dnsv1.VerdictUp)
		cut := partition.Symmetric(t, []netip.Addr{ips["us"], backs["us"]}, []netip.Addr{ips["eu"], backs["eu"], ips["ap"], backs["ap"]})
		start := time.Now()
		// Until isolation and through the hold, us serves the last agreed answer.
		total, wrong := soakUntil(t, 0, func() error {
			g := us.gslbNow(t)
			if c := readyOf(g); c == nil || c.Reason != dnsv1.ReasonIsolated {
				return fmt.Errorf("us not isolated yet: Ready %+v", c)
			}
			return nil
		}, euTargets, all...)
		t.Logf("us isolated after %s", time.Since(start).Round(100*time.Millisecond))
		if got := metrictest.Value(t, us.reg, "dnsplane_gslb_isolated", map[string]string{"host": "app.gslb.test"}); got != 1 {
			t.Fatalf("dnsplane_gslb_isolated at us = %v, want 1", got)
		}
		us.waitEvent(t, dnsv1.ReasonIsolated, "last agreed answer")
		us.waitTarget(t, "127.0.28.11", dnsv1.VerdictUp, dnsv1.TargetReasonHeldWhileIsolated, dnsv1.VerdictDown)
		n, w := soak(t, 3*time.Second, euTargets, all...)
		total += n
		merge(wrong, w)
		if len(wrong) > 0 {
			t.Fatalf("isolated us, within the hold: %d of %d answers were not the last agreed one: %v", countAll(wrong), total, wrong)
		}
		// After isolationHoldSeconds, with afterIsolationHold OwnProbes, us decides by its own
		// probes, per family: eu's IPv4 target and ap's are down from here, so A fails over to
		// us's own; [::1] is up, so AAAA keeps primary eu's. The hold is an hour so far (no
		// machine is too slow for the checks above); setting it to 0 ends it.
		g := us.gslbNow(t)
		updateIn(t, us.client, g, func() {
			g.Spec.HealthCheck.IsolationHoldSeconds = ptr.To[int32](0)
			g.Spec.HealthCheck.AfterIsolationHold = dnsv1.AfterIsolationHoldOwnProbes
		})
		us.waitTarget(t, "127.0.28.11", dnsv1.VerdictDown, dnsv1.TargetReasonOwnProbesOnly, dnsv1.VerdictDown)
		waitAnswers(t, "us on its own probes", []string{"127.0.28.12", "::1"}, us)
		waitAnswers(t, "eu and ap unchanged", euTargets, eu, ap)
		cut.Heal()
		took := waitAnswers(t, "healed: one answer everywhere", euTargets, all...)
		us.waitReady(t, metav1.ConditionTrue, dnsv1.ReasonPublished)
		if got := metrictest.Value(t, us.reg, "dnsplane_gslb_isolated", map[string]string{"host": "app.gslb.test"}); got != 0 {
			t.Fatalf("dnsplane_gslb_isolated at us after the heal = %v, want 0", got)
		}
		t.Logf("isolation healed -> every cluster answers eu's targets after %s", took.Round(10*time.Millisecond))
	})
}

// soakUntil soaks (soak) in one-second rounds for at least least, and then until done returns
// nil (checked between rounds); after testrun.HangTimeout more it fails the test with done's
// error. It returns the answers counted and the wrong ones by cluster.
func soakUntil(t *testing.T, least time.Duration, done func() error, want []string, cs ...*healthCluster) (int, map[string][]string) {
	t.Helper()
	total, wrong := 0, map[string][]string{}
	start := time.Now()
	for {
		n, w := soak(t, time.Second, want, cs...)
		total += n
		merge(wrong, w)
		if time.Since(start) < least {
			continue
		}
		err := done()
		if err == nil {
			return total, wrong
		}
		if time.Since(start) > least+testrun.HangTimeout {
			t.Fatalf("after %s: %v", time.Since(start).Round(time.Second), err)
		}
	}
}

// merge appends the wrong answers of w to wrong's, by cluster.
func merge(wrong, w map[string][]string) {
	for k, v := range w {
		wrong[k] = append(wrong[k], v...)
	}
}

func countAll(m map[string][]string) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

func readyOf(g *dnsv1.Gslb) *metav1.Condition {
	for i := range g.Status.Conditions {
		if g.Status.Conditions[i].Type == dnsv1.ConditionReady {
			return &g.Status.Conditions[i]
		}
	}
	return nil
}
