package controllers_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

// fakeMember is a peer cluster's DNS server written by the test: it answers
// localtargets-<host> with its target and verdicts-<host> with a fresh record calling every
// target in up Up, until silent is set (then it drops every query, as a cut link does).
type fakeMember struct {
	geo    string
	target netip.Addr
	up     []netip.Addr
	silent atomic.Bool
	// skew shifts the time of its verdict records (a wrong clock), in nanoseconds.
	skew atomic.Int64
}

// serve answers for host on addr (UDP and TCP) until the test ends.
func (f *fakeMember) serve(t *testing.T, addr, host string) {
	t.Helper()
	h := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		if f.silent.Load() {
			return
		}
		m := new(dns.Msg)
		m.SetReply(q)
		m.Authoritative = true
		name, qt := strings.ToLower(q.Question[0].Name), q.Question[0].Qtype
		switch {
		case name == gslb.LocalTargetsName(host)+"." && qt == dns.TypeA:
			rr, _ := dns.NewRR(name + " 5 IN A " + f.target.String())
			m.Answer = append(m.Answer, rr)
		case name == health.VerdictsName(host)+"." && qt == dns.TypeTXT:
			v, err := health.Encode(health.Record{GeoTag: f.geo, IssuedAt: time.Now().Add(time.Duration(f.skew.Load())), ValidFor: 3 * time.Second, Up: f.up})
			if err != nil {
				t.Errorf("%s: %v", f.geo, err)
				return
			}
			m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 5}, Txt: []string{v}})
		}
		_ = w.WriteMsg(m)
	})
	for _, netw := range []string{"udp", "tcp"} {
		srv := &dns.Server{Addr: addr, Net: netw, Handler: h}
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go func() { _ = srv.ListenAndServe() }()
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: %s %s did not start", f.geo, netw, addr)
		}
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
}

// verdictRecord reads the verdict record c publishes for app.gslb.test, nil when it has none.
func verdictRecord(c *healthCluster) (*health.Record, error) {
	rrs, err := (gslb.Querier{Timeout: time.Second}).QueryTXT(c.ctx(), c.dnsAddr, health.VerdictsName("app.gslb.test"))
	if err != nil {
		return nil, err
	}
	return health.DecodeTXT(rrs, c.geo, nil)
}

// restartWatchingRecord stops c's manager and starts it again, reading c's verdict record every
// 20 ms from the start until settle has passed; it fails the test when the new manager
// publishes a record without any verdict over the one published before.
func restartWatchingRecord(t *testing.T, c *healthCluster, settle time.Duration) {
	t.Helper()
	c.stopManager()
	c.startManager()
	seen := 0
	for end := time.Now().Add(settle); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		rec, err := verdictRecord(c)
		if err != nil {
			continue // the server starting
		}
		seen++
		if rec == nil || len(rec.Up)+len(rec.Down) == 0 {
			t.Fatalf("%s republished an empty verdict record over its published one after the restart: %+v", c.geo, rec)
		}
	}
	if seen == 0 {
		t.Fatalf("%s's verdict record was never read after the restart", c.geo)
	}
}

