//go:build e2e

package e2e

// The geo kind scenario: a geo Gslb across the kind clusters that hack/e2e-kind.sh made, each
// manager reading the GeoIP database that the script wrote (hack/kind/geoipdb) into ConfigMap
// geoip and the chart mounts through gslb.geoip. The answers are asked from the host through
// each cluster's dns NodePort, with and without EDNS Client Subnet (RFC 7871).
//
//	E2E_KIND_GEOIP_NETS  the database's networks, CIDR=COUNTRY/CONTINENT, space-separated

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

// geoKindNets is what the scenario needs of E2E_KIND_GEOIP_NETS (hack/e2e-kind.sh): the
// documentation prefixes that ECS names, and the Pod network; the script adds the kind network.
const geoKindNets = "198.51.100.0/24=DE/EU 203.0.113.0/24=CA/NA 192.0.2.0/24=JP/AS 10.244.0.0/16=DE/EU"

// geoCase is one query: its ECS subnet ("" = none) and what it must get.
type geoCase struct {
	what   string
	subnet string // ECS address/prefix; "" sends no ECS
	tag    string // the geo tag whose targets answer (before the fallback)
	scope  uint8  // the answer's SCOPE PREFIX-LENGTH (with ECS)
}

// The Gslb's regions: DE -> eu, continent NA -> us, 192.0.2.128/25 -> ap; default us.
var geoCases = []geoCase{
	{"a German subnet (country DE)", "198.51.100.0/24", "eu", 24},
	{"a Canadian subnet (continent NA; CA is no region)", "203.0.113.0/24", "us", 24},
	{"the CIDR region", "192.0.2.128/25", "ap", 25},
	// Japan is no region: the default; the database's network 192.0.2.0/24 holds the CIDR
	// region's clients too, so the scope is lengthened past it (docs/design.md, "The scope").
	{"a Japanese /24 around the CIDR region", "192.0.2.0/24", "us", 25},
	// Not in the database: the default; the scope is the database's empty network around it
	// (64.0.0.0/2: no network of the database starts with the bits 01).
	{"a subnet the database does not know", "100.64.0.0/24", "us", 2},
	{"a German host (/32, scope from the database's /24)", "198.51.100.77/32", "eu", 24},
	// SOURCE PREFIX-LENGTH 0: no client address may be used (RFC 7871 §7.1.2): the default.
	{"source prefix 0", "0.0.0.0/0", "us", 0},
	// The host's address (the kind network) is in Germany.
	{"no ECS: the resolver's (host's) address", "", "eu", 0},
}

