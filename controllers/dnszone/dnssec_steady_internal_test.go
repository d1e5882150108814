package dnszone

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/testclient"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// queryCounter relays every query to a real server, answering DS queries itself (the parent's
// servers of a linked zone) from ds, and counts the queries it gets.
type queryCounter struct {
	ds []dns.RR
	mu sync.Mutex
	n  int
}

func (c *queryCounter) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// relay serves on loopback, relaying each query but DS to upstream over the transport it came
// in by.
func (c *queryCounter) relay(t *testing.T, upstream string) string {
	return dnstest.Handle(t, func(w dns.ResponseWriter, m *dns.Msg) {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
		if len(m.Question) == 1 && m.Question[0].Qtype == dns.TypeDS {
			resp := new(dns.Msg).SetReply(m)
			resp.Answer = c.ds
			_ = w.WriteMsg(resp)
			return
		}
		resp, _, err := (&dns.Client{Net: w.RemoteAddr().Network(), UDPSize: dns.DefaultMsgSize}).Exchange(m, upstream)
		if err != nil {
			resp = new(dns.Msg).SetRcode(m, dns.RcodeServerFailure)
		}
		_ = w.WriteMsg(resp)
	})
}

// TestReconcileDNSSEC_SteadyStateAsksNothingWithinThePollInterval: a zone signed by the embedded
// server whose every name server answers its keys, with nothing to wait for (its parent outside
// dnsplane: DSPending; or linked to a parent DNSZone whose servers answer its DS set: Secure),
// resolves its provider once per reconcile (and its parent's at a look) and asks no server
// again until the SOA poll interval has passed since it last asked; then it asks once more:
// DNSKEY of its server, and for the linked zone DS of the parent's, then DS, DNSKEY and SOA for
// the chain.
func TestReconcileDNSSEC_SteadyStateAsksNothingWithinThePollInterval(t *testing.T) {
	for _, tc := range []struct {
		name            string
		linked          bool
		reason          string
		queries, lookup int // at a look: DNS queries, provider resolves
	}{
		{"parent outside dnsplane", false, dnsv1.ReasonDSPending, 1, 1},
		{"linked to a parent DNSZone", true, dnsv1.ReasonSecure, 5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steadyZone(t, tc.linked, tc.reason, tc.queries, tc.lookup)
		})
	}
}

func steadyZone(t *testing.T, linked bool, reason string, lookQueries, lookResolves int) {
	ks := testKeys(t, dnssec.RoleCSK)
	raw, err := ks.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	queries := queryCounter{ds: ks.DS(dsTTL, dnssec.Active)}
	server := queries.relay(t, signedServer(t, &ks))
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "example" + KeySecretSuffix},
		Data: map[string][]byte{dnssec.SecretKey: raw}}
	parent := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "parent"},
		Spec: dnsv1.DNSZoneSpec{Zone: "test", ProviderRef: dnsv1.SecretReference{Name: "local"}}}
	providers := &testclient.Providers{Res: provider.Resolved{Account: "apps/local",
		Provider: testclient.Capable{Caps: provider.Capabilities{SignsOnline: true}}, ServedBy: []string{server}}}
	clock := testclock.NewFakeClock(time.Now())
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(sec, parent).Build(), Recorder: record.NewFakeRecorder(100),
		Providers: providers, Clock: clock, SOAPollInterval: 30 * time.Second}
	z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "example", Generation: 1},
		Spec: dnsv1.DNSZoneSpec{Zone: "example.test", ProviderRef: dnsv1.SecretReference{Name: "local"},
			DNSSEC: &dnsv1.DNSSEC{Enabled: true}, LinkToParentDomain: linked}}
	z.Status.ZoneID = "example.test"
	z.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: metav1.ConditionTrue, Reason: dnsv1.ReasonZoneAvailable}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reconcile := func(step string, wantQueries, wantResolves int) {
		t.Helper()
		q, asked := queries.count(), len(providers.Asked())
		if _, err := r.reconcileDNSSEC(ctx, z); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure); c == nil || c.Reason != reason {
			t.Fatalf("%s: Secure = %+v, want %s", step, c, reason)
		}
		if got := queries.count() - q; got != wantQueries {
			t.Errorf("%s: %d DNS queries, want %d", step, got, wantQueries)
		}
		if got := len(providers.Asked()) - asked; got != wantResolves {
			t.Errorf("%s: %d provider resolves, want %d", step, got, wantResolves)
		}
	}
	reconcile("first look", lookQueries, lookResolves)
	for _, step := range []string{"second reconcile", "third reconcile"} {
		clock.Step(10 * time.Second)
		reconcile(step, 0, 1)
	}
	clock.Step(10 * time.Second)
	reconcile("the poll interval after the first look", lookQueries, lookResolves)
	reconcile("right after it", 0, 1)
}
