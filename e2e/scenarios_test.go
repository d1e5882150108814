//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// The scenarios run in this order on one test bed; each also runs alone (-run), setting up what
// it needs. TestOffboarding goes last: it removes cluster 3.

// TestOnboarding: the platform team's root zone e2e.test on PowerDNS (created from cluster 1,
// adopted by zoneID in the others); each cluster admin declares a base domain c<N>.e2e.test on the
// cluster's embedded server, linked to the root. The delegation shows in an AXFR of e2e.test (NS
// and glue per cluster), a resolver following it reaches each cluster's server, and a DNSEndpoint
// in each cluster is served there.
func TestOnboarding(t *testing.T) {
	onFailure(t)
	start := time.Now()
	took := onboard(t)
	for _, c := range suite.clusters {
		if d, ok := took[c.geo]; ok {
			t.Logf("cluster %s: DNSZone %s Ready (ZoneAvailable, ParentLinkCreated) %s after the first apply", c.geo, c.clusterZone(), d.Round(10*time.Millisecond))
		}
		z := clusterZoneObj(c)
		c.waitCondition(t, z, dnsv1.ConditionParentLinkCreated, metav1.ConditionTrue, dnsv1.ReasonParentLinked, 10*time.Second)
		c.waitCondition(t, z, dnsv1.ConditionZoneAvailable, metav1.ConditionTrue, "", 10*time.Second)
		ev := c.waitEvent(t, z, dnsv1.ReasonParentLinked, 10*time.Second)
		t.Logf("cluster %s: Event %s %s: %s", c.geo, ev.Type, ev.Reason, ev.Message)
	}

	// The parent, as `dig @pdns e2e.test AXFR` shows it: NS and glue for every cluster zone.
	rrs, err := axfr(suite.pdns.DNSAddr, rootZone)
	if err != nil {
		t.Fatalf("AXFR %s from PowerDNS: %v", rootZone, err)
	}
	for _, c := range suite.clusters {
		var ns, glue []string
		for _, rr := range rrs {
			switch r := rr.(type) {
			case *dns.NS:
				if r.Hdr.Name == dns.Fqdn(c.clusterZone()) {
					ns = append(ns, r.Ns)
				}
			case *dns.A:
				if strings.HasSuffix(r.Hdr.Name, "."+dns.Fqdn(c.clusterZone())) {
					glue = append(glue, r.Hdr.Name+" "+r.A.String())
				}
			}
		}
		if len(ns) == 0 || len(glue) == 0 {
			t.Errorf("AXFR of %s: cluster %s: NS %v, glue %v; want both", rootZone, c.geo, ns, glue)
		}
		if c.glueIP != "" && !slices.ContainsFunc(glue, func(g string) bool { return strings.HasSuffix(g, " "+c.glueIP) }) {
			t.Errorf("AXFR of %s: glue for %s is %v, want %s", rootZone, c.clusterZone(), glue, c.glueIP)
		}
		t.Logf("AXFR %s: %s NS %v glue %v", rootZone, c.clusterZone(), ns, glue)
	}

	// Records: one DNSEndpoint per cluster, served by that cluster's server, reached by following
	// the delegation from PowerDNS.
	for _, c := range suite.clusters {
		c.apply(t, wwwEndpoint(c))
	}
	for _, c := range suite.clusters {
		host := "www." + c.clusterZone()
		_, d := c.waitCondition(t, wwwEndpoint(c), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
		nsNames, glue, err := referral(suite.pdns.DNSAddr, host)
		if err != nil {
			t.Fatalf("PowerDNS for %s: %v", host, err)
		}
		ip := glue[nsNames[0]]
		if ip == "" {
			t.Fatalf("PowerDNS refers %s to %v without glue (%v)", host, nsNames, glue)
		}
		if c.glueIP != "" && ip != c.glueIP {
			t.Fatalf("PowerDNS refers %s to %s, want cluster %s's server %s", host, ip, c.geo, c.glueIP)
		}
		// Glue carries no port: the cluster's server is on the harness's shared port.
		_, port, _ := net.SplitHostPort(c.dnsAddr)
		server := c.dnsAddr
		if c.glueIP != "" {
			server = net.JoinHostPort(ip, port)
		}
		waitServed(t, 10*time.Second, server, host, []string{wwwTarget(c)})
		t.Logf("cluster %s: %s Published in %s; PowerDNS refers to %s (%s), which answers %s", c.geo, host, d.Round(10*time.Millisecond), nsNames[0], ip, wwwTarget(c))
		// The way a pipeline waits until a name is live (docs/quickstart.md, docs/served.md).
		out := kubectlWait(t, c, "--for=condition=Served", "-n", clusterNS, "dnsendpoint/www", "--timeout=60s")
		cond, _ := c.waitCondition(t, wwwEndpoint(c), dnsv1.ConditionServed, metav1.ConditionTrue, dnsv1.ReasonServed, 10*time.Second)
		t.Logf("cluster %s: kubectl wait --for=condition=Served: %s (%s)", c.geo, strings.TrimSpace(out), cond.Message)
	}
	t.Logf("onboarding of %d clusters: %s", len(suite.clusters), time.Since(start).Round(10*time.Millisecond))
}

func wwwTarget(c *cluster) string { return fmt.Sprintf("192.0.2.%d", 10*(c.idx+1)) }

func wwwEndpoint(c *cluster) *dnsv1.DNSEndpoint {
	return &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: "www"}, Spec: dnsv1.DNSEndpointSpec{PublishingSpec: dnsv1.PublishingSpec{
		Endpoints: []dnsv1.Endpoint{{DNSName: "www." + c.clusterZone(), RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{wwwTarget(c)}}}}}}
}

