package controllers_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// gslbCluster is one cluster of the Gslb tests: geo tag, DNS address, its LoadBalancer Service's
// IP, and the EndpointSlice whose ready flag the test flips.
type gslbCluster struct {
	*cluster
	geo, dnsAddr, lbIP string
}

func startGslbCluster(t *testing.T, geo, dnsAddr, lbIP string, peers []gslb.Peer) *gslbCluster {
	t.Helper()
	return startGslbClusterWith(t, geo, dnsAddr, peers, clusterOptions{}, lbIP)
}

// startGslbClusterWith is startGslbCluster with more options (opts' DNSAddr, GeoTag, Peers,
// GslbInterval and PeerTimeout are set here) and every load-balancer address of the Service.
func startGslbClusterWith(t *testing.T, geo, dnsAddr string, peers []gslb.Peer, opts clusterOptions, lbIPs ...string) *gslbCluster {
	t.Helper()
	opts.DNSAddr, opts.GeoTag, opts.Peers = dnsAddr, geo, peers
	opts.GslbInterval, opts.PeerTimeout = time.Second, 500*time.Millisecond
	c := startClusterWith(t, "cluster-"+geo, time.Hour, time.Hour, opts)
	g := &gslbCluster{cluster: c, geo: geo, dnsAddr: dnsAddr, lbIP: lbIPs[0]}
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "dns"}, Type: "dnsplane.io/local"})
	z := zoneObj("apps", "gslb", "gslb.test", nil)
	c.create(z)
	c.waitCondition(z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 30*time.Second)
	c.loadBalancedApp(t, lbIPs...)
	return g
}

// loadBalancedApp creates, in namespace apps, a selector-less LoadBalancer Service "app" whose
// status holds lbIPs (no cloud controller runs here) and a hand-written EndpointSlice "app-1"
// with one ready endpoint, the flag the tests flip.
func (c *cluster) loadBalancedApp(t *testing.T, lbIPs ...string) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	c.create(svc)
	for _, ip := range lbIPs {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	if err := c.client.Status().Update(c.ctx(), svc); err != nil {
		t.Fatal(err)
	}
	c.create(&discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "apps", Name: "app-1", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	})
}

// setReady flips the ready flag of the cluster's only endpoint (read fresh, retried on a
// conflict).
func (g *gslbCluster) setReady(t *testing.T, ready bool) {
	t.Helper()
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app-1"}}
	updateIn(t, g.client, es, func() { es.Endpoints[0].Conditions.Ready = ptr.To(ready) })
}

// setStrategy sets the Gslb's strategy (read fresh, retried on a conflict with the controller's
// own writes).
func (g *gslbCluster) setStrategy(t *testing.T, s dnsv1.GslbStrategy) {
	t.Helper()
	obj := &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}}
	updateIn(t, g.client, obj, func() { obj.Spec.Strategy = s })
}

// waitServed waits until every server answers app.gslb.test with exactly want, and returns how
// long that took.
func waitServed(t *testing.T, what string, want []string, servers ...*gslbCluster) time.Duration {
	t.Helper()
	start := time.Now()
	slices.Sort(want)
	for _, s := range servers {
		eventually(t, 20*time.Second, fmt.Sprintf("%s at %s", what, s.geo), func() error {
			if got := served(t, s.dnsAddr, "app.gslb.test"); !slices.Equal(got, want) {
				return fmt.Errorf("served %v, want %v", got, want)
			}
			return nil
		})
	}
	return time.Since(start)
}

