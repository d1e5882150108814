package controllers_test

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// hostilePeer serves, at a loopback address, answers a Gslb must reject: wrongName answers for
// another owner name in the question's place, oversized sends 100 A records.
func hostilePeer(t *testing.T, host string, oversized bool) string {
	t.Helper()
	return dnstest.HandleUDP(t, host, dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		if oversized {
			for i := range 100 {
				rr, _ := dns.NewRR(fmt.Sprintf("%s 30 IN A 203.0.113.%d", q.Question[0].Name, i+1))
				m.Answer = append(m.Answer, rr)
			}
		} else {
			m.Question[0].Name = "evil.test."
			rr, _ := dns.NewRR("evil.test. 30 IN A 203.0.113.66")
			m.Answer = append(m.Answer, rr)
		}
		_ = w.WriteMsg(m)
	}))
}

// gslbStatus reads the Gslb apps/app (an empty one while the cache has not seen it yet).
func (c *cluster) gslbStatus(t *testing.T) *dnsv1.Gslb {
	t.Helper()
	g := &dnsv1.Gslb{}
	if err := c.client.Get(c.ctx(), client.ObjectKey{Namespace: "apps", Name: "app"}, g); err != nil {
		t.Logf("read Gslb: %v", err)
	}
	return g
}

func gslbReady(g *dnsv1.Gslb) (string, string) {
	for _, c := range g.Status.Conditions {
		if c.Type == dnsv1.ConditionReady {
			return c.Reason, c.Message
		}
	}
	return "", ""
}