const appHost = "app." + rootZone

func appTarget(c *cluster) string { return fmt.Sprintf("198.51.100.%d", c.idx+1) }

func appRecord(c *cluster) *dnsv1.DNSRecord {
	return &dnsv1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: platformNS, Name: "app"}, Spec: dnsv1.DNSRecordSpec{
		RootHost: appHost, PublishingSpec: dnsv1.PublishingSpec{
			Endpoints: []dnsv1.Endpoint{{DNSName: appHost, RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{appTarget(c)}}}}}}
}

func allAppTargets() []string {
	var out []string
	for _, c := range suite.clusters {
		out = append(out, appTarget(c))
	}
	return out
}

// sharedApp makes every cluster contribute its target to app.e2e.test, and waits until all are
// Published, served, and every cluster sees every contributor healthy.
func sharedApp(t *testing.T) {
	t.Helper()
	platform(t)
	for _, c := range suite.clusters {
		c.apply(t, appRecord(c))
	}
	for _, c := range suite.clusters {
		c.waitCondition(t, appRecord(c), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
	}
	waitServed(t, 20*time.Second, suite.pdns.DNSAddr, appHost, allAppTargets())
	for _, c := range suite.clusters {
		rec := appRecord(c)
		eventually(t, 30*time.Second, "cluster "+c.geo+" lists every owner healthy", func() error {
			c.waitCondition(t, rec, dnsv1.ConditionHealthy, metav1.ConditionTrue, dnsv1.ReasonAllOwnersHealthy, 30*time.Second)
			if len(rec.Status.Owners) != len(suite.clusters) {
				return fmt.Errorf("owners %+v", rec.Status.Owners)
			}
			return nil
		})
	}
}

// TestSharedApp: every cluster contributes one A target to app.e2e.test on PowerDNS; the set is
// merged. SIGKILL cluster 3's manager: the others show Healthy=False HeartbeatFailing naming
// cluster-ap, and its target stays; restart it: healthy again.
func TestSharedApp(t *testing.T) {
	onFailure(t)
	if len(suite.clusters) < 3 {
		t.Skip("needs 3 clusters")
	}
	sharedApp(t)
	t.Logf("%s at PowerDNS: %v", appHost, allAppTargets())

	victim := suite.clusters[2]
	victim.kill(t)
	killed := time.Now()
	for _, c := range suite.clusters[:2] {
		cond, _ := c.waitCondition(t, appRecord(c), dnsv1.ConditionHealthy, metav1.ConditionFalse, dnsv1.ReasonHeartbeatFailing, heartbeatThreshold+5*heartbeatInterval)
		t.Logf("cluster %s: HeartbeatFailing %s after SIGKILL of cluster %s (interval %s, threshold %s): %s",
			c.geo, time.Since(killed).Round(100*time.Millisecond), victim.geo, heartbeatInterval, heartbeatThreshold, cond.Message)
		if !strings.Contains(cond.Message, victim.ownerID) {
			t.Errorf("cluster %s: HeartbeatFailing message %q does not name %s", c.geo, cond.Message, victim.ownerID)
		}
		for _, other := range suite.clusters[:2] {
			if strings.Contains(cond.Message, other.ownerID) {
				t.Errorf("cluster %s: HeartbeatFailing message %q names healthy %s", c.geo, cond.Message, other.ownerID)
			}
		}
		c.waitEvent(t, appRecord(c), dnsv1.ReasonHeartbeatFailing, 10*time.Second)
	}
	// Heartbeats only report: the dead cluster's target stays.
	if got, err := answerA(suite.pdns.DNSAddr, appHost); err != nil || !slices.Equal(got, sortedCopy(allAppTargets())) {
		t.Fatalf("%s while cluster %s is down: %v (%v); want every target kept", appHost, victim.geo, got, err)
	}

	restartStart := time.Now()
	victim.restart(t)
	up := time.Since(restartStart)
	for _, c := range suite.clusters[:2] {
		c.waitCondition(t, appRecord(c), dnsv1.ConditionHealthy, metav1.ConditionTrue, dnsv1.ReasonAllOwnersHealthy, 6*heartbeatInterval+30*time.Second)
		t.Logf("cluster %s: AllOwnersHealthy %s after restarting cluster %s (manager and control plane up in %s)",
			c.geo, time.Since(restartStart).Round(100*time.Millisecond), victim.geo, up.Round(100*time.Millisecond))
	}
	victim.waitCondition(t, appRecord(victim), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
	waitServed(t, 10*time.Second, suite.pdns.DNSAddr, appHost, allAppTargets())
}

func sortedCopy(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

const gslbHost = "app.gslb." + rootZone

func gslbIP(c *cluster) string { return fmt.Sprintf("203.0.113.%d", c.idx+1) }

// gslbCluster sets up cluster c's side of the Gslb: zone gslb.e2e.test on its embedded server, a
// selector-less LoadBalancer Service with a status IP and a hand-written EndpointSlice, and the
// Gslb itself.
func gslbCluster(t *testing.T, c *cluster, primary string) {
	t.Helper()
	const ns = gslbNS
	c.apply(t, namespace(ns), localSecretObj(ns),
		&dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gslb"}, Spec: dnsv1.DNSZoneSpec{
			Zone: "gslb." + rootZone, ProviderRef: dnsv1.SecretReference{Name: localSecret}}})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	c.apply(t, svc)
	// No load-balancer controller here: write the address it would have written.
	eventually(t, 20*time.Second, "Service status", func() error {
		if err := c.C().Get(ctx(t), clientKey(svc), svc); err != nil {
			return err
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: gslbIP(c)}}
		return c.C().Status().Update(ctx(t), svc)
	})
	c.apply(t, endpointSlice(c, true))
	c.apply(t, &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: dnsv1.GslbSpec{
		ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{gslbHost},
		ZoneRef:  dnsv1.ZoneReference{Name: "gslb"},
		Strategy: dnsv1.GslbStrategy{Type: "failover", PrimaryGeoTag: primary, DNSTTLSeconds: 5}}})
}

