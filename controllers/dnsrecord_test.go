package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	dnsprovider "github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// sharedZone creates zone in PowerDNS, as a platform team would, for every cluster to adopt.
func sharedZone(t *testing.T, srv pdnstest.Server, zone string) (dnsprovider.Provider, string) {
	t.Helper()
	p, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key, Nameservers: []string{"ns1." + zone}})
	if err != nil {
		t.Fatal(err)
	}
	z, err := p.EnsureZone(context.Background(), dnsprovider.ZoneSpec{Name: zone, CallerReference: "platform"})
	if err != nil {
		t.Fatal(err)
	}
	return p, z.ID
}

// adopt gives cluster c a namespace "apps", a dnsplane.io/pdns Secret and a DNSZone adopting
// zoneID, and waits for it to be Ready.
func (c *cluster) adopt(srv pdnstest.Server, zone, zoneID string) {
	c.t.Helper()
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "dns"}, Type: "dnsplane.io/pdns",
			StringData: map[string]string{"PDNS_API_URL": srv.APIURL, "PDNS_API_KEY": srv.Key, "DNS_ADDRESS": srv.DNSAddr}})
	z := zoneObj("apps", "shared", zone, func(z *dnsv1.DNSZone) { z.Spec.ZoneID = zoneID })
	c.create(z)
	c.waitCondition(z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 30*time.Second)
}

func recordObj(name, rootHost string, eps ...dnsv1.Endpoint) *dnsv1.DNSRecord {
	return &dnsv1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}, Spec: dnsv1.DNSRecordSpec{RootHost: rootHost, PublishingSpec: dnsv1.PublishingSpec{Endpoints: eps}}}
}

// served returns the A targets srv answers for name, sorted.
func served(t *testing.T, addr, name string) []string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s: %v", name, err)
	}
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	slices.Sort(out)
	return out
}