// TestGslb_IngressHealthEdgeAndHostilePeers: a Gslb over an Ingress. Ready pods behind an Ingress
// without a load-balancer address are still Unhealthy (a hidden failure); with an address the
// host is served. Peers that answer for another name or oversized are rejected and counted as
// having no targets. With spec.edge the cluster's NS and glue appear in the edge zone. A missing
// backend Service is NotFound. Deleting the Gslb removes everything it published.
func TestGslb_IngressHealthEdgeAndHostilePeers(t *testing.T) {
	wrongName := hostilePeer(t, "127.0.0.13", false)
	oversized := hostilePeer(t, "127.0.0.14", true)
	c := startClusterWith(t, "cluster-eu", time.Hour, time.Hour, clusterOptions{
		DNSAddr: "127.0.0.1:0", GeoTag: "eu", GslbInterval: time.Second, PeerTimeout: 500 * time.Millisecond, NSAddress: "127.0.0.11",
		Peers: []gslb.Peer{{GeoTag: "ap", Addr: wrongName}, {GeoTag: "sa", Addr: oversized}},
	})
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "dns"}, Type: "dnsplane.io/local"})
	edge, zone := zoneObj("apps", "edge", "edge.test", nil), zoneObj("apps", "gslb", "gslb.edge.test", nil)
	c.create(edge, zone)
	c.waitCondition(edge, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 30*time.Second)
	c.waitCondition(zone, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 30*time.Second)
	c.create(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}})
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
		Host: "app.gslb.edge.test", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
			Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	c.create(ing)
	c.create(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
		ResourceRef: dnsv1.ResourceReference{Kind: "Ingress", Name: "app"}, ZoneRef: dnsv1.ZoneReference{Name: "gslb"},
		Edge: &dnsv1.GslbEdge{ZoneRef: dnsv1.ZoneReference{Name: "edge"}}, Strategy: dnsv1.GslbStrategy{Type: "roundRobin", DNSTTLSeconds: 5}}})

	eventually(t, 20*time.Second, "hidden failure: Unhealthy, NoHealthyTargets", func() error {
		g := c.gslbStatus(t)
		reason, msg := gslbReady(g)
		if g.Status.ServiceHealth["app.gslb.edge.test"] != "Unhealthy" || reason != dnsv1.ReasonNoHealthyTargets || !strings.Contains(msg, "no load-balancer address") {
			return fmt.Errorf("health %v, Ready %s: %s", g.Status.ServiceHealth, reason, msg)
		}
		return nil
	})

	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.50"}}
	if err := c.client.Status().Update(c.ctx(), ing); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "served with only this cluster's target", func() error {
		if got := served(t, c.dnsAddr, "app.gslb.edge.test"); !slices.Equal(got, []string{"192.0.2.50"}) {
			return fmt.Errorf("served %v", got)
		}
		return nil
	})
	// The Gslb's Served mirrors its DNSEndpoint's: the embedded server answers the change.
	eventually(t, 20*time.Second, "the Gslb is Served", func() error {
		for _, cond := range c.gslbStatus(t).Status.Conditions {
			if cond.Type == dnsv1.ConditionServed && cond.Status == metav1.ConditionTrue && cond.Reason == dnsv1.ReasonServed &&
				strings.HasPrefix(cond.Message, "DNSEndpoint ") {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", c.gslbStatus(t).Status.Conditions)
	})
	eventually(t, 10*time.Second, "hostile peers rejected", func() error {
		g := c.gslbStatus(t)
		reason, msg := gslbReady(g)
		if reason != dnsv1.ReasonPeerErrors || len(g.Status.Peers) != 2 || g.Status.Peers[0].Error == "" || g.Status.Peers[1].Error == "" {
			return fmt.Errorf("Ready %s: %s; peers %+v", reason, msg, g.Status.Peers)
		}
		t.Logf("peers: %q / %q", g.Status.Peers[0].Error, g.Status.Peers[1].Error)
		return nil
	})
	for range 20 {
		for _, ip := range served(t, c.dnsAddr, "app.gslb.edge.test") {
			if strings.HasPrefix(ip, "203.0.113.") {
				t.Fatalf("a hostile peer's target is served: %s", ip)
			}
		}
	}

	// Edge delegation: the edge zone holds this cluster's NS and glue for the Gslb zone.
	eventually(t, 20*time.Second, "edge NS and glue", func() error {
		tr := &dns.Transfer{}
		m := new(dns.Msg)
		m.SetAxfr("edge.test.")
		ch, err := tr.In(m, c.dnsAddr)
		if err != nil {
			return err
		}
		var ns, glue bool
		for env := range ch {
			if env.Error != nil {
				return env.Error
			}
			for _, rr := range env.RR {
				if n, ok := rr.(*dns.NS); ok && n.Hdr.Name == "gslb.edge.test." && n.Ns == "ns-eu.gslb.edge.test." {
					ns = true
				}
				if a, ok := rr.(*dns.A); ok && a.Hdr.Name == "ns-eu.gslb.edge.test." && a.A.String() == "127.0.0.11" {
					glue = true
				}
			}
		}
		if !ns || !glue {
			return fmt.Errorf("edge.test: NS %t, glue %t", ns, glue)
		}
		return nil
	})

	// A missing backend Service is NotFound.
	if err := c.client.Delete(c.ctx(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "NotFound", func() error {
		if h := c.gslbStatus(t).Status.ServiceHealth["app.gslb.edge.test"]; h != "NotFound" {
			return fmt.Errorf("health %s", h)
		}
		return nil
	})

	// Deleting the Gslb removes its DNSEndpoint and edge DNSRecord, and what they published.
	if err := c.client.Delete(c.ctx(), &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "everything removed", func() error {
		var g dnsv1.Gslb
		if err := c.client.Get(c.ctx(), client.ObjectKey{Namespace: "apps", Name: "app"}, &g); err == nil {
			return fmt.Errorf("Gslb still there: %+v", g.Status.Conditions)
		}
		var eps dnsv1.DNSEndpointList
		var recs dnsv1.DNSRecordList
		_ = c.client.List(c.ctx(), &eps, client.InNamespace("apps"))
		_ = c.client.List(c.ctx(), &recs, client.InNamespace("apps"))
		if len(eps.Items) != 0 || len(recs.Items) != 0 {
			return fmt.Errorf("%d DNSEndpoints, %d DNSRecords left", len(eps.Items), len(recs.Items))
		}
		m := new(dns.Msg)
		m.SetQuestion("ns-eu.gslb.edge.test.", dns.TypeA)
		if r, _, err := new(dns.Client).Exchange(m, c.dnsAddr); err != nil || len(r.Answer)+len(r.Extra) > 0 && hasA(r) {
			return fmt.Errorf("glue still served: %v %v", r, err)
		}
		return nil
	})
}

func hasA(r *dns.Msg) bool {
	for _, rr := range append(r.Answer, r.Extra...) {
		if _, ok := rr.(*dns.A); ok {
			return true
		}
	}
	return false
}

// TestGslb_PeersDiscoveredFromTheEdgeNSSet: with no --ext-gslb-clusters, the peers are the other
// clusters of the edge zone's NS set for the Gslb zone (ns-<geotag>.<zone> with glue), queried at
// --gslb-peer-port. The edge zone's server is a fake answering that referral; the us peer is a
// fake serving its localtargets.
func TestGslb_PeersDiscoveredFromTheEdgeNSSet(t *testing.T) {
	// The us peer: localtargets-app.gslb.edge.test A 192.0.2.77 on 127.0.0.15.
	peerAddr := dnstest.HandleUDP(t, "127.0.0.15", dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		m.Authoritative = true
		if q.Question[0].Qtype == dns.TypeA && strings.EqualFold(q.Question[0].Name, "localtargets-app.gslb.edge.test.") {
			rr, _ := dns.NewRR("localtargets-app.gslb.edge.test. 5 IN A 192.0.2.77")
			m.Answer = append(m.Answer, rr)
		}
		_ = w.WriteMsg(m)
	}))
	_, peerPort, _ := net.SplitHostPort(peerAddr)

	// The edge zone's server: SOA for edge.test, and the referral for gslb.edge.test naming
	// this cluster (eu) and us.
	edgeAddr := dnstest.ServeEdge(t, "127.0.0.16", dnstest.Edge{Zone: "edge.test", Child: "gslb.edge.test",
		Glue: map[string]netip.Addr{"eu": netip.MustParseAddr("127.0.0.11"), "us": netip.MustParseAddr("127.0.0.15")}})

	port, _ := strconv.Atoi(peerPort)
	c := startClusterWith(t, "cluster-eu", time.Hour, time.Hour, clusterOptions{
		DNSAddr: "127.0.0.1:0", GeoTag: "eu", GslbInterval: time.Second, PeerTimeout: 500 * time.Millisecond, PeerPort: port,
	})
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "dns"}, Type: "dnsplane.io/local"},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "edge-dns"}, Type: "dnsplane.io/local",
			StringData: map[string]string{"DNS_ADDRESS": edgeAddr}})
	edge := zoneObj("apps", "edge", "edge.test", func(z *dnsv1.DNSZone) { z.Spec.ProviderRef.Name = "edge-dns" })
	zone := zoneObj("apps", "gslb", "gslb.edge.test", nil)
	c.create(edge, zone)
	c.waitCondition(edge, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 30*time.Second)
	c.waitCondition(zone, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 30*time.Second)
	c.loadBalancedApp(t, "192.0.2.1")
	c.create(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
		ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.gslb.edge.test"},
		ZoneRef: dnsv1.ZoneReference{Name: "gslb"}, Edge: &dnsv1.GslbEdge{ZoneRef: dnsv1.ZoneReference{Name: "edge"}},
		Strategy: dnsv1.GslbStrategy{Type: "roundRobin", DNSTTLSeconds: 5}}})
	eventually(t, 20*time.Second, "the discovered peer's target served", func() error {
		if got := served(t, c.dnsAddr, "app.gslb.edge.test"); !slices.Equal(got, []string{"192.0.2.1", "192.0.2.77"}) {
			return fmt.Errorf("served %v", got)
		}
		return nil
	})
	// The answer is served before the reconcile writes the Gslb's status (and a conflicting
	// write retries it), so the status is waited for, not read once.
	eventually(t, 20*time.Second, "status.peers naming the discovered peer", func() error {
		g := c.gslbStatus(t)
		if len(g.Status.Peers) != 1 || g.Status.Peers[0].GeoTag != "us" || g.Status.Peers[0].Address != "127.0.0.15:"+peerPort {
			return fmt.Errorf("peers %+v, want only us at 127.0.0.15:%s", g.Status.Peers, peerPort)
		}
		return nil
	})
}

