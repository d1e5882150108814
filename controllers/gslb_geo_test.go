package controllers_test

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/geotest"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// geoAnswer asks addr for app.gslb.test A with an ECS option of subnet (an invalid prefix: no
// option, from the address src when valid) and returns the addresses and the scope back.
func geoAnswer(t *testing.T, addr string, subnet netip.Prefix, src netip.Addr) ([]string, int) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion("app.gslb.test.", dns.TypeA)
	m.SetEdns0(1232, false)
	if subnet.IsValid() {
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1,
			SourceNetmask: uint8(subnet.Bits()), Address: net.IP(subnet.Addr().AsSlice())})
	}
	c := &dns.Client{Timeout: 2 * time.Second}
	if src.IsValid() {
		c.Dialer = &net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.UDPAddr{IP: net.IP(src.AsSlice())}}
	}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s (ECS %v): %v", addr, subnet, err)
	}
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	slices.Sort(out)
	scope := -1
	for _, o := range r.IsEdns0().Option {
		if e, ok := o.(*dns.EDNS0_SUBNET); ok {
			scope = int(e.SourceScope)
		}
	}
	return out, scope
}

// TestGslb_GeoAnswersByClientSubnet: two clusters, eu (192.0.2.1) and us
// (192.0.2.2), with a geo Gslb {DE: eu, continent:NA: us}, default eu, and the same generated
// GeoIP database (--geoip-database). Both servers answer a client subnet in DE with eu's
// target and one in the US with us's, each with the database network's scope; a JP subnet
// (no region) and a subnet the database does not know get the default; without ECS the
// resolver's address decides. us unready: the US subnet falls back to the default's target;
// eu (the default) unready: DE falls back to every other tag's.
func TestGslb_GeoAnswersByClientSubnet(t *testing.T) {
	db := geotest.Write(t,
		geotest.Network{CIDR: "198.18.0.0/24", Country: "DE", Continent: "EU"},
		geotest.Network{CIDR: "198.18.1.0/24", Country: "US", Continent: "NA"},
		geotest.Network{CIDR: "198.18.2.0/24", Country: "JP", Continent: "AS"},
		geotest.Network{CIDR: "127.0.34.96/28", Country: "CA", Continent: "NA"},
	)
	port := strconv.Itoa(ports.TCPUDP(t, "127.0.34.11", "127.0.34.12"))
	euAddr, usAddr := "127.0.34.11:"+port, "127.0.34.12:"+port
	opts := clusterOptions{GeoIPDatabase: db}
	eu := startGslbClusterWith(t, "eu", euAddr, []gslb.Peer{{GeoTag: "us", Addr: usAddr}}, opts, "192.0.2.1")
	us := startGslbClusterWith(t, "us", usAddr, []gslb.Peer{{GeoTag: "eu", Addr: euAddr}}, opts, "192.0.2.2")
	strategy := dnsv1.GslbStrategy{Type: dnsv1.GslbGeo, GeoRegions: map[string]string{"DE": "eu", "continent:NA": "us"}, DefaultGeoTag: "eu", DNSTTLSeconds: 5}
	for _, g := range []*gslbCluster{eu, us} {
		g.create(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
			ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.gslb.test"},
			ZoneRef: dnsv1.ZoneReference{Name: "gslb"}, Strategy: strategy}})
	}
	de, usNet, jp, unknown := netip.MustParsePrefix("198.18.0.0/24"), netip.MustParsePrefix("198.18.1.0/24"),
		netip.MustParsePrefix("198.18.2.0/24"), netip.MustParsePrefix("198.18.3.0/24")
	type ask struct {
		what   string
		subnet netip.Prefix
		src    netip.Addr
		want   []string
		scope  int // -1: no ECS back; -2: any scope
	}
	waitGeo := func(asks ...ask) {
		t.Helper()
		for _, s := range []*gslbCluster{eu, us} {
			for _, a := range asks {
				eventually(t, 20*time.Second, fmt.Sprintf("%s at %s", a.what, s.geo), func() error {
					got, scope := geoAnswer(t, s.dnsAddr, a.subnet, a.src)
					if !slices.Equal(got, a.want) || (a.scope >= 0 && scope != a.scope) || (a.scope == -1 && scope != -1) || (a.scope == -2 && scope < 0) {
						return fmt.Errorf("served %v with scope %d, want %v with scope %d", got, scope, a.want, a.scope)
					}
					return nil
				})
			}
		}
	}
	start := time.Now()
	waitGeo(
		ask{"DE subnet: eu", de, netip.Addr{}, []string{"192.0.2.1"}, 24},
		ask{"US subnet: us", usNet, netip.Addr{}, []string{"192.0.2.2"}, 24},
		ask{"JP subnet (no region): the default", jp, netip.Addr{}, []string{"192.0.2.1"}, 24},
		ask{"unknown subnet: the default", unknown, netip.Addr{}, []string{"192.0.2.1"}, -2},
		ask{"no ECS, resolver in CA (continent NA): us", netip.Prefix{}, netip.MustParseAddr("127.0.34.99"), []string{"192.0.2.2"}, -1},
	)
	t.Logf("geo answers at both servers %s after the Gslbs", time.Since(start).Round(10*time.Millisecond))

	us.setReady(t, false)
	start = time.Now()
	waitGeo(ask{"us unready: US subnet gets the default's", usNet, netip.Addr{}, []string{"192.0.2.1"}, 24})
	t.Logf("us unready -> the US subnet falls back to eu at both servers after %s", time.Since(start).Round(10*time.Millisecond))
	us.setReady(t, true)
	waitGeo(ask{"us ready again", usNet, netip.Addr{}, []string{"192.0.2.2"}, 24})

	eu.setReady(t, false)
	waitGeo(
		ask{"eu (the default) unready: DE gets every other tag's", de, netip.Addr{}, []string{"192.0.2.2"}, 24},
		ask{"eu unready: US keeps us", usNet, netip.Addr{}, []string{"192.0.2.2"}, 24},
	)
	eu.setReady(t, true)
	waitGeo(ask{"eu ready again", de, netip.Addr{}, []string{"192.0.2.1"}, 24})

	var g dnsv1.Gslb
	eventually(t, 10*time.Second, "eu's status", func() error {
		if err := eu.client.Get(eu.ctx(), client.ObjectKey{Namespace: "apps", Name: "app"}, &g); err != nil {
			return err
		}
		if got := g.Status.HealthyRecords["app.gslb.test"]; !slices.Equal(got, []string{"192.0.2.1", "192.0.2.2"}) {
			return fmt.Errorf("healthyRecords %v", got)
		}
		for _, c := range g.Status.Conditions {
			if c.Type == dnsv1.ConditionReady && c.Status == metav1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", g.Status.Conditions)
	})
}
