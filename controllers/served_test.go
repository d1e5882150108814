package controllers_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/conditions"
	"github.com/dnsplane/dnsplane/internal/testing/metrictest"
	"github.com/dnsplane/dnsplane/internal/testing/secondarytest"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
)

// TestManager_ServedWaitsForEverySecondary: with the embedded server as primary and a
// real BIND and a real NSD as its secondaries (--local-notify), a DNSEndpoint is Served=True
// only once both answer its change; with NSD stopped, a change is Served=False Propagating
// naming NSD, then Stale past --served-stale-after; NSD started again serves it, and Served
// turns True at the DNSZone's next check. The SOA queries the check sent per change and in steady state are logged, and
// steady state must send none.
func TestManager_ServedWaitsForEverySecondary(t *testing.T) {
	const zone = "served.test"
	reg := prometheus.NewRegistry()
	w := withSecondaries(t, "served", zone, clusterOptions{Registerer: reg,
		ServedInterval: 500 * time.Millisecond, ServedStaleAfter: 6 * time.Second})
	c, bind, nsd, ns, z := w.c, w.bind, w.nsd, w.ns, w.z
	queries := func() float64 { return metrictest.Value(t, reg, "dnsplane_served_soa_queries_total", nil) }

	// A change is Served only once both secondaries answer it.
	before := queries()
	ep := endpointObj(ns, "web", dnsv1.Endpoint{DNSName: "web." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.10"}})
	c.create(ep)
	cond := c.waitCondition(ep, dnsv1.ConditionServed, metav1.ConditionTrue, dnsv1.ReasonServed, 60*time.Second)
	for _, s := range []*secondarytest.Server{bind, nsd} {
		if !answersAAt(s.Addr, "web."+zone, "192.0.2.10") {
			t.Fatalf("Served=True (%s), but %s does not answer web.%s", cond.Message, s.Name, zone)
		}
	}
	got := &dnsv1.DNSEndpoint{}
	if err := c.client.Get(t.Context(), client.ObjectKeyFromObject(ep), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Served) != 1 || got.Status.Served[0].ServedAt == nil || got.Status.Served[0].Zone != zone ||
		!slices.Contains([]string{c.dnsAddr, bind.Addr, nsd.Addr}, got.Status.Served[0].Slowest) {
		t.Fatalf("status.served %+v, want one entry for %s with servedAt and the slowest server", got.Status.Served, zone)
	}
	t.Logf("Served: %s; %v SOA queries for this change", cond.Message, queries()-before)

	// Steady state: nothing changes, nothing is asked.
	idle := queries()
	time.Sleep(3 * time.Second)
	if q := queries() - idle; q != 0 {
		t.Fatalf("%v SOA queries in steady state, want 0", q)
	}

	// NSD stops following: the next change is Propagating, naming it, then Stale.
	nsd.Stop(t)
	ep2 := endpointObj(ns, "api", dnsv1.Endpoint{DNSName: "api." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.11"}})
	c.create(ep2)
	// At first BIND may be behind too (its transfer takes a moment); the message follows the
	// servers behind, so it soon names NSD alone.
	cond = conditions.Wait(t, c.client, ep2, dnsv1.ConditionServed, conditions.Want{Status: metav1.ConditionFalse, Reason: dnsv1.ReasonPropagating,
		Message: func(m string) bool { return strings.Contains(m, nsd.Addr) && !strings.Contains(m, bind.Addr) }}, 60*time.Second)
	t.Logf("Propagating: %s", cond.Message)
	cond = c.waitCondition(ep2, dnsv1.ConditionServed, metav1.ConditionFalse, dnsv1.ReasonStale, 60*time.Second)
	if !strings.Contains(cond.Message, nsd.Addr) || strings.Contains(cond.Message, bind.Addr) {
		t.Fatalf("Stale message %q, want it to name NSD (%s) alone", cond.Message, nsd.Addr)
	}
	t.Logf("Stale: %s", cond.Message)
	// Ready keeps its meaning: the provider took the write.
	c.waitCondition(ep2, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 10*time.Second)
	// The DNSZone's own view names the server that stopped answering, with its error.
	cond = conditions.Wait(t, c.client, z, dnsv1.ConditionServed, conditions.Want{Status: metav1.ConditionFalse, Reason: dnsv1.ReasonUnreachable,
		Message: func(m string) bool { return strings.Contains(m, nsd.Addr) }}, 30*time.Second)
	t.Logf("DNSZone: Served=False Unreachable: %s", cond.Message)
	got2 := &dnsv1.DNSZone{}
	if err := c.client.Get(t.Context(), client.ObjectKeyFromObject(z), got2); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, s := range got2.Status.Servers {
		seen = append(seen, s.Server)
		if s.Server == nsd.Addr && (s.Error == "" || s.Serial != nil) {
			t.Errorf("status.servers for NSD %+v, want its error and no serial", s)
		}
	}
	if strings.Join(seen, ",") != strings.Join([]string{c.dnsAddr, bind.Addr, nsd.Addr}, ",") {
		t.Fatalf("status.servers %v, want the primary, BIND and NSD in order", seen)
	}

	// NSD back: it transfers the change. A change gone Stale is not asked for again (steady
	// state costs no query); the DNSZone's own check, here at a reconcile for a change of its
	// spec (in production every --served-zone-check-interval), sees NSD answer it, and Served
	// turns True.
	nsd.Start(t, "")
	secondarytest.SameZone(t, 60*time.Second, c.dnsAddr, zone, nsd)
	live := &dnsv1.DNSZone{}
	if err := c.client.Get(t.Context(), client.ObjectKeyFromObject(z), live); err != nil {
		t.Fatal(err)
	}
	orig := live.DeepCopy()
	live.Spec.Tags = map[string]string{"served-test": "recheck"}
	if err := c.client.Patch(t.Context(), live, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	c.waitCondition(ep2, dnsv1.ConditionServed, metav1.ConditionTrue, dnsv1.ReasonServed, 2*time.Minute)
	if !answersAAt(nsd.Addr, "api."+zone, "192.0.2.11") {
		t.Fatal("Served=True, but NSD does not answer api." + zone)
	}
	c.waitCondition(z, dnsv1.ConditionServed, metav1.ConditionTrue, dnsv1.ReasonServed, 30*time.Second)
}

// TestPowerDNS_ServedFollowsASecondaryNamedInTheSecret: a PowerDNS zone checked at
// DNS_ADDRESS, with a real NSD transferring from it named in SECONDARY_ADDRESSES. PowerDNS
// rewrites the SOA serial on every PATCH and sends no NOTIFY for a Native zone, so NSD lags
// until its next SOA check: a change is Propagating naming NSD, and Served once NSD is
// restarted (it checks its primary's SOA at start) and answers it. status.served holds
// PowerDNS' serial after the write.
func TestPowerDNS_ServedFollowsASecondaryNamedInTheSecret(t *testing.T) {
	const ns, zone = "pdns-served", "pdns-served.test"
	nsd := secondarytest.NSD(t)
	srv := pdnsNamespace(t, ns, "PDNS_NAMESERVERS", "ns1."+zone, "SECONDARY_ADDRESSES", nsd.Addr)
	z := zoneObj(ns, "z", zone, nil)
	create(t, z)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	nsd.Start(t, srv.DNSAddr, zone)
	secondarytest.SameZone(t, 60*time.Second, srv.DNSAddr, zone, nsd)

	ep := endpointObj(ns, "api", dnsv1.Endpoint{DNSName: "api." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.80"}})
	create(t, ep)
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	cond := conditions.Wait(t, k8s, ep, dnsv1.ConditionServed, conditions.Want{Status: metav1.ConditionFalse, Reason: dnsv1.ReasonPropagating,
		Message: func(m string) bool { return strings.Contains(m, nsd.Addr) && !strings.Contains(m, srv.DNSAddr) }}, 30*time.Second)
	t.Logf("Propagating: %s", cond.Message)

	nsd.Stop(t)
	nsd.Start(t, "")
	cond = conditions.Wait(t, k8s, ep, dnsv1.ConditionServed, conditions.Want{Status: metav1.ConditionTrue, Reason: dnsv1.ReasonServed}, 2*time.Minute)
	t.Logf("Served: %s", cond.Message)
	if !answersAAt(nsd.Addr, "api."+zone, "192.0.2.80") {
		t.Fatal("Served=True, but NSD does not answer api." + zone)
	}
	got := &dnsv1.DNSEndpoint{}
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(ep), got); err != nil {
		t.Fatal(err)
	}
	serial, err := (dnsclient.Client{}).Serial(ctxT(t), srv.DNSAddr, zone)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Served) != 1 || got.Status.Served[0].Serial != int64(serial) || got.Status.Served[0].Slowest != nsd.Addr {
		t.Fatalf("status.served %+v, want PowerDNS' serial %d with NSD (%s) the slowest", got.Status.Served, serial, nsd.Addr)
	}
}

// TestManager_AnObjectInConflictIsNotServed: two DNSEndpoints claim one name on the embedded
// server. The second wrote nothing (Ready False OwnershipConflict), so no name server answers
// its last change: Served=False NotWritten, naming Ready's reason, never Served.
func TestManager_AnObjectInConflictIsNotServed(t *testing.T) {
	const ns, zone = "served-conflict", "served-conflict.test"
	c := startCluster(t, "served-conflict", 30*time.Second, 5*time.Minute)
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: "dnsplane.io/local"})
	z := zoneObj(ns, "z", zone, nil)
	c.create(z)
	c.waitCondition(z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 60*time.Second)
	first := endpointObj(ns, "first", dnsv1.Endpoint{DNSName: "www." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}})
	c.create(first)
	c.waitCondition(first, dnsv1.ConditionServed, metav1.ConditionTrue, dnsv1.ReasonServed, 60*time.Second)
	second := endpointObj(ns, "second", dnsv1.Endpoint{DNSName: "www." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.2"}})
	c.create(second)
	c.waitCondition(second, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict, 60*time.Second)
	cond := c.waitCondition(second, dnsv1.ConditionServed, metav1.ConditionFalse, dnsv1.ReasonNotWritten, 30*time.Second)
	if !strings.Contains(cond.Message, dnsv1.ReasonOwnershipConflict) {
		t.Fatalf("Served message %q, want Ready's reason", cond.Message)
	}
}
