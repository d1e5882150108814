package controllers_test

import (
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// ulaOnLoopback adds each address (a ULA IPv6 address) to lo for the test, and deletes it at the
// end; one a killed run left is reused. Without the right to (not root), the test is skipped,
// and under CI, where it must run, it fails.
func ulaOnLoopback(t *testing.T, addrs ...netip.Addr) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("IPv6 targets on lo need root under CI")
		}
		t.Skip("IPv6 targets on lo need root (ip -6 addr add)")
	}
	for _, a := range addrs {
		if !a.Is6() || !netip.MustParsePrefix("fc00::/7").Contains(a) {
			t.Fatalf("%s is not a ULA address: only the test's own ULA addresses go on lo", a)
		}
		prefix := a.String() + "/128"
		out, err := exec.Command("ip", "-6", "addr", "add", prefix, "dev", "lo", "nodad").CombinedOutput()
		if err != nil && !strings.Contains(string(out), "File exists") {
			t.Fatalf("ip -6 addr add %s dev lo: %v: %s", prefix, err, out)
		}
		t.Cleanup(func() { _ = exec.Command("ip", "-6", "addr", "del", prefix, "dev", "lo").Run() })
	}
}

// TestGslbHealth_DualStackTargetDownOnIPv4Only runs three clusters (eu, us, ap), each with its
// own API server, manager and embedded DNS server on its own loopback address (127.0.48.1 to
// .3), and a dual-stack target per cluster: an IPv4 backend (127.0.48.11 to .13) and an IPv6
// one on a ULA address added to lo for the test (fd00:48::11 to ::13), the two addresses of
// one load balancer. Failover with primary eu. eu's IPv4 backend answers 503 while its IPv6
// twin answers 200: us and ap call the IPv4 address Down (2 of 3 members; eu's own Down is not
// counted) and the IPv6 one Up, so every cluster's A fails over to us and ap while its AAAA
// keeps eu's IPv6 address: failover is decided per family, no family is empty, and Ready stays
// Published. Then every IPv4 backend answers 503: the IPv4 family has no Up target, so A
// serves its candidates all the same (failover: eu's), never empty, with Ready=False
// NoHealthyTargets, while AAAA keeps eu's Up address (docs/design.md, "Health and partitions",
// "Per family"). This is the dual-stack
// scenario of the kind suite, run here because the kind clusters' Pod network is IPv4 only
// (docs/reliability.md, "On kind: Gslb health under partitions").
func TestGslbHealth_DualStackTargetDownOnIPv4Only(t *testing.T) {
	geos := []string{"eu", "us", "ap"}
	ips, v4, v6 := map[string]netip.Addr{}, map[string]netip.Addr{}, map[string]netip.Addr{}
	for i, geo := range geos {
		ips[geo] = netip.AddrFrom4([4]byte{127, 0, 48, byte(1 + i)})
		v4[geo] = netip.AddrFrom4([4]byte{127, 0, 48, byte(11 + i)})
		v6[geo] = netip.MustParseAddr("fd00:48::" + []string{"11", "12", "13"}[i])
	}
	ulaOnLoopback(t, v6["eu"], v6["us"], v6["ap"])
	dnsPort := ports.TCPUDP(t, ips["eu"].String(), ips["us"].String(), ips["ap"].String())
	backendPort := ports.TCPUDP(t, v4["eu"].String(), v4["us"].String(), v4["ap"].String(), v6["eu"].String(), v6["us"].String(), v6["ap"].String())
	addr := func(geo string) string { return netip.AddrPortFrom(ips[geo], uint16(dnsPort)).String() }

	cs := map[string]*healthCluster{}
	backs6 := map[string]*backend{}
	for _, geo := range geos {
		var peers []gslb.Peer
		for _, p := range geos {
			if p != geo {
				peers = append(peers, gslb.Peer{GeoTag: p, Addr: addr(p)})
			}
		}
		g := startGslbClusterWith(t, geo, addr(geo), peers, clusterOptions{GslbSource: gslb.SourceAddrs{V4: ips[geo]}}, v4[geo].String(), v6[geo].String())
		cs[geo] = &healthCluster{gslbCluster: g, ip: ips[geo], backend: startBackend(t, v4[geo], backendPort)}
		backs6[geo] = startBackend(t, v6[geo], backendPort)
	}
	eu, us, ap := cs["eu"], cs["us"], cs["ap"]
	all := []*healthCluster{eu, us, ap}
	for _, c := range all {
		c.create(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
			ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.gslb.test"},
			ZoneRef:  dnsv1.ZoneReference{Name: "gslb"},
			Strategy: dnsv1.GslbStrategy{Type: "failover", PrimaryGeoTag: "eu", DNSTTLSeconds: 5},
			HealthCheck: &dnsv1.GslbHealthCheck{Protocol: "HTTP", Port: int32(backendPort), Path: "/healthz", IntervalSeconds: 1,
				TimeoutSeconds: 1, FailureThreshold: 2, SuccessThreshold: 1, IsolationHoldSeconds: ptr.To[int32](3600)},
		}})
	}
	primary := []string{v4["eu"].String(), v6["eu"].String()}
	waitAnswers(t, "primary eu, A and AAAA", primary, all...)
	// Every cluster has judged both of eu's addresses by quorum (not NotProbed) before the fault.
	for _, c := range all {
		for _, a := range primary {
			c.waitTarget(t, a, dnsv1.VerdictUp, dnsv1.TargetReasonHealthy, dnsv1.VerdictUp)
		}
	}

	eu.backend.status.Store(http.StatusServiceUnavailable)
	failedOver := []string{v4["us"].String(), v4["ap"].String(), v6["eu"].String()}
	took := waitAnswers(t, "A fails over to us and ap, AAAA keeps eu's", failedOver, all...)
	for _, c := range all {
		ts := c.waitTarget(t, v4["eu"].String(), dnsv1.VerdictDown, dnsv1.TargetReasonQuorumDown, dnsv1.VerdictDown)
		if ts.Served || ts.Family != dnsv1.FamilyIPv4 {
			t.Fatalf("%s: eu's IPv4 address %+v: want IPv4, not served", c.geo, ts)
		}
		ts = c.waitTarget(t, v6["eu"].String(), dnsv1.VerdictUp, dnsv1.TargetReasonHealthy, dnsv1.VerdictUp)
		if !ts.Served || ts.Family != dnsv1.FamilyIPv6 {
			t.Fatalf("%s: eu's IPv6 address %+v: want IPv6, served", c.geo, ts)
		}
		c.waitReady(t, metav1.ConditionTrue, dnsv1.ReasonPublished)
	}
	total, wrong := soak(t, 3*time.Second, failedOver, all...)
	if len(wrong) > 0 {
		t.Fatalf("eu's IPv4 address down, its IPv6 up: %d of %d answers were not us's and ap's A with eu's AAAA: %v", countAll(wrong), total, wrong)
	}
	t.Logf("503 at eu's IPv4 backend, 200 at its IPv6 one -> every cluster answers A %v and AAAA %v after %s; %d answers in a 3 s soak, 0 other or empty",
		failedOver[:2], failedOver[2:], took.Round(10*time.Millisecond), total)

	// Every IPv4 address down, every IPv6 one up: the IPv4 family has no Up target, so all of
	// its candidates go to the strategy (failover: the primary's), A is never empty, and Ready
	// says NoHealthyTargets; AAAA still keeps eu's Up address.
	for _, c := range all {
		c.backend.status.Store(http.StatusServiceUnavailable)
	}
	for _, c := range all {
		for _, geo := range geos {
			c.waitTarget(t, v4[geo].String(), dnsv1.VerdictDown, dnsv1.TargetReasonQuorumDown, dnsv1.VerdictDown)
		}
		c.waitReady(t, metav1.ConditionFalse, dnsv1.ReasonNoHealthyTargets)
	}
	took = waitAnswers(t, "every IPv4 address down: A the primary's all the same, AAAA eu's", primary, all...)
	total, wrong = soak(t, 3*time.Second, primary, all...)
	if len(wrong) > 0 {
		t.Fatalf("every IPv4 address down, IPv6 up: %d of %d answers were not eu's A and AAAA: %v", countAll(wrong), total, wrong)
	}
	t.Logf("503 at every IPv4 backend -> NoHealthyTargets, every cluster answers eu's A and AAAA (never an empty A) after %s; %d answers in a 3 s soak, 0 other or empty",
		took.Round(10*time.Millisecond), total)

	for _, c := range all {
		c.backend.status.Store(http.StatusOK)
	}
	for _, c := range all {
		c.waitReady(t, metav1.ConditionTrue, dnsv1.ReasonPublished)
	}
	took = waitAnswers(t, "every IPv4 address back", primary, all...)
	t.Logf("every IPv4 backend healthy again -> every cluster answers eu's A and AAAA, Published, after %s", took.Round(10*time.Millisecond))
}