// TestGslb_WeightedOnAProviderWithoutWeightsIsNotCapable: a weighted Gslb whose zone lives on
// PowerDNS (no weighted routing) says NotCapable rather than pretending, and still publishes
// localtargets-<host> for its peers.
func TestGslb_WeightedOnAProviderWithoutWeightsIsNotCapable(t *testing.T) {
	srv := pdnstest.Start(t)
	c := startClusterWith(t, "cluster-eu", time.Hour, time.Hour, clusterOptions{
		DNSAddr: "127.0.0.1:0", GeoTag: "eu", GslbInterval: time.Second, PeerTimeout: 500 * time.Millisecond,
	})
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "dns"}, Type: "dnsplane.io/pdns",
			StringData: map[string]string{"PDNS_API_URL": srv.APIURL, "PDNS_API_KEY": srv.Key, "DNS_ADDRESS": srv.DNSAddr}})
	zone := zoneObj("apps", "gslb", "weighted.test", nil)
	c.create(zone)
	c.waitCondition(zone, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 30*time.Second)
	c.loadBalancedApp(t, "192.0.2.1")
	c.create(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
		ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.weighted.test"},
		ZoneRef:  dnsv1.ZoneReference{Name: "gslb"},
		Strategy: dnsv1.GslbStrategy{Type: "weighted", Weights: map[string]int32{"eu": 70, "us": 30}, DNSTTLSeconds: 5}}})
	eventually(t, 20*time.Second, "NotCapable, localtargets published", func() error {
		reason, msg := gslbReady(c.gslbStatus(t))
		if reason != dnsv1.ReasonNotCapable {
			return fmt.Errorf("Ready reason %s: %s", reason, msg)
		}
		if got := served(t, srv.DNSAddr, "localtargets-app.weighted.test"); !slices.Equal(got, []string{"192.0.2.1"}) {
			return fmt.Errorf("localtargets served %v", got)
		}
		return nil
	})
	if got := served(t, srv.DNSAddr, "app.weighted.test"); len(got) != 0 {
		t.Fatalf("app.weighted.test served %v on a provider without weighted routing", got)
	}
}