// TestDNSRecord_TwoClustersShareOneRecordSet: two clusters (two API servers, two managers,
// owner IDs cluster-a and cluster-b) contribute one A target each to app.shared.test on a real
// PowerDNS. Both are served; a stopped manager makes the other's DNSRecord HeartbeatFailing,
// naming it, while its target stays; a restart heals it; deleting the records withdraws each
// contribution, the last one the record set and every registry record.
func TestDNSRecord_TwoClustersShareOneRecordSet(t *testing.T) {
	srv := pdnstest.Start(t)
	p, zoneID := sharedZone(t, srv, "shared.test")
	const interval, threshold = 2 * time.Second, 10 * time.Second
	a := startCluster(t, "cluster-a", interval, threshold)
	b := startCluster(t, "cluster-b", interval, threshold)
	a.adopt(srv, "shared.test", zoneID)
	b.adopt(srv, "shared.test", zoneID)

	recA := recordObj("app", "app.shared.test", dnsv1.Endpoint{DNSName: "app.shared.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}})
	recB := recordObj("app", "app.shared.test", dnsv1.Endpoint{DNSName: "app.shared.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.2"}})
	a.create(recA)
	b.create(recB)
	a.waitCondition(recA, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
	b.waitCondition(recB, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
	eventually(t, 10*time.Second, "both targets served", func() error {
		if got := served(t, srv.DNSAddr, "app.shared.test"); !slices.Equal(got, []string{"192.0.2.1", "192.0.2.2"}) {
			return fmt.Errorf("served %v", got)
		}
		return nil
	})
	// Each tick re-reads the zone: within two intervals a lists both contributors, healthy.
	eventually(t, 3*interval, "a lists both owners", func() error {
		a.waitCondition(recA, dnsv1.ConditionHealthy, metav1.ConditionTrue, dnsv1.ReasonAllOwnersHealthy, interval)
		if len(recA.Status.Owners) != 2 || recA.Status.OwnerID != "cluster-a" {
			return fmt.Errorf("ownerID %q, owners %+v; want cluster-a and 2 owners", recA.Status.OwnerID, recA.Status.Owners)
		}
		return nil
	})

	// b's manager stops: its heartbeat ages past the threshold.
	b.stopManager()
	stopped := time.Now()
	cond := a.waitCondition(recA, dnsv1.ConditionHealthy, metav1.ConditionFalse, dnsv1.ReasonHeartbeatFailing, threshold+4*interval)
	t.Logf("from b's manager stopping to HeartbeatFailing on a: %s (interval %s, threshold %s)", time.Since(stopped).Round(100*time.Millisecond), interval, threshold)
	if !strings.Contains(cond.Message, "cluster-b") || !strings.Contains(cond.Message, "DNSRecord/apps/app") || strings.Contains(cond.Message, "cluster-a") {
		t.Fatalf("message %q must name cluster-b only", cond.Message)
	}
	if got := served(t, srv.DNSAddr, "app.shared.test"); !slices.Equal(got, []string{"192.0.2.1", "192.0.2.2"}) {
		t.Fatalf("heartbeats only report: b's target must stay, served %v", got)
	}

	// b restarts: a sees it healthy again.
	b.startManager()
	restarted := time.Now()
	a.waitCondition(recA, dnsv1.ConditionHealthy, metav1.ConditionTrue, dnsv1.ReasonAllOwnersHealthy, 4*interval)
	t.Logf("from b's restart to AllOwnersHealthy on a: %s", time.Since(restarted).Round(100*time.Millisecond))

	// Deleting b's record withdraws only its target.
	if err := b.client.Delete(b.ctx(), recB); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "only a's target", func() error {
		if got := served(t, srv.DNSAddr, "app.shared.test"); !slices.Equal(got, []string{"192.0.2.1"}) {
			return fmt.Errorf("served %v", got)
		}
		return nil
	})
	// Deleting a's, the last contributor, removes the set and every registry record.
	if err := a.client.Delete(a.ctx(), recA); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "record set and registry gone", func() error {
		sets, err := p.ListRecordSets(context.Background(), zoneID)
		if err != nil {
			return err
		}
		for _, s := range sets {
			if s.Name == "app.shared.test" || registry.IsRegistryName(s.Name) {
				return fmt.Errorf("left: %s", s)
			}
		}
		return nil
	})
}

// TestDNSRecord_HeartbeatsCoalescePerZone: 200 DNSRecords in one PowerDNS zone cost, in steady
// state, at most one read and one write per heartbeat interval (counted by the request counter),
// and heartbeats cause no reconcile.
func TestDNSRecord_HeartbeatsCoalescePerZone(t *testing.T) {
	srv := pdnstest.Start(t)
	_, zoneID := sharedZone(t, srv, "many.test")
	const interval = 2 * time.Second
	c := startCluster(t, "cluster-a", interval, time.Minute)
	c.adopt(srv, "many.test", zoneID)
	const n = 200
	recs := make([]*dnsv1.DNSRecord, n)
	for i := range recs {
		host := fmt.Sprintf("app%03d.many.test", i)
		recs[i] = recordObj(fmt.Sprintf("app%03d", i), host, dnsv1.Endpoint{DNSName: host, RecordType: "A", Targets: dnsv1.Targets{fmt.Sprintf("10.0.%d.%d", i/256, i%256)}})
		c.create(recs[i])
	}
	eventually(t, 2*time.Minute, "every record Published and Healthy", func() error {
		var list dnsv1.DNSRecordList
		if err := c.client.List(c.ctx(), &list, client.InNamespace("apps")); err != nil {
			return err
		}
		ready, example := 0, ""
		for i := range list.Items {
			if isTrue(list.Items[i].Status.Conditions, dnsv1.ConditionReady) && isTrue(list.Items[i].Status.Conditions, dnsv1.ConditionHealthy) {
				ready++
			} else {
				example = fmt.Sprintf("%s: %+v", list.Items[i].Name, list.Items[i].Status.Conditions)
			}
		}
		if ready != n {
			return fmt.Errorf("%d of %d; %s", ready, n, example)
		}
		return nil
	})
	time.Sleep(2 * interval) // let the first heartbeat writes settle
	reads := func() float64 {
		return testutil.ToFloat64(c.requests.WithLabelValues("pdns", counting.OpListRecordSets, counting.CodeOK))
	}
	writes := func() float64 {
		return testutil.ToFloat64(c.requests.WithLabelValues("pdns", counting.OpApplyChanges, counting.CodeOK))
	}
	from := time.Now()
	r0, w0, rec0 := reads(), writes(), c.reconciles.get()
	const intervals = 5
	time.Sleep(intervals * interval)
	dr, dw, drec := reads()-r0, writes()-w0, c.reconciles.get()-rec0
	// Ticks are counted per interval of the window as it passed (a loaded machine oversleeps).
	most := float64(time.Since(from)/interval) + 1
	t.Logf("steady state, %d records, %d intervals of %s: %.0f reads, %.0f writes, %d reconciles (%.0f requests per minute)",
		n, intervals, interval, dr, dw, drec, (dr+dw)*float64(time.Minute)/float64(intervals*interval))
	// One tick may straddle each end of the window.
	if dr > most || dw > most {
		t.Errorf("%.0f reads and %.0f writes in %.0f intervals; want at most 1 each per interval", dr, dw, most-1)
	}
	if drec != 0 {
		t.Errorf("%d reconciles in steady state; heartbeats must not requeue", drec)
	}
}

func isTrue(conds []metav1.Condition, typ string) bool {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// TestDNSRecord_ForeignAndMalformedNamesAreNeverWritten: a record set made by hand at the
// provider (no registry record) and one whose registry value is malformed are never written;
// each DNSRecord gets Ready=False OwnershipConflict saying why, and the manager keeps going.
func TestDNSRecord_ForeignAndMalformedNamesAreNeverWritten(t *testing.T) {
	srv := pdnstest.Start(t)
	p, zoneID := sharedZone(t, srv, "held.test")
	ctx := context.Background()
	hand := dnsprovider.RecordSet{Name: "hand.held.test", Type: "A", TTL: 60, Targets: []string{"198.51.100.7"}}
	mal := dnsprovider.RecordSet{Name: "mal.held.test", Type: "A", TTL: 60, Targets: []string{"198.51.100.8"}}
	other := registry.Contributor{OwnerID: "cluster-z", Resource: "DNSRecord/apps/mal"}
	malReg := registry.RecordSet("held.test", registry.Entry{OwnerID: other.OwnerID, Resource: other.Resource, Name: "mal.held.test", Type: "A", TTL: 60, Targets: mal.Targets})
	malReg.Targets = []string{"heritage=dnsplane&v=1&owner=cluster-z&ttl=not-a-number"}
	for _, rs := range []dnsprovider.RecordSet{hand, mal, malReg} {
		if err := p.ApplyChanges(ctx, zoneID, []dnsprovider.Change{{Action: dnsprovider.ActionCreate, After: &rs}}); err != nil {
			t.Fatal(err)
		}
	}
	c := startCluster(t, "cluster-a", 2*time.Second, 10*time.Second)
	c.adopt(srv, "held.test", zoneID)
	recHand := recordObj("hand", "hand.held.test", dnsv1.Endpoint{DNSName: "hand.held.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}})
	recMal := recordObj("mal", "mal.held.test", dnsv1.Endpoint{DNSName: "mal.held.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.2"}})
	c.create(recHand, recMal)
	condHand := c.waitCondition(recHand, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict, 30*time.Second)
	condMal := c.waitCondition(recMal, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict, 30*time.Second)
	t.Logf("hand-made: %s", condHand.Message)
	t.Logf("malformed: %s", condMal.Message)
	if !strings.Contains(condMal.Message, "malformed") {
		t.Errorf("the malformed registry's message must say why: %q", condMal.Message)
	}
	time.Sleep(3 * time.Second) // a heartbeat tick passes: still nothing written
	if got := served(t, srv.DNSAddr, "hand.held.test"); !slices.Equal(got, []string{"198.51.100.7"}) {
		t.Fatalf("hand-made record overwritten: %v", got)
	}
	if got := served(t, srv.DNSAddr, "mal.held.test"); !slices.Equal(got, []string{"198.51.100.8"}) {
		t.Fatalf("record with a malformed registry overwritten: %v", got)
	}
}
