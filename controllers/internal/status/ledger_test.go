package status

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// countingReader counts the Gets that reach a reader.
type countingReader struct {
	client.Reader
	gets int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestLedger_ReadsPastAStaleCache: a cached copy older than this process's own write is read
// again from the live reader (once per version), the live copy is what the caller sees, a copy
// equal to the last write costs no live read, an object never written costs none either, and a
// nil Ledger reads the cache only.
func TestLedger_ReadsPastAStaleCache(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := dnsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mk := func(rv, reason string) *dnsv1.DNSEndpoint {
		ep := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "u1", ResourceVersion: rv}}
		ep.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason}}
		return ep
	}
	reader := func(ep *dnsv1.DNSEndpoint) client.Reader {
		return fake.NewClientBuilder().WithScheme(scheme).WithObjects(ep).Build()
	}
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "ns", Name: "a"}
	// The fake client sets its own resourceVersions: read them back for the expectations.
	cache := &countingReader{Reader: reader(mk("", "Old"))}
	live := &countingReader{Reader: reader(mk("", "New"))}
	l := &Ledger{Live: live}

	got := &dnsv1.DNSEndpoint{}
	if err := l.Get(ctx, cache, key, got); err != nil {
		t.Fatal(err)
	}
	if live.gets != 0 || got.Status.Conditions[0].Reason != "Old" {
		t.Fatalf("never written: %d live reads, reason %s; want 0 and the cached Old", live.gets, got.Status.Conditions[0].Reason)
	}
	// This process wrote a version the cache has not seen yet.
	wrote := &dnsv1.DNSEndpoint{}
	if err := live.Reader.Get(ctx, key, wrote); err != nil {
		t.Fatal(err)
	}
	wrote.ResourceVersion = "123456" // not the fake client's initial "999"
	l.Wrote(wrote)
	if err := l.Get(ctx, cache, key, got); err != nil {
		t.Fatal(err)
	}
	if live.gets != 1 || got.Status.Conditions[0].Reason != "New" {
		t.Fatalf("stale cache: %d live reads, reason %s; want 1 and the live New", live.gets, got.Status.Conditions[0].Reason)
	}
	// The live read's version is now the recorded one: a cache at that version costs nothing.
	cache.Reader = live.Reader
	if err := l.Get(ctx, cache, key, got); err != nil {
		t.Fatal(err)
	}
	if live.gets != 1 {
		t.Fatalf("cache caught up: %d live reads, want still 1", live.gets)
	}
	l.Forget(got)
	var nilLedger *Ledger
	nilLedger.Wrote(got)
	nilLedger.Forget(got)
	if err := nilLedger.Get(ctx, cache, key, got); err != nil || live.gets != 1 {
		t.Fatalf("nil Ledger: err %v, %d live reads; want nil and 1", err, live.gets)
	}
}