// TestGslb_MissingIngressIsResourceNotFound: a Gslb whose Ingress does not
// exist says so with ResourceNotFound and shows it in status.serviceHealth, rather than only "no
// cluster has healthy targets" with an empty serviceHealth.
func TestGslb_MissingIngressIsResourceNotFound(t *testing.T) {
	c := startClusterWith(t, "cluster-eu", time.Hour, time.Hour, clusterOptions{
		DNSAddr: "127.0.0.1:0", GeoTag: "eu", GslbInterval: time.Second, PeerTimeout: 500 * time.Millisecond,
	})
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "dns"}, Type: "dnsplane.io/local"})
	zone := zoneObj("apps", "gslb", "missing.test", nil)
	c.create(zone)
	c.waitCondition(zone, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 30*time.Second)
	c.create(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
		ResourceRef: dnsv1.ResourceReference{Kind: "Ingress", Name: "web"},
		ZoneRef:     dnsv1.ZoneReference{Name: "gslb"}, Strategy: dnsv1.GslbStrategy{Type: "roundRobin"}}})
	eventually(t, 20*time.Second, "ResourceNotFound naming the Ingress, in serviceHealth", func() error {
		g := c.gslbStatus(t)
		reason, msg := gslbReady(g)
		if reason != dnsv1.ReasonResourceNotFound || !strings.Contains(msg, "Ingress apps/web does not exist") {
			return fmt.Errorf("Ready reason %s: %s", reason, msg)
		}
		if h := g.Status.ServiceHealth["Ingress/web"]; h != "NotFound" {
			return fmt.Errorf("serviceHealth %v", g.Status.ServiceHealth)
		}
		return nil
	})
}