// TestKindGslbGeo: a geo Gslb (regions DE -> eu, continent:NA -> us, 192.0.2.128/25 -> ap,
// default us) over one target per cluster (the load-balancer address of a selector-less
// Service, written by the test, with a hand-written Ready EndpointSlice). Every cluster answers
// each of geoCases with its region's targets and the right scope; the host's queries without ECS
// are located by their source address; dnsplane_dnsserver_geo_queries_total of cluster 1's
// managers counts them by geo tag and ECS. Then ap's endpoint turns not Ready: the CIDR region's
// clients get the default tag's targets, with their own scope, at every cluster.
func TestKindGslbGeo(t *testing.T) {
	kindOnly(t)
	onFailure(t)
	nets := os.Getenv("E2E_KIND_GEOIP_NETS")
	if !strings.HasPrefix(nets, geoKindNets+" ") {
		t.Fatalf("E2E_KIND_GEOIP_NETS %q: want it to start with %q (hack/e2e-kind.sh writes the database)", nets, geoKindNets)
	}
	ns := kindRunName("kind-geo")
	zone := kindRunName("geo") + ".kind.test"
	host := "app." + zone
	targets := map[string]string{} // geo tag -> its cluster's target
	for i, c := range suite.clusters {
		targets[c.geo] = fmt.Sprintf("198.18.0.%d", i+1)
	}
	t.Cleanup(func() {
		for _, c := range suite.clusters {
			cx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_ = c.C().DeleteAllOf(cx, &dnsv1.Gslb{}, client.InNamespace(ns))
			cancel()
			deleteNamespace(t, c, ns)
		}
	})
	slice := func(ready bool) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "app-1", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.201"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}},
		}
	}
	for _, c := range suite.clusters {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
		c.apply(t, namespace(ns), localSecretObj(ns),
			&dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gslb"}, Spec: dnsv1.DNSZoneSpec{
				Zone: zone, ProviderRef: dnsv1.SecretReference{Name: localSecret}}}, svc)
		// No load-balancer controller on kind: write the address one would have.
		eventually(t, testrun.HangTimeout, "Service app's status", func() error {
			if err := c.C().Get(ctx(t), clientKey(svc), svc); err != nil {
				return err
			}
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: targets[c.geo]}}
			return c.C().Status().Update(ctx(t), svc)
		})
		c.apply(t, slice(true), &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: dnsv1.GslbSpec{
			ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{host},
			ZoneRef: dnsv1.ZoneReference{Name: "gslb"},
			Strategy: dnsv1.GslbStrategy{Type: "geo", DefaultGeoTag: "us", DNSTTLSeconds: 5,
				GeoRegions: map[string]string{"DE": "eu", "continent:NA": "us", "192.0.2.128/25": "ap"}}}})
	}
	for _, c := range suite.clusters {
		c.waitCondition(t, &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, testrun.HangTimeout)
	}
	// want is a case's answer: its tag's target, else (a tag with no cluster: 2 clusters) the
	// default's, per the fallback order.
	want := func(tag string, down ...string) []string {
		if tg, ok := targets[tag]; ok && !slices.Contains(down, tag) {
			return []string{tg}
		}
		return []string{targets["us"]}
	}
	check := func(what string, down ...string) {
		t.Helper()
		for _, c := range suite.clusters {
			start := time.Now()
			eventually(t, testrun.HangTimeout, fmt.Sprintf("%s: cluster %s answers every region", what, c.geo), func() error {
				for _, gc := range geoCases {
					if err := geoAnswer(c.dnsAddr, host, gc, want(gc.tag, down...)); err != nil {
						return err
					}
				}
				return nil
			})
			t.Logf("%s: cluster %s answers all %d cases right after %s", what, c.geo, len(geoCases), time.Since(start).Round(10*time.Millisecond))
		}
		for _, gc := range geoCases {
			t.Logf("  %-52s ECS %-16s -> %v (tag %s), scope %d", gc.what, gc.subnet, want(gc.tag, down...), gc.tag, gc.scope)
		}
	}

	c1 := suite.clusters[0]
	metrics := newGeoMetrics(t, c1)
	before := metrics.read(t)
	check("every target Ready")
	after := metrics.read(t)
	// Each check asked every case at least once of c1's dns Service, which spreads them over
	// its replicas: the sum over the replicas grew for each (geo tag, ecs) asked.
	for _, key := range []string{`ecs="true",geo_tag="eu"`, `ecs="true",geo_tag="us"`, `ecs="true",geo_tag="ap"`, `ecs="false",geo_tag="eu"`} {
		if after[key] <= before[key] {
			t.Errorf("dnsplane_dnsserver_geo_queries_total{%s} at cluster %s: %v before, %v after the queries", key, c1.geo, before[key], after[key])
		}
	}
	t.Logf("dnsplane_dnsserver_geo_queries_total at cluster %s, both replicas: before %v, after %v", c1.geo, before, after)

	if _, ok := targets["ap"]; ok {
		ap := suite.clusters[2]
		update(t, ap, slice(false), func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Conditions.Ready = ptr.To(false)
		})
		check("ap's endpoint not Ready (the CIDR region falls back to the default us)", "ap")
	}
}

// geoAnswer asks addr for host A with gc's ECS option (none when gc.subnet is ""), and says
// whether the answer is want (sorted) with gc's scope, ECS echoed with the query's family,
// source prefix and address; without ECS, the answer must carry none.
func geoAnswer(addr, host string, gc geoCase, want []string) error {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), dns.TypeA)
	m.RecursionDesired = false
	o := m.SetEdns0(1232, false).IsEdns0()
	var ecs *dns.EDNS0_SUBNET
	if gc.subnet != "" {
		ip, ipnet, err := net.ParseCIDR(gc.subnet)
		if err != nil {
			return err
		}
		bits, _ := ipnet.Mask.Size()
		ecs = &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: uint8(bits), Address: ip.To4()}
		o.Option = append(o.Option, ecs)
	}
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		return fmt.Errorf("%s: %w", gc.what, err)
	}
	var got []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			got = append(got, a.A.String())
		}
	}
	slices.Sort(got)
	if r.Rcode != dns.RcodeSuccess || !r.Authoritative || !slices.Equal(got, want) {
		return fmt.Errorf("%s (ECS %q) at %s: %s aa=%t %v, want %v", gc.what, gc.subnet, addr, dns.RcodeToString[r.Rcode], r.Authoritative, got, want)
	}
	var back *dns.EDNS0_SUBNET
	if ro := r.IsEdns0(); ro != nil {
		for _, opt := range ro.Option {
			if s, ok := opt.(*dns.EDNS0_SUBNET); ok {
				back = s
			}
		}
	}
	switch {
	case ecs == nil && back != nil:
		return fmt.Errorf("%s at %s: ECS %s in an answer to a query without it", gc.what, addr, back)
	case ecs != nil && back == nil:
		return fmt.Errorf("%s at %s: no ECS in the answer", gc.what, addr)
	case ecs != nil && (back.Family != 1 || back.SourceNetmask != ecs.SourceNetmask || !back.Address.Equal(ecs.Address) || back.SourceScope != gc.scope):
		return fmt.Errorf("%s at %s: ECS %s/%d scope %d, want %s scope %d", gc.what, addr, back.Address, back.SourceNetmask, back.SourceScope, gc.subnet, gc.scope)
	}
	return nil
}

