package controllers_test

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/rfc2136solver"
)

// dropFirst is a listener whose first accepted connection is closed at once: a peer whose
// first try fails (a reset, a restart) and whose next one succeeds.
type dropFirst struct {
	net.Listener
	accepted atomic.Int32
}

func (l *dropFirst) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.accepted.Add(1) > 1 {
			return c, err
		}
		_ = c.Close()
	}
}

// relayPeer is a fake Gslb peer cluster on 127.0.0.1: over UDP it serves localtargets for the
// Gslb controller, over TCP (first connection dropped) it takes UPDATEs signed with keyName,
// NOERROR, and keeps their TXT values.
type relayPeer struct {
	addr string
	tcp  *dropFirst
	mu   sync.Mutex
	txt  []string
}

func startRelayPeer(t *testing.T, keyName, secret string) *relayPeer {
	t.Helper()
	p := &relayPeer{}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		switch {
		case q.Opcode == dns.OpcodeUpdate && (q.IsTsig() == nil || w.TsigStatus() != nil):
			m.Rcode = dns.RcodeNotAuth
		case q.Opcode == dns.OpcodeUpdate:
			p.mu.Lock()
			for _, rr := range q.Ns {
				if txt, ok := rr.(*dns.TXT); ok && txt.Hdr.Class == dns.ClassINET {
					p.txt = append(p.txt, strings.Join(txt.Txt, ""))
				}
			}
			p.mu.Unlock()
			m.SetTsig(keyName, dns.HmacSHA256, 300, time.Now().Unix())
		case strings.EqualFold(q.Question[0].Name, "localtargets-app.gslb.edge.test."):
			m.Authoritative = true
			rr, _ := dns.NewRR("localtargets-app.gslb.edge.test. 5 IN A 192.0.2.77")
			m.Answer = append(m.Answer, rr)
		}
		_ = w.WriteMsg(m)
	})
	secrets := map[string]string{keyName: secret}
	for range 5 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err != nil {
			_ = pc.Close()
			continue
		}
		p.addr, p.tcp = pc.LocalAddr().String(), &dropFirst{Listener: ln}
		accept := func(dns.Header) dns.MsgAcceptAction { return dns.MsgAccept } // UPDATEs too
		for _, srv := range []*dns.Server{{PacketConn: pc, Handler: h, TsigSecret: secrets, MsgAcceptFunc: accept},
			{Listener: p.tcp, Handler: h, TsigSecret: secrets, MsgAcceptFunc: accept}} {
			go func() { _ = srv.ActivateAndServe() }()
			t.Cleanup(func() { _ = srv.Shutdown() })
		}
		return p
	}
	t.Fatal("no free loopback port for UDP and TCP")
	return nil
}

func (p *relayPeer) values() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.txt)
}

// TestDynamicUpdates_GslbRelayRetriedAndEdgePeers: with no --ext-gslb-clusters, an UPDATE of a
// Gslb zone is relayed to the peers the Gslb found in the edge zone's NS set (here one fake
// peer, us); the peer's first connection fails and the relay tries again, so the UPDATE is
// NOERROR only once the peer took it.
func TestDynamicUpdates_GslbRelayRetriedAndEdgePeers(t *testing.T) {
	const keyName, secret = "gslb-acme.", "Z3NsYi1lZGdlLXBlZXJzLXJlbGF5LWtleS1zZWNyZXQ="
	bin := solver(t)
	peer := startRelayPeer(t, keyName, secret)
	_, peerPort, _ := net.SplitHostPort(peer.addr)
	// The edge zone's server: the referral for gslb.edge.test naming this cluster (eu) and us.
	edgeAddr := dnstest.ServeEdge(t, "127.0.0.1", dnstest.Edge{Zone: "edge.test", Child: "gslb.edge.test",
		Glue: map[string]netip.Addr{"eu": netip.MustParseAddr("127.0.0.11"), "us": netip.MustParseAddr("127.0.0.1")}})
	var port int
	if _, err := fmt.Sscan(peerPort, &port); err != nil {
		t.Fatal(err)
	}
	c := startClusterWith(t, "cluster-eu", time.Hour, time.Hour, clusterOptions{
		DNSAddr: "127.0.0.1:0", GeoTag: "eu", GslbInterval: time.Second, PeerTimeout: 500 * time.Millisecond, PeerPort: port,
	})
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "dns"}, Type: "dnsplane.io/local"},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "edge-dns"}, Type: "dnsplane.io/local",
			StringData: map[string]string{"DNS_ADDRESS": edgeAddr}},
		tsigSecret("apps", "acme-key", keyName, "hmac-sha256", secret))
	edge := zoneObj("apps", "edge", "edge.test", func(z *dnsv1.DNSZone) { z.Spec.ProviderRef.Name = "edge-dns" })
	zone := zoneObj("apps", "gslb", "gslb.edge.test", func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "acme-key"}}}
	})
	c.create(edge, zone)
	c.waitCondition(zone, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 30*time.Second)
	c.waitCondition(zone, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved, 30*time.Second)
	c.loadBalancedApp(t, "192.0.2.1")
	c.create(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
		ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.gslb.edge.test"},
		ZoneRef: dnsv1.ZoneReference{Name: "gslb"}, Edge: &dnsv1.GslbEdge{ZoneRef: dnsv1.ZoneReference{Name: "edge"}},
		Strategy: dnsv1.GslbStrategy{Type: "roundRobin", DNSTTLSeconds: 5}}})
	eventually(t, 20*time.Second, "status.peers naming the discovered peer", func() error {
		g := c.gslbStatus(t)
		if len(g.Status.Peers) != 1 || g.Status.Peers[0].Address != peer.addr {
			return fmt.Errorf("peers %+v, want only us at %s", g.Status.Peers, peer.addr)
		}
		return nil
	})

	ch := rfc2136solver.Challenge{Nameserver: c.dnsAddr, Zone: "gslb.edge.test.", FQDN: "_acme-challenge.app.gslb.edge.test.",
		Value: "edge-token", KeyName: keyName, Algorithm: "HMACSHA256", Secret: secret}
	start := time.Now()
	if err := rfc2136solver.Present(ctxT(t), bin, ch); err != nil {
		var list corev1.EventList
		_ = c.client.List(c.ctx(), &list, client.InNamespace("apps"))
		for _, e := range list.Items {
			if e.InvolvedObject.Name == "gslb" {
				t.Logf("Event %s: %s", e.Reason, e.Message)
			}
		}
		t.Fatal(err)
	}
	t.Logf("UPDATE to NOERROR, relayed to a discovered peer whose first connection failed: %s", time.Since(start).Round(time.Millisecond))
	if got := peer.values(); !slices.Equal(got, []string{"edge-token"}) {
		t.Fatalf("right after NOERROR the discovered peer took %q (%d TCP connections); want [edge-token]", got, peer.tcp.accepted.Load())
	}
	waitTXT(t, c.dnsAddr, ch.FQDN, "edge-token")
}