func endpointSlice(c *cluster, ready bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "apps", Name: "app-1", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.244.%d.10", c.idx)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}},
	}
}

// TestGslbFailover: eu and us each serve gslb.e2e.test from their embedded server, with a
// failover Gslb (primary eu) over a LoadBalancer Service. Both servers answer eu's IP; eu's only
// endpoint turns unready: both answer us's; ready again: both answer eu's.
func TestGslbFailover(t *testing.T) {
	onFailure(t)
	eu, us := suite.clusters[0], suite.clusters[1]
	for _, c := range []*cluster{eu, us} {
		gslbCluster(t, c, eu.geo)
	}
	both := func(what string, want string) time.Duration {
		start := time.Now()
		for _, c := range []*cluster{eu, us} {
			waitServed(t, 30*time.Second, c.dnsAddr, gslbHost, []string{want})
		}
		d := time.Since(start)
		t.Logf("%s: both servers answer %s after %s", what, want, d.Round(10*time.Millisecond))
		return d
	}
	both("primary eu", gslbIP(eu))
	for _, c := range []*cluster{eu, us} {
		g := &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}}
		// With 3 clusters, ap is a configured peer that runs no such Gslb: it answers REFUSED and the
		// Gslb says so (Ready=False PeerErrors, naming ap only) while serving the healthy answer.
		var cond *metav1.Condition
		eventually(t, 30*time.Second, "cluster "+c.geo+": Gslb Ready=True Published, or PeerErrors naming only the third cluster", func() error {
			if err := c.C().Get(ctx(t), clientKey(g), g); err != nil {
				return err
			}
			if cond = meta.FindStatusCondition(g.Status.Conditions, dnsv1.ConditionReady); cond == nil {
				return fmt.Errorf("no Ready condition")
			}
			if cond.Status == metav1.ConditionTrue && cond.Reason == dnsv1.ReasonPublished {
				return nil
			}
			if cond.Reason == dnsv1.ReasonPeerErrors && len(suite.clusters) > 2 && strings.Contains(cond.Message, suite.clusters[2].dnsAddr) &&
				!strings.Contains(cond.Message, eu.dnsAddr) && !strings.Contains(cond.Message, us.dnsAddr) {
				return nil
			}
			return fmt.Errorf("Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
		})
		t.Logf("cluster %s: Gslb Ready=%s %s; serviceHealth %v, healthyRecords %v, %d peers", c.geo, cond.Status, cond.Reason, g.Status.ServiceHealth, g.Status.HealthyRecords, len(g.Status.Peers))
	}

	eu.apply(t, endpointSlice(eu, false))
	both("failover (eu unready)", gslbIP(us))
	g := &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}}
	eventually(t, 10*time.Second, "eu's Gslb reports its service Unhealthy", func() error {
		if err := eu.C().Get(ctx(t), clientKey(g), g); err != nil {
			return err
		}
		if h := g.Status.ServiceHealth[gslbHost]; h != "Unhealthy" {
			return fmt.Errorf("serviceHealth %v", g.Status.ServiceHealth)
		}
		return nil
	})

	eu.apply(t, endpointSlice(eu, true))
	both("failback (eu ready)", gslbIP(eu))
}