// TestGslb_TwoClustersExchangeTargetsOverDNS: two clusters (eu and us), each with its own API
// server, manager and embedded DNS server on 127.0.0.11 and 127.0.0.12 (same port), a
// selector-less LoadBalancer Service and a hand-written EndpointSlice. They learn each other's
// healthy targets only by querying localtargets-app.gslb.test at each other's DNS server.
func TestGslb_TwoClustersExchangeTargetsOverDNS(t *testing.T) {
	port := strconv.Itoa(ports.TCPUDP(t, "127.0.0.11", "127.0.0.12"))
	euAddr, usAddr := "127.0.0.11:"+port, "127.0.0.12:"+port
	eu := startGslbCluster(t, "eu", euAddr, "192.0.2.1", []gslb.Peer{{GeoTag: "us", Addr: usAddr}})
	us := startGslbCluster(t, "us", usAddr, "192.0.2.2", []gslb.Peer{{GeoTag: "eu", Addr: euAddr}})
	for _, g := range []*gslbCluster{eu, us} {
		g.create(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
			ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.gslb.test"},
			ZoneRef: dnsv1.ZoneReference{Name: "gslb"}, Strategy: dnsv1.GslbStrategy{Type: "roundRobin", DNSTTLSeconds: 5}}})
	}

	t.Run("roundRobin", func(t *testing.T) {
		waitServed(t, "both clusters' IPs", []string{"192.0.2.1", "192.0.2.2"}, eu, us)
		us.setReady(t, false)
		local := waitServed(t, "us unready: us drops its IP", []string{"192.0.2.1"}, us)
		remote := waitServed(t, "us unready: eu drops us's IP", []string{"192.0.2.1"}, eu)
		t.Logf("us unready -> dropped at us after %s, at eu %s later", local.Round(10*time.Millisecond), remote.Round(10*time.Millisecond))
		us.setReady(t, true)
		waitServed(t, "us ready again", []string{"192.0.2.1", "192.0.2.2"}, eu, us)
		var g dnsv1.Gslb
		if err := eu.client.Get(eu.ctx(), client.ObjectKey{Namespace: "apps", Name: "app"}, &g); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "eu's status", func() error {
			if err := eu.client.Get(eu.ctx(), client.ObjectKey{Namespace: "apps", Name: "app"}, &g); err != nil {
				return err
			}
			if g.Status.GeoTag != "eu" || g.Status.ServiceHealth["app.gslb.test"] != "Healthy" || len(g.Status.HealthyRecords["app.gslb.test"]) != 2 ||
				len(g.Status.Peers) != 1 || g.Status.Peers[0].Error != "" || g.Status.Peers[0].LastSeen == nil {
				return fmt.Errorf("status %+v", g.Status)
			}
			return nil
		})
	})

	t.Run("failover", func(t *testing.T) {
		for _, g := range []*gslbCluster{eu, us} {
			g.setStrategy(t, dnsv1.GslbStrategy{Type: "failover", PrimaryGeoTag: "eu", DNSTTLSeconds: 5})
		}
		waitServed(t, "primary eu only", []string{"192.0.2.1"}, eu, us)
		eu.setReady(t, false)
		start := time.Now()
		waitServed(t, "eu unhealthy: us's IP", []string{"192.0.2.2"}, eu)
		atEU := time.Since(start)
		waitServed(t, "eu unhealthy: us's IP", []string{"192.0.2.2"}, us)
		atUS := time.Since(start)
		t.Logf("failover: eu unready -> eu's own server answers us after %s, us's server after %s", atEU.Round(10*time.Millisecond), atUS.Round(10*time.Millisecond))
		eu.setReady(t, true)
		start = time.Now()
		waitServed(t, "failback to eu", []string{"192.0.2.1"}, eu, us)
		t.Logf("failback: eu ready -> both servers answer eu after %s", time.Since(start).Round(10*time.Millisecond))
	})

	t.Run("weighted", func(t *testing.T) {
		for _, g := range []*gslbCluster{eu, us} {
			g.setStrategy(t, dnsv1.GslbStrategy{Type: "weighted", Weights: map[string]int32{"eu": 70, "us": 30}, DNSTTLSeconds: 5})
		}
		// Both weighted sets are published at eu: its answers then mix both IPs.
		eventually(t, 20*time.Second, "weighted sets at eu", func() error {
			seen := map[string]bool{}
			for range 50 {
				for _, ip := range served(t, euAddr, "app.gslb.test") {
					seen[ip] = true
				}
			}
			if !seen["192.0.2.1"] || !seen["192.0.2.2"] {
				return fmt.Errorf("saw %v", seen)
			}
			return nil
		})
		const n = 2000
		counts := map[string]int{}
		c := &dns.Client{Timeout: 2 * time.Second}
		for range n {
			m := new(dns.Msg)
			m.SetQuestion("app.gslb.test.", dns.TypeA)
			r, _, err := c.Exchange(m, euAddr)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Answer) != 1 {
				t.Fatalf("a weighted answer holds one set's records, got %v", r.Answer)
			}
			counts[r.Answer[0].(*dns.A).A.String()]++
		}
		eushare, usshare := 100*float64(counts["192.0.2.1"])/n, 100*float64(counts["192.0.2.2"])/n
		t.Logf("weighted 70/30 over %d queries: eu %.1f%%, us %.1f%%", n, eushare, usshare)
		if math.Abs(eushare-70) > 5 || math.Abs(usshare-30) > 5 {
			t.Fatalf("shares eu %.1f%%, us %.1f%%; want within 5 points of 70/30", eushare, usshare)
		}
	})

	t.Run("dead peer", func(t *testing.T) {
		for _, g := range []*gslbCluster{eu, us} {
			g.setStrategy(t, dnsv1.GslbStrategy{Type: "roundRobin", DNSTTLSeconds: 5})
		}
		waitServed(t, "both", []string{"192.0.2.1", "192.0.2.2"}, eu, us)
		us.stopManager() // its DNS server stops with it
		eu.gslbReconcile.reset()
		start := time.Now()
		waitServed(t, "us silent: eu serves only its own", []string{"192.0.2.1"}, eu)
		t.Logf("dead peer: us stopped -> eu drops its IP after %s (interval 1 s, peer timeout 500 ms)", time.Since(start).Round(10*time.Millisecond))
		time.Sleep(2 * time.Second) // a few more reconciles against the silent peer
		// The peers are asked at once, each under the peer timeout: a silent one holds a
		// reconcile for the timeout. A peer query without one would hang the reconcile, and eu
		// would never drop us's IP (the wait above) nor report PeerErrors (below); the longest
		// reconcile is a figure, logged.
		longestReconcile := eu.gslbReconcile.get()
		t.Logf("dead peer: longest eu reconcile %s (peer timeout 500 ms)", longestReconcile.Round(time.Millisecond))
		var g dnsv1.Gslb
		eventually(t, 10*time.Second, "PeerErrors on eu", func() error {
			if err := eu.client.Get(eu.ctx(), client.ObjectKey{Namespace: "apps", Name: "app"}, &g); err != nil {
				return err
			}
			for _, c := range g.Status.Conditions {
				if c.Type == dnsv1.ConditionReady && c.Reason == dnsv1.ReasonPeerErrors {
					return nil
				}
			}
			return fmt.Errorf("conditions %+v", g.Status.Conditions)
		})
	})
}
