package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/metrictest"
	"github.com/dnsplane/dnsplane/internal/testing/secondarytest"
)

// answersA reports whether addr answers name's A query with ip (UDP, 1 s timeout).
func answersAAt(addr, name, ip string) bool {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, _, err := (&dns.Client{Net: "udp"}).ExchangeContext(ctx, m, addr)
	if err != nil || resp.Rcode != dns.RcodeSuccess {
		return false
	}
	for _, rr := range resp.Answer {
		if a, ok := rr.(*dns.A); ok && a.A.String() == ip {
			return true
		}
	}
	return false
}

// waitAnswer polls addr every 5 ms until it answers name with ip and returns when it did, or
// an error after timeout. The polling is the measurement's resolution.
func waitAnswer(timeout time.Duration, who, addr, name, ip string) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for !answersAAt(addr, name, ip) {
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s does not answer %s A %s within %s", who, name, ip, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Now(), nil
}

// waitAll waits, concurrently, until each secondary answers name with ip, and returns when
// each did, by name.
func waitAll(t *testing.T, name, ip string, secs ...*secondarytest.Server) map[string]time.Time {
	t.Helper()
	type result struct {
		name string
		at   time.Time
		err  error
	}
	ch := make(chan result, len(secs))
	for _, s := range secs {
		go func() {
			at, err := waitAnswer(60*time.Second, s.Name, s.Addr, name, ip)
			ch <- result{s.Name, at, err}
		}()
	}
	out := map[string]time.Time{}
	for range secs {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		out[r.name] = r.at
	}
	return out
}

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// secondaries is a cluster whose embedded server has a real BIND and a real NSD as secondaries
// of zone (--local-notify), in namespace ns, with the zone's DNSZone z Ready and both
// secondaries holding the primary's zone.
type secondaries struct {
	c         *cluster
	bind, nsd *secondarytest.Server
	ns        string
	z         *dnsv1.DNSZone
}

// withSecondaries starts it: a cluster named owner with opts (NotifyTargets set here), the
// namespace "apps" with a dnsplane.io/local Secret, and zone's DNSZone.
func withSecondaries(t *testing.T, owner, zone string, opts clusterOptions) secondaries {
	t.Helper()
	w := secondaries{bind: secondarytest.BIND(t), nsd: secondarytest.NSD(t), ns: "apps"}
	opts.NotifyTargets = []string{w.bind.Addr, w.nsd.Addr}
	w.c = startClusterWith(t, owner, 30*time.Second, 5*time.Minute, opts)
	w.c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "dns"}, Type: "dnsplane.io/local"})
	w.z = zoneObj(w.ns, "z", zone, nil)
	w.c.create(w.z)
	w.c.waitCondition(w.z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 60*time.Second)
	w.bind.Start(t, w.c.dnsAddr, zone)
	w.nsd.Start(t, w.c.dnsAddr, zone)
	secondarytest.SameZone(t, 60*time.Second, w.c.dnsAddr, zone, w.bind, w.nsd)
	return w
}

// TestManager_RealSecondariesServeEachChangeViaNotifyAndIXFR: a manager with --local-notify naming a real BIND and a
// real NSD, both secondaries of its embedded server, gets each DNSEndpoint published to them
// by NOTIFY and an incremental IXFR. The time from the embedded server answering a new name to
// each secondary answering it is measured and logged (never asserted: tests hold no timing);
// the zone each secondary transfers out equals the primary's at the end.
func TestManager_RealSecondariesServeEachChangeViaNotifyAndIXFR(t *testing.T) {
	const zone, changes = "secondaries.test", 20
	reg := prometheus.NewRegistry()
	w := withSecondaries(t, "secondaries", zone, clusterOptions{Registerer: reg})
	c, bind, nsd, ns := w.c, w.bind, w.nsd, w.ns
	incremental := map[string]string{"type": "ixfr", "result": "incremental"}
	before := metrictest.Value(t, reg, "dnsplane_dnsserver_transfers_total", incremental)

	lag := map[string][]time.Duration{}
	for i := range changes {
		name, ip := fmt.Sprintf("h%d.%s", i, zone), fmt.Sprintf("192.0.2.%d", i+1)
		ep := endpointObj(ns, fmt.Sprintf("h%d", i), dnsv1.Endpoint{DNSName: name, RecordType: "A", Targets: dnsv1.Targets{ip}})
		c.create(ep)
		served, err := waitAnswer(60*time.Second, "the embedded server", c.dnsAddr, name, ip)
		if err != nil {
			t.Fatal(err)
		}
		for s, at := range waitAll(t, name, ip, bind, nsd) {
			lag[s] = append(lag[s], at.Sub(served))
		}
	}
	for _, s := range []string{"BIND", "NSD"} {
		t.Logf("%s serves a change after the embedded server, over %d changes: p50 %s, p99 %s, max %s", s, changes,
			percentile(lag[s], 50).Round(time.Millisecond), percentile(lag[s], 99).Round(time.Millisecond), slices.Max(lag[s]).Round(time.Millisecond))
	}
	secondarytest.SameZone(t, 60*time.Second, c.dnsAddr, zone, bind, nsd)
	// Each change reached each secondary by an incremental IXFR (a change may carry more than
	// one record set, and the TXT registry records, but is one zone version per batch).
	if got := metrictest.Value(t, reg, "dnsplane_dnsserver_transfers_total", incremental) - before; got < 2*changes {
		t.Errorf("%v incremental IXFRs for %d changes and 2 secondaries, want at least %d", got, changes, 2*changes)
	}
	if got := metrictest.Value(t, reg, "dnsplane_dnsserver_notifies_total", map[string]string{"result": "acked"}); got < 2*changes {
		t.Errorf("%v NOTIFY acknowledged, want at least %d", got, 2*changes)
	}
}
