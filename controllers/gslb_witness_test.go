package controllers_test

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// TestGslbHealth_WitnessFailsOverADeadClusterByQuorum: two clusters (eu, us) and a witness (w:
// a manager run with --gslb-witness, its own API server holding the same Gslb, its own DNS
// server), each on its own loopback address (127.0.31.1 to .3), and an HTTP target per cluster
// (127.0.31.11, .12). Failover, primary eu.
//   - Without the witness, the whole of eu stopped (manager, DNS server and target): us hears
//     1 of 2 members, is isolated, and holds eu's target: two clusters cannot fail over by
//     probes (docs/design.md).
//   - With the witness (--ext-gslb-witnesses at eu and us), the whole of eu stopped: us and the
//     witness are 2 of 3, both call eu's target Down, and us fails over to its own target.
//   - The witness serves no <host> answer and no localtargets, only its verdict records.
func TestGslbHealth_WitnessFailsOverADeadClusterByQuorum(t *testing.T) {
	ip := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	dnsIP := map[string]netip.Addr{"eu": ip("127.0.31.1"), "us": ip("127.0.31.2"), "w": ip("127.0.31.3")}
	back := map[string]netip.Addr{"eu": ip("127.0.31.11"), "us": ip("127.0.31.12")}
	port := ports.TCPUDP(t, "127.0.31.1", "127.0.31.2", "127.0.31.3")
	backendPort := ports.TCPUDP(t, "127.0.31.11", "127.0.31.12")
	addr := func(geo string) string { return netip.AddrPortFrom(dnsIP[geo], uint16(port)).String() }
	peer := func(geo string) gslb.Peer { return gslb.Peer{GeoTag: geo, Addr: addr(geo)} }
	start := func(geo string, peers []gslb.Peer, opts clusterOptions, lb string) *healthCluster {
		opts.GslbSource = gslb.SourceAddrs{V4: dnsIP[geo]}
		g := startGslbClusterWith(t, geo, addr(geo), peers, opts, lb)
		g.create(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
			ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.gslb.test"},
			ZoneRef: dnsv1.ZoneReference{Name: "gslb"}, Strategy: dnsv1.GslbStrategy{Type: "failover", PrimaryGeoTag: "eu", DNSTTLSeconds: 5},
			HealthCheck: &dnsv1.GslbHealthCheck{Protocol: "HTTP", Port: int32(backendPort), Path: "/healthz", IntervalSeconds: 1,
				TimeoutSeconds: 1, FailureThreshold: 2, SuccessThreshold: 1, IsolationHoldSeconds: ptr.To[int32](3600)},
		}})
		return &healthCluster{gslbCluster: g, ip: dnsIP[geo]}
	}
	eu := start("eu", []gslb.Peer{peer("us")}, clusterOptions{}, back["eu"].String())
	us := start("us", []gslb.Peer{peer("eu")}, clusterOptions{}, back["us"].String())
	w := start("w", []gslb.Peer{peer("eu"), peer("us")}, clusterOptions{Witness: true}, "192.0.2.99")
	eu.backend = startBackend(t, back["eu"], backendPort)
	us.backend = startBackend(t, back["us"], backendPort)
	euTarget, usTarget := []string{back["eu"].String()}, []string{back["us"].String()}
	stopEU := func() {
		eu.stopManager()
		eu.backend.stop()
	}
	startEU := func() {
		eu.backend = startBackend(t, back["eu"], backendPort)
		eu.startManager()
	}

	t.Run("two clusters without a witness: no failover by probes", func(t *testing.T) {
		waitAnswers(t, "primary eu", euTarget, eu, us)
		us.waitTarget(t, back["eu"].String(), dnsv1.VerdictUp, dnsv1.TargetReasonHealthy, dnsv1.VerdictUp)
		stopEU()
		total, wrong := soakUntil(t, 5*time.Second, func() error {
			if c := readyOf(us.gslbNow(t)); c == nil || c.Reason != dnsv1.ReasonIsolated {
				return fmt.Errorf("us not isolated: Ready %+v", c)
			}
			_, err := us.targetIs(t, back["eu"].String(), dnsv1.VerdictUp, dnsv1.TargetReasonHeldWhileIsolated, dnsv1.VerdictDown)
			return err
		}, euTarget, us)
		if len(wrong) > 0 {
			t.Fatalf("eu dead, no witness: %d of %d answers at us failed over: %v", countAll(wrong), total, wrong)
		}
		t.Logf("eu dead, two clusters: us isolated, %d answers, all eu's target (held)", total)
	})

	t.Run("with a witness the dead cluster's target fails over by quorum", func(t *testing.T) {
		for _, c := range []*healthCluster{eu, us} {
			c.opts.Witnesses = []gslb.Peer{peer("w")}
		}
		startEU()
		us.stopManager()
		us.startManager()
		waitAnswers(t, "primary eu again", euTarget, eu, us)
		testrun.Eventually(t, testrun.HangTimeout, "us hears eu and the witness", func() error {
			if st := us.gslbNow(t).Status; st.Members != 3 || st.Heard != 3 {
				return fmt.Errorf("members %d heard %d, want 3 and 3; peers %+v", st.Members, st.Heard, st.Peers)
			}
			return nil
		})
		w.waitTarget(t, back["eu"].String(), dnsv1.VerdictUp, dnsv1.TargetReasonHealthy, dnsv1.VerdictUp)
		stopEU()
		took := waitAnswers(t, "us fails over to its own target", usTarget, us)
		ts := us.waitTarget(t, back["eu"].String(), dnsv1.VerdictDown, dnsv1.TargetReasonQuorumDown, dnsv1.VerdictDown)
		t.Logf("eu dead with a witness: us answers its own target after %s; eu's target %+v", took.Round(10*time.Millisecond), ts)
		if c := readyOf(us.gslbNow(t)); c != nil && c.Reason == dnsv1.ReasonIsolated {
			t.Fatalf("us with the witness is isolated: %+v", c)
		}
	})

	t.Run("the witness publishes verdicts only", func(t *testing.T) {
		if rec, err := verdictRecord(w); err != nil || rec == nil || len(rec.Up)+len(rec.Down) == 0 {
			t.Fatalf("witness's verdict record %+v: %v", rec, err)
		}
		for _, name := range []string{"app.gslb.test", gslb.LocalTargetsName("app.gslb.test")} {
			r, err := dnstest.Exchange(w.dnsAddr, name, dns.TypeA)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Answer) != 0 {
				t.Fatalf("the witness answers %s: %v", name, r.Answer)
			}
		}
		if c := readyOf(w.gslbNow(t)); c == nil || c.Reason != dnsv1.ReasonPublished {
			t.Fatalf("witness Ready %+v", c)
		}
	})
}
