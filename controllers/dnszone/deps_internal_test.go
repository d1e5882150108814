package dnszone

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/testclient"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// fakeDNS answers SOAAny with err and records the servers asked.
type fakeDNS struct {
	err   error
	asked [][]string
}

func (f *fakeDNS) SOAAny(_ context.Context, servers []string, _ string) error {
	f.asked = append(f.asked, servers)
	return f.err
}

func (f *fakeDNS) Addresses(context.Context, string, string) ([]netip.Addr, error) { return nil, nil }

// observed is a histogram (only Observe may be called) that records what it observes.
type observed struct {
	prometheus.Histogram
	seconds []float64
}

func (o *observed) Observe(v float64) { o.seconds = append(o.seconds, v) }

// TestReconcileZone_SOAAtTheSecretsDNSAddressSetsZoneAvailableOnce (phases
// tested with fakes of the small interfaces): a zone synced for its generation is only polled
// over DNS, at the Secret's DNS address rather than its name servers; while SOA fails it is
// AwaitingSOA and polled again after SOAPollInterval, and the first answer sets ZoneAvailable and
// observes the creation-to-available delay once.
func TestReconcileZone_SOAAtTheSecretsDNSAddressSetsZoneAvailableOnce(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	delays := &observed{}
	m := &Metrics{AvailableDelay: delays}
	dns := &fakeDNS{err: errors.New("refused")}
	r := &Reconciler{
		Client:          zonesClient(t),
		Providers:       &testclient.Providers{Res: provider.Resolved{Account: "apps/creds", DNSAddress: "127.0.0.1:5353"}},
		Writers:         testclient.NoWriters{T: t},
		DNS:             dns,
		Metrics:         m,
		Clock:           testclock.NewFakePassiveClock(now),
		SOAPollInterval: 5 * time.Second,
		ResyncInterval:  time.Hour,
	}
	synced := metav1.NewTime(now.Add(-time.Minute))
	z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "example", Generation: 1,
		CreationTimestamp: metav1.NewTime(now.Add(-10 * time.Second))}, Spec: dnsv1.DNSZoneSpec{Zone: "example.test"}}
	z.Status.ZoneID, z.Status.NameServers, z.Status.LastSyncGeneration, z.Status.LastSyncTimestamp = "Z1", []string{"ns1.example.net"}, 1, &synced
	z.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: metav1.ConditionFalse, Reason: dnsv1.ReasonAwaitingSOA}}

	res, err := r.reconcileZone(context.Background(), z)
	if err != nil || res.RequeueAfter != 5*time.Second {
		t.Fatalf("SOA refused: %+v, %v; want a poll after 5s", res, err)
	}
	if c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionZoneAvailable); c == nil || c.Reason != dnsv1.ReasonAwaitingSOA {
		t.Fatalf("ZoneAvailable = %+v, want AwaitingSOA", c)
	}
	dns.err = nil
	for range 2 {
		if res, err := r.reconcileZone(context.Background(), z); err != nil || res.RequeueAfter != time.Hour {
			t.Fatalf("SOA answered: %+v, %v; want the resync after 1h", res, err)
		}
	}
	if !meta.IsStatusConditionTrue(z.Status.Conditions, dnsv1.ConditionZoneAvailable) || z.Status.AvailableTimestamp == nil {
		t.Fatalf("conditions %+v, available at %v; want ZoneAvailable", z.Status.Conditions, z.Status.AvailableTimestamp)
	}
	if got := fmt.Sprint(dns.asked); got != "[[127.0.0.1:5353] [127.0.0.1:5353] [127.0.0.1:5353]]" {
		t.Errorf("SOA asked at %s, want the Secret's DNS address each time", got)
	}
	if got := fmt.Sprint(delays.seconds); got != "[10]" {
		t.Errorf("available delays observed %s, want [10] (once, 10 s after creation)", got)
	}
}

// TestReconcileZone_MissingSecretIsReportedWithoutDNS: a provider Secret that cannot be resolved
// (provider.ErrProviderNotFound) is reported on the zone and asks no DNS server.
func TestReconcileZone_MissingSecretIsReportedWithoutDNS(t *testing.T) {
	dns := &fakeDNS{}
	r := &Reconciler{Providers: &testclient.Providers{Err: fmt.Errorf("secret apps/creds: %w", provider.ErrProviderNotFound)},
		Writers: testclient.NoWriters{T: t}, DNS: dns, SOAPollInterval: time.Second}
	z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "example", Generation: 1}, Spec: dnsv1.DNSZoneSpec{Zone: "example.test"}}
	if _, err := r.reconcileZone(context.Background(), z); err != nil {
		t.Fatalf("missing Secret: %v, want it reported in status", err)
	}
	if c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionZoneAvailable); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("ZoneAvailable = %+v, want False", c)
	}
	if len(dns.asked) != 0 {
		t.Errorf("DNS asked %v, want nothing", dns.asked)
	}
}
