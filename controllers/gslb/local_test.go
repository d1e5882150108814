package gslb

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"

	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
)

// TestLBTargets_HostnamesAreResolved: a load balancer that publishes only a hostname (AWS ELBs
// do) is resolved to its addresses, through a real DNS server on loopback; IPs are taken as they
// are, IPv4-mapped IPv6 unmapped, duplicates dropped, and a name that does not resolve adds
// nothing.
func TestLBTargets_HostnamesAreResolved(t *testing.T) {
	addr := dnstest.HandleUDP(t, "127.0.0.1", dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		m.Authoritative = true
		switch {
		case q.Question[0].Name == "lb-123.elb.example.test." && q.Question[0].Qtype == dns.TypeA:
			for _, s := range []string{"lb-123.elb.example.test. 60 IN A 192.0.2.44", "lb-123.elb.example.test. 60 IN A 192.0.2.45"} {
				rr, _ := dns.NewRR(s)
				m.Answer = append(m.Answer, rr)
			}
		case q.Question[0].Name != "lb-123.elb.example.test.":
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	}))
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", addr)
	}}
	got := lbTargets(context.Background(), res, []corev1.LoadBalancerIngress{
		{IP: "192.0.2.1"},
		{IP: "::ffff:192.0.2.1"},
		{Hostname: "lb-123.elb.example.test"},
		{Hostname: "gone.elb.example.test"},
		{IP: "not-an-ip"},
	}, 2*time.Second)
	want := []string{"192.0.2.1", "192.0.2.44", "192.0.2.45"}
	if !slices.Equal(got, want) {
		t.Fatalf("lbTargets = %v, want %v", got, want)
	}
	if got := lbTargets(context.Background(), nil, []corev1.LoadBalancerIngress{{Hostname: "lb-123.elb.example.test"}}, time.Second); len(got) != 0 {
		t.Fatalf("without a resolver a hostname adds nothing, got %v", got)
	}
}