// TestDryRun: a DNSEndpoint under DryRun plans and waits (Ready=False AwaitingApproval, the plan
// in status), serving nothing; approving the plan applies it once; FullSync then publishes.
func TestDryRun(t *testing.T) {
	onFailure(t)
	onboard(t)
	c := suite.clusters[0]
	host := "dry." + c.clusterZone()
	ep := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: "dry"}, Spec: dnsv1.DNSEndpointSpec{PublishingSpec: dnsv1.PublishingSpec{
		Strategy:  dnsv1.StrategyDryRun,
		Endpoints: []dnsv1.Endpoint{{DNSName: host, RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{"192.0.2.77"}}}}}}
	c.apply(t, ep)
	cond, _ := c.waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonAwaitingApproval, 30*time.Second)
	if ep.Status.Plan == nil || ep.Status.Plan.ID == "" || ep.Status.Plan.Counts.Create == 0 {
		t.Fatalf("DryRun: status.plan %+v; want an ID and creations", ep.Status.Plan)
	}
	planID := ep.Status.Plan.ID
	t.Logf("DryRun: %s; plan %s %+v", cond.Message, planID, ep.Status.Plan.Counts)
	time.Sleep(2 * time.Second)
	if got, err := answerA(c.dnsAddr, host); err != nil || len(got) != 0 {
		t.Fatalf("DryRun: %s served %v (%v); want nothing", host, got, err)
	}

	approved := time.Now()
	update(t, c, ep, func(e *dnsv1.DNSEndpoint) { e.Spec.ApprovedPlan = planID })
	waitServed(t, 20*time.Second, c.dnsAddr, host, []string{"192.0.2.77"})
	eventually(t, 20*time.Second, "status.appliedPlan", func() error {
		if err := c.C().Get(ctx(t), clientKey(ep), ep); err != nil {
			return err
		}
		if ep.Status.AppliedPlan != planID {
			return fmt.Errorf("appliedPlan %q, want %q", ep.Status.AppliedPlan, planID)
		}
		return nil
	})
	ev := c.waitEvent(t, ep, "PlanApproved", 10*time.Second)
	t.Logf("approved plan served after %s; Event %s: %s", time.Since(approved).Round(10*time.Millisecond), ev.Reason, ev.Message)

	// Back to FullSync, with a change: published at once.
	update(t, c, ep, func(e *dnsv1.DNSEndpoint) {
		e.Spec.Strategy, e.Spec.ApprovedPlan = dnsv1.StrategyFullSync, ""
		e.Spec.Endpoints[0].Targets = dnsv1.Targets{"192.0.2.78"}
	})
	_, d := c.waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
	waitServed(t, 10*time.Second, c.dnsAddr, host, []string{"192.0.2.78"})
	t.Logf("FullSync: Published after %s", d.Round(10*time.Millisecond))
}