// membersAre checks status.members, status.heard and the peers' roles and remembered targets.
func membersAre(g *dnsv1.Gslb, members, heard int32, targets map[string]string) error {
	st := g.Status
	if st.Members != members || st.Heard != heard || st.Quorum != members/2+1 {
		return fmt.Errorf("members %d heard %d quorum %d, want %d, %d, %d", st.Members, st.Heard, st.Quorum, members, heard, members/2+1)
	}
	for geo, want := range targets {
		found := false
		for _, p := range st.Peers {
			if p.GeoTag == geo && p.Role == dnsv1.PeerRoleMember && len(p.Targets) == 1 && len(p.Targets[0].Targets) == 1 && p.Targets[0].Targets[0] == want {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("status.peers %+v: want %s a Member with target %s", st.Peers, geo, want)
		}
	}
	return nil
}

// TestGslbHealth_MembershipSurvivesDiscoveryFailureAndRestart: one real cluster (eu: its own
// API server, manager and embedded DNS server on 127.0.30.1) whose peers us and ap (fake DNS
// servers on 127.0.30.2 and .3, each with a real HTTP target) are discovered from the edge
// zone's NS set. Failover, primary us.
//   - The edge server refusing keeps the members last read: eu still serves us's target, and
//     status.peers still names us and ap with their targets.
//   - A manager restart, with the edge still refusing, restores the membership and never
//     publishes an empty verdict record over the published one.
//   - us and ap silent: eu is isolated and holds the last agreed answer while its own probes
//     call us's target down; a restart then keeps it (the held decision, us's targets and the
//     membership restored from status).
func TestGslbHealth_MembershipSurvivesDiscoveryFailureAndRestart(t *testing.T) {
	ip := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	dnsIP := map[string]netip.Addr{"eu": ip("127.0.30.1"), "us": ip("127.0.30.2"), "ap": ip("127.0.30.3")}
	back := map[string]netip.Addr{"eu": ip("127.0.30.11"), "us": ip("127.0.30.12"), "ap": ip("127.0.30.13")}
	port := ports.TCPUDP(t, "127.0.30.1", "127.0.30.2", "127.0.30.3")
	backendPort := ports.TCPUDP(t, "127.0.30.11", "127.0.30.12", "127.0.30.13")
	all := []netip.Addr{back["eu"], back["us"], back["ap"]}
	us := &fakeMember{geo: "us", target: back["us"], up: all}
	ap := &fakeMember{geo: "ap", target: back["ap"], up: all}
	us.serve(t, netip.AddrPortFrom(dnsIP["us"], uint16(port)).String(), "app.gslb.test")
	ap.serve(t, netip.AddrPortFrom(dnsIP["ap"], uint16(port)).String(), "app.gslb.test")
	var refuse atomic.Bool
	edgeAddr := dnstest.ServeEdge(t, "127.0.30.4", dnstest.Edge{Zone: "edge.test", Child: "gslb.test", Glue: dnsIP, Refuse: &refuse})
	usBackend := startBackend(t, back["us"], backendPort)
	startBackend(t, back["ap"], backendPort)

	g := startGslbClusterWith(t, "eu", netip.AddrPortFrom(dnsIP["eu"], uint16(port)).String(), nil,
		clusterOptions{PeerPort: port, GslbSource: gslb.SourceAddrs{V4: dnsIP["eu"]}}, back["eu"].String())
	eu := &healthCluster{gslbCluster: g, ip: dnsIP["eu"], backend: startBackend(t, back["eu"], backendPort)}
	eu.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "edge-dns"}, Type: "dnsplane.io/local",
		StringData: map[string]string{"DNS_ADDRESS": edgeAddr}})
	edge := zoneObj("apps", "edge", "edge.test", func(z *dnsv1.DNSZone) { z.Spec.ProviderRef.Name = "edge-dns" })
	eu.create(edge)
	eu.waitCondition(edge, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 30*time.Second)
	eu.create(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
		ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.gslb.test"},
		ZoneRef: dnsv1.ZoneReference{Name: "gslb"}, Edge: &dnsv1.GslbEdge{ZoneRef: dnsv1.ZoneReference{Name: "edge"}},
		Strategy: dnsv1.GslbStrategy{Type: "failover", PrimaryGeoTag: "us", DNSTTLSeconds: 5},
		// successThreshold 3: a restarted manager has no verdict of its own for about 2 s.
		HealthCheck: &dnsv1.GslbHealthCheck{Protocol: "HTTP", Port: int32(backendPort), Path: "/healthz", IntervalSeconds: 1,
			TimeoutSeconds: 1, FailureThreshold: 2, SuccessThreshold: 3, IsolationHoldSeconds: ptr.To[int32](3600)},
	}})
	usTarget := []string{back["us"].String()}
	peerTargets := map[string]string{"us": back["us"].String(), "ap": back["ap"].String()}
	waitAnswers(t, "primary us", usTarget, eu)
	testrun.Eventually(t, testrun.HangTimeout, "membership in status", func() error { return membersAre(eu.gslbNow(t), 3, 3, peerTargets) })

	t.Run("the edge NS set unreadable keeps the members last read", func(t *testing.T) {
		refuse.Store(true)
		testrun.Eventually(t, testrun.HangTimeout, "the discovery error in Ready", func() error {
			if c := readyOf(eu.gslbNow(t)); c == nil || !strings.Contains(c.Message, "REFUSED") {
				return fmt.Errorf("Ready %+v", c)
			}
			return nil
		})
		total, wrong := soak(t, 3*time.Second, usTarget, eu)
		if len(wrong) > 0 {
			t.Fatalf("edge refusing: %d of %d answers were not us's target: %v", countAll(wrong), total, wrong)
		}
		if err := membersAre(eu.gslbNow(t), 3, 3, peerTargets); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a restart restores the members and keeps the published verdicts", func(t *testing.T) {
		restartWatchingRecord(t, eu, 4*time.Second)
		total, wrong := soak(t, 2*time.Second, usTarget, eu)
		if len(wrong) > 0 {
			t.Fatalf("after the restart, edge refusing: %d of %d answers were not us's target: %v", countAll(wrong), total, wrong)
		}
		testrun.Eventually(t, testrun.HangTimeout, "membership restored", func() error { return membersAre(eu.gslbNow(t), 3, 3, peerTargets) })
		// The record's time is its verdicts' oldest probe time, never after it.
		rec, err := verdictRecord(eu)
		if err != nil || rec == nil {
			t.Fatalf("eu's record %+v: %v", rec, err)
		}
		for _, ts := range eu.gslbNow(t).Status.Targets {
			if ts.Local != nil && ts.Local.LastProbeTime != nil && rec.IssuedAt.After(ts.Local.LastProbeTime.Time) {
				t.Fatalf("record at %s is after %s's last probe %s", rec.IssuedAt, ts.Target, ts.Local.LastProbeTime.Time)
			}
		}
	})

	t.Run("a healthCheck change that starts the probes over keeps the published verdicts", func(t *testing.T) {
		g := eu.gslbNow(t)
		updateIn(t, eu.client, g, func() {
			g.Spec.HealthCheck.Path = "/healthz?probe=2" // another probe: the Scheduler starts over
		})
		for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			rec, err := verdictRecord(eu)
			if err != nil {
				t.Fatal(err)
			}
			if rec == nil || len(rec.Up)+len(rec.Down) == 0 {
				t.Fatalf("eu published an empty verdict record after its healthCheck changed: %+v", rec)
			}
		}
		waitAnswers(t, "primary us", usTarget, eu)
	})

	t.Run("a member's clock 2 minutes behind is reported", func(t *testing.T) {
		ap.skew.Store(int64(-2 * time.Minute))
		testrun.Eventually(t, testrun.HangTimeout, "ap's clock offset in status.peers", func() error {
			for _, p := range eu.gslbNow(t).Status.Peers {
				if p.GeoTag == "ap" && strings.HasPrefix(p.ClockOffset, "-2m") {
					return nil
				}
			}
			return fmt.Errorf("status.peers %+v", eu.gslbNow(t).Status.Peers)
		})
		eu.waitEvent(t, dnsv1.ReasonClockSkew, "member ap's verdict record time is -2m")
		ap.skew.Store(0)
	})

	t.Run("isolated, a restart keeps the last agreed answer", func(t *testing.T) {
		us.silent.Store(true)
		ap.silent.Store(true)
		testrun.Eventually(t, testrun.HangTimeout, "eu isolated", func() error {
			if c := readyOf(eu.gslbNow(t)); c == nil || c.Reason != dnsv1.ReasonIsolated {
				return fmt.Errorf("Ready %+v", c)
			}
			return nil
		})
		usBackend.status.Store(http.StatusServiceUnavailable)
		eu.waitTarget(t, back["us"].String(), dnsv1.VerdictUp, dnsv1.TargetReasonHeldWhileIsolated, dnsv1.VerdictDown)
		waitAnswers(t, "held: us's target", usTarget, eu)
		eu.stopManager()
		eu.startManager()
		total, wrong := soak(t, 5*time.Second, usTarget, eu)
		if len(wrong) > 0 {
			t.Fatalf("isolated, after a restart: %d of %d answers were not the last agreed one: %v", countAll(wrong), total, wrong)
		}
		eu.waitTarget(t, back["us"].String(), dnsv1.VerdictUp, dnsv1.TargetReasonHeldWhileIsolated, dnsv1.VerdictDown)
		if err := membersAre(eu.gslbNow(t), 3, 1, peerTargets); err != nil {
			t.Fatal(err)
		}
		t.Logf("isolated eu restarted: %d answers in 5 s, all us's target (held)", total)
	})
}
