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

// queryCounter relays every query to a real server and counts the queries it relays.
type queryCounter struct {
	mu sync.Mutex
	n  int
}

func (c *queryCounter) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// relay serves on loopback, relaying each query to upstream over the transport it came in by.
func (c *queryCounter) relay(t *testing.T, upstream string) string {
	return dnstest.Handle(t, func(w dns.ResponseWriter, m *dns.Msg) {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
		resp, _, err := (&dns.Client{Net: w.RemoteAddr().Network(), UDPSize: dns.DefaultMsgSize}).Exchange(m, upstream)
		if err != nil {
			resp = new(dns.Msg).SetRcode(m, dns.RcodeServerFailure)
		}
		_ = w.WriteMsg(resp)
	})
}

// TestReconcileDNSSEC_SteadyStateAsksNothingWithinThePollInterval: a zone signed by the embedded
// server whose every name server answers its keys (its parent outside dnsplane: DSPending, with
// nothing to wait for) resolves its provider once per reconcile and asks its servers nothing
// again until the SOA poll interval has passed since it last asked; then it asks once more.
func TestReconcileDNSSEC_SteadyStateAsksNothingWithinThePollInterval(t *testing.T) {
	ks := testKeys(t, dnssec.RoleCSK)
	raw, err := ks.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var queries queryCounter
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
	providers := &testclient.Providers{Res: provider.Resolved{Account: "apps/local",
		Provider: testclient.Capable{Caps: provider.Capabilities{SignsOnline: true}}, ServedBy: []string{server}}}
	clock := testclock.NewFakeClock(time.Now())
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(sec).Build(), Recorder: record.NewFakeRecorder(100),
		Providers: providers, Clock: clock, SOAPollInterval: 30 * time.Second}
	z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "example", Generation: 1},
		Spec: dnsv1.DNSZoneSpec{Zone: "example.test", ProviderRef: dnsv1.SecretReference{Name: "local"}, DNSSEC: &dnsv1.DNSSEC{Enabled: true}}}
	z.Status.ZoneID = "example.test"
	z.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: metav1.ConditionTrue, Reason: dnsv1.ReasonZoneAvailable}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reconcile := func(step string, wantQueries int) {
		t.Helper()
		q, asked := queries.count(), len(providers.Asked())
		if _, err := r.reconcileDNSSEC(ctx, z); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure); c == nil || c.Reason != dnsv1.ReasonDSPending {
			t.Fatalf("%s: Secure = %+v, want DSPending", step, c)
		}
		if got := queries.count() - q; got != wantQueries {
			t.Errorf("%s: %d DNS queries, want %d", step, got, wantQueries)
		}
		if got := len(providers.Asked()) - asked; got != 1 {
			t.Errorf("%s: the provider resolved %d times, want once", step, got)
		}
	}
	reconcile("first look", 1)
	for _, step := range []string{"second reconcile", "third reconcile"} {
		clock.Step(10 * time.Second)
		reconcile(step, 0)
	}
	clock.Step(10 * time.Second)
	reconcile("the poll interval after the first look", 1)
	reconcile("right after it", 0)
}