// TestRestarts: every manager is SIGKILLed mid-scenario (right after new objects were applied)
// and started again; everything converges, nothing is lost or duplicated in the root zone, the
// cluster zones or the shared record set.
func TestRestarts(t *testing.T) {
	onFailure(t)
	onboard(t)
	if len(suite.clusters) >= 3 {
		sharedApp(t)
	}
	before, err := axfr(suite.pdns.DNSAddr, rootZone)
	if err != nil {
		t.Fatal(err)
	}
	beforeN := normalized(before)

	// Mid-scenario: new records are applied, and the managers die before or while reconciling.
	mid := func(c *cluster) *dnsv1.DNSEndpoint {
		return &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: "mid"}, Spec: dnsv1.DNSEndpointSpec{PublishingSpec: dnsv1.PublishingSpec{
			Endpoints: []dnsv1.Endpoint{{DNSName: "mid." + c.clusterZone(), RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{"192.0.2.200", "192.0.2.201"}}}}}}
	}
	for _, c := range suite.clusters {
		c.apply(t, mid(c))
	}
	for _, c := range suite.clusters {
		c.kill(t)
	}
	start := time.Now()
	for _, c := range suite.clusters {
		c.restart(t)
	}
	t.Logf("all %d managers SIGKILLed and restarted; ready after %s", len(suite.clusters), time.Since(start).Round(100*time.Millisecond))

	for _, c := range suite.clusters {
		c.waitCondition(t, clusterZoneObj(c), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 60*time.Second)
		c.waitCondition(t, wwwEndpoint(c), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
		c.waitCondition(t, mid(c), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
		waitServed(t, 10*time.Second, c.dnsAddr, "www."+c.clusterZone(), []string{wwwTarget(c)})
		waitServed(t, 10*time.Second, c.dnsAddr, "mid."+c.clusterZone(), []string{"192.0.2.200", "192.0.2.201"})
		rrs, err := axfr(c.dnsAddr, c.clusterZone())
		if err != nil {
			t.Fatalf("AXFR %s: %v", c.clusterZone(), err)
		}
		if d := duplicates(normalized(rrs)); len(d) > 0 {
			t.Errorf("AXFR %s: duplicated records %v", c.clusterZone(), d)
		}
	}
	if len(suite.clusters) >= 3 {
		for _, c := range suite.clusters {
			c.waitCondition(t, appRecord(c), dnsv1.ConditionHealthy, metav1.ConditionTrue, dnsv1.ReasonAllOwnersHealthy, 60*time.Second)
		}
		waitServed(t, 10*time.Second, suite.pdns.DNSAddr, appHost, allAppTargets())
	}
	// The root zone: exactly as before (but for serial and heartbeats).
	time.Sleep(2 * heartbeatInterval)
	after, err := axfr(suite.pdns.DNSAddr, rootZone)
	if err != nil {
		t.Fatal(err)
	}
	afterN := normalized(after)
	removed, added := diff(beforeN, afterN)
	if len(removed) > 0 || len(added) > 0 {
		t.Errorf("AXFR %s changed across restarts:\n  removed %s\n  added %s", rootZone, strings.Join(removed, "\n          "), strings.Join(added, "\n          "))
	}
	if d := duplicates(afterN); len(d) > 0 {
		t.Errorf("AXFR %s: duplicated records %v", rootZone, d)
	}
	t.Logf("AXFR %s: %d records, unchanged across restarts", rootZone, len(afterN))
}

// TestOffboarding: cluster 3 leaves: its admin deletes its DNSRecord and its DNSZone. Its
// delegation, records and registry entries are gone from e2e.test; nothing of the other clusters
// is touched (AXFRs before/after, without SOA serial and heartbeat values).
func TestOffboarding(t *testing.T) {
	onFailure(t)
	if len(suite.clusters) < 3 {
		t.Skip("needs 3 clusters")
	}
	onboard(t)
	sharedApp(t)
	leaving := suite.clusters[2]
	stay := suite.clusters[:2]
	beforeRoot, err := axfr(suite.pdns.DNSAddr, rootZone)
	if err != nil {
		t.Fatal(err)
	}
	beforeZones := map[string][]string{}
	for _, c := range stay {
		rrs, err := axfr(c.dnsAddr, c.clusterZone())
		if err != nil {
			t.Fatal(err)
		}
		beforeZones[c.geo] = normalized(rrs)
	}

	start := time.Now()
	if err := leaving.C().Delete(ctx(t), appRecord(leaving)); err != nil {
		t.Fatal(err)
	}
	if err := leaving.C().Delete(ctx(t), clusterZoneObj(leaving)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "cluster "+leaving.geo+"'s DNSZone and DNSRecord gone", func() error {
		for _, obj := range []clientObject{clusterZoneObj(leaving), appRecord(leaving)} {
			if err := leaving.C().Get(ctx(t), clientKey(obj), obj); err == nil {
				return fmt.Errorf("%T %s still there (finalizers %v)", obj, obj.GetName(), obj.GetFinalizers())
			}
		}
		return nil
	})
	waitServed(t, 20*time.Second, suite.pdns.DNSAddr, appHost, sortedCopy([]string{appTarget(stay[0]), appTarget(stay[1])}))
	t.Logf("offboarding %s: objects gone after %s", leaving.geo, time.Since(start).Round(10*time.Millisecond))
	if r, err := query(leaving.dnsAddr, leaving.clusterZone(), dns.TypeSOA); err != nil || r.Rcode == dns.RcodeSuccess {
		t.Errorf("cluster %s's server still serves %s: %v %v", leaving.geo, leaving.clusterZone(), r, err)
	}

	time.Sleep(2 * heartbeatInterval)
	afterRoot, err := axfr(suite.pdns.DNSAddr, rootZone)
	if err != nil {
		t.Fatal(err)
	}
	removed, added := diff(normalized(beforeRoot), normalized(afterRoot))
	if len(added) > 0 {
		t.Errorf("AXFR %s: offboarding added %v", rootZone, added)
	}
	mine := func(l string) bool {
		return strings.Contains(l, leaving.clusterZone()) || strings.Contains(l, leaving.ownerID) || strings.Contains(l, appTarget(leaving))
	}
	for _, l := range removed {
		if !mine(l) {
			t.Errorf("AXFR %s: offboarding %s removed a record not its own: %s", rootZone, leaving.geo, l)
		}
	}
	for _, l := range normalized(afterRoot) {
		if mine(l) {
			t.Errorf("AXFR %s: %s's record left after offboarding: %s", rootZone, leaving.geo, l)
		}
	}
	t.Logf("AXFR %s: offboarding removed %d records:\n  %s", rootZone, len(removed), strings.Join(removed, "\n  "))
	for _, c := range stay {
		rrs, err := axfr(c.dnsAddr, c.clusterZone())
		if err != nil {
			t.Fatal(err)
		}
		if r, a := diff(beforeZones[c.geo], normalized(rrs)); len(r)+len(a) > 0 {
			t.Errorf("AXFR %s changed when %s left: removed %v added %v", c.clusterZone(), leaving.geo, r, a)
		}
		c.waitCondition(t, clusterZoneObj(c), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 5*time.Second)
	}
	// The remaining contributors see only each other, healthy.
	for _, c := range stay {
		rec := appRecord(c)
		eventually(t, 30*time.Second, "cluster "+c.geo+" sees 2 healthy owners", func() error {
			c.waitCondition(t, rec, dnsv1.ConditionHealthy, metav1.ConditionTrue, dnsv1.ReasonAllOwnersHealthy, 30*time.Second)
			if len(rec.Status.Owners) != 2 {
				return fmt.Errorf("owners %+v", rec.Status.Owners)
			}
			return nil
		})
	}
}