// geoMetrics reads dnsplane_dnsserver_geo_queries_total from every manager pod of a cluster, as
// docs/metrics.md says a scraper does: a ServiceAccount bound to the chart's metrics-reader
// ClusterRole, its token, and kubectl port-forward to each pod's :8443.
type geoMetrics struct {
	c     *cluster
	token string
}

func newGeoMetrics(t *testing.T, c *cluster) *geoMetrics {
	t.Helper()
	ns, rel := os.Getenv("E2E_KIND_NAMESPACE"), os.Getenv("E2E_KIND_RELEASE")
	sa := kindRunName("geo-metrics")
	kubectl(t, c, "create", "serviceaccount", sa)
	kindCmd(t, c, os.Getenv("E2E_KIND_KUBECTL"), "create", "clusterrolebinding", sa, "--clusterrole="+rel+"-metrics-reader", "--serviceaccount="+ns+":"+sa)
	t.Cleanup(func() {
		_, _ = kindTry(c, os.Getenv("E2E_KIND_KUBECTL"), "delete", "clusterrolebinding", sa)
		_, _ = kindTry(c, os.Getenv("E2E_KIND_KUBECTL"), "-n", ns, "delete", "serviceaccount", sa)
	})
	return &geoMetrics{c: c, token: strings.TrimSpace(kubectl(t, c, "create", "token", sa))}
}

var geoSeries = regexp.MustCompile(`^dnsplane_dnsserver_geo_queries_total\{([^}]*)\} ([0-9.e+]+)$`)

// read returns the series' values summed over the release's pods, keyed by their labels.
func (g *geoMetrics) read(t *testing.T) map[string]float64 {
	t.Helper()
	pods := strings.Fields(kubectl(t, g.c, "get", "pods", "-l", "app.kubernetes.io/instance="+os.Getenv("E2E_KIND_RELEASE"), "-o", "jsonpath={.items[*].metadata.name}"))
	sum := map[string]float64{}
	for _, pod := range pods {
		var body string
		eventually(t, testrun.HangTimeout, "metrics of pod "+pod, func() (err error) {
			body, err = g.scrape(pod)
			return err
		})
		for _, line := range strings.Split(body, "\n") {
			if m := geoSeries.FindStringSubmatch(line); m != nil {
				v, err := strconv.ParseFloat(m[2], 64)
				if err != nil {
					t.Fatalf("pod %s: %q: %v", pod, line, err)
				}
				sum[m[1]] += v
			}
		}
	}
	return sum
}

// scrape port-forwards to pod's :8443 and GETs /metrics with the token.
func (g *geoMetrics) scrape(pod string) (string, error) {
	cx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cx, os.Getenv("E2E_KIND_KUBECTL"), "-n", os.Getenv("E2E_KIND_NAMESPACE"), "port-forward", "--address=127.0.0.1", "pod/"+pod, ":8443")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+g.c.kcfg)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// "Forwarding from 127.0.0.1:NNNNN -> 8443"
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return "", fmt.Errorf("port-forward to %s: %w: %s", pod, err, stderr.String())
	}
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "Forwarding" {
		return "", fmt.Errorf("port-forward to %s: %q", pod, line)
	}
	req, err := http.NewRequestWithContext(cx, http.MethodGet, "https://"+f[2]+"/metrics", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+g.token)
	// The manager's certificate is self-signed (docs/metrics.md).
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's own cluster
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("pod %s: GET /metrics: HTTP %d: %.200s", pod, resp.StatusCode, b)
	}
	return string(b), nil
}
