package factory

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
)

// countingSecrets returns controller-runtime's in-memory client holding objs, and the number of
// Secret GETs made through it.
func countingSecrets(t *testing.T, objs ...client.Object) (client.Client, *atomic.Int64) {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	var gets atomic.Int64
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				gets.Add(1)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("the factory must never list")
		},
	}).Build()
	return c, &gets
}

// TestResolve_MemoisedAndCoalesced: reconciles resolve a Secret from memory:
// 50 concurrent first uses share one GET, and later uses make none. A zone writer's
// ResolveAccount reads it again only once its provider is older than Reread, keeps the same
// provider while the Secret is unchanged, and builds a new one when it was rotated.
func TestResolve_MemoisedAndCoalesced(t *testing.T) {
	srv := pdnstest.Start(t)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "pdns"}, Type: TypePDNS,
		Data: map[string][]byte{"PDNS_API_URL": []byte(srv.APIURL), "PDNS_API_KEY": []byte(srv.Key)}}
	c, gets := countingSecrets(t, sec)
	f := &Factory{Client: c, Reread: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	provs := make([]provider.Provider, 50)
	for i := range provs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := f.Resolve(ctx, "team", "pdns")
			if err != nil {
				t.Error(err)
			}
			provs[i] = res.Provider
		}()
	}
	wg.Wait()
	if n := gets.Load(); n != 1 {
		t.Fatalf("50 concurrent first resolves made %d Secret GETs, want 1", n)
	}
	for range 10 {
		if _, err := f.Resolve(ctx, "team", "pdns"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.ResolveAccount(ctx, "team/pdns"); err != nil {
			t.Fatal(err)
		}
	}
	if n := gets.Load(); n != 1 {
		t.Fatalf("memoised resolves made %d Secret GETs in all, want 1", n)
	}

	f.Reread = -1 // every writer call reads the Secret
	p, err := f.ResolveAccount(ctx, "team/pdns")
	if err != nil {
		t.Fatal(err)
	}
	if n := gets.Load(); n != 2 {
		t.Fatalf("a stale writer provider: %d GETs in all, want 2", n)
	}
	if p != provs[0] {
		t.Fatal("the Secret is unchanged, but the provider was rebuilt")
	}
	sec.Data["PDNS_API_KEY"] = []byte("rotated")
	if err := c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	if p, err = f.ResolveAccount(ctx, "team/pdns"); err != nil {
		t.Fatal(err)
	}
	if p == provs[0] {
		t.Fatal("the Secret was rotated, but the writer kept the old provider")
	}
	res, err := f.Resolve(ctx, "team", "pdns")
	if err != nil || res.Provider != p {
		t.Fatalf("a reconcile after the writer's re-read: %v, same provider %t; want the rotated one", err, res.Provider == p)
	}
}

// TestResolve_RejectedCredentialsAreReadAgain: after the provider rejects
// the credentials, the next Resolve reads the Secret again; while it is unchanged it returns the
// rejection without calling the provider, and once it is fixed the new provider works.
func TestResolve_RejectedCredentialsAreReadAgain(t *testing.T) {
	srv := pdnstest.Start(t)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "pdns"}, Type: TypePDNS,
		Data: map[string][]byte{"PDNS_API_URL": []byte(srv.APIURL), "PDNS_API_KEY": []byte("wrong-key")}}
	c, gets := countingSecrets(t, sec)
	m, err := counting.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	requests := m.Requests
	f := &Factory{Client: c, Requests: m, Reread: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := f.Resolve(ctx, "team", "pdns")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Provider.ListZones(ctx); !errors.Is(err, provider.ErrInvalidCredentials) {
		t.Fatalf("ListZones with a wrong key: %v, want ErrInvalidCredentials", err)
	}
	calls := testutil.CollectAndCount(requests)
	before := testutil.ToFloat64(requests.WithLabelValues("pdns", counting.OpListZones, counting.CodeInvalidCredentials))
	for _, resolve := range []func() error{
		func() error { _, err := f.Resolve(ctx, "team", "pdns"); return err },
		func() error { _, err := f.ResolveAccount(ctx, "team/pdns"); return err },
	} {
		if err := resolve(); !errors.Is(err, provider.ErrInvalidCredentials) {
			t.Fatalf("resolve of a rejected, unchanged Secret: %v, want ErrInvalidCredentials", err)
		}
	}
	if n := gets.Load(); n != 3 {
		t.Fatalf("%d Secret GETs, want 3 (the first resolve, then one per use after the rejection)", n)
	}
	if testutil.CollectAndCount(requests) != calls || testutil.ToFloat64(requests.WithLabelValues("pdns", counting.OpListZones, counting.CodeInvalidCredentials)) != before {
		t.Fatal("a rejected, unchanged Secret called the provider again")
	}
	sec.Data["PDNS_API_KEY"] = []byte(srv.Key)
	if err := c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	res, err = f.Resolve(ctx, "team", "pdns")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Provider.ListZones(ctx); err != nil {
		t.Fatalf("ListZones after the fix: %v", err)
	}
}

// TestResolve_AnEditReachesReconcilesAfterResolveReread: an edit of a Secret that no zone writer
// call would pick up (DNS_ADDRESS: where a DNSZone's SOA check goes) reaches Resolve once its
// provider is older than ResolveReread; before that Resolve reads nothing, and an unchanged
// Secret keeps its provider. (A newcomer fixing DNS_ADDRESS on an AwaitingSOA zone had to
// restart the manager.)
func TestResolve_AnEditReachesReconcilesAfterResolveReread(t *testing.T) {
	srv := pdnstest.Start(t)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "pdns"}, Type: TypePDNS,
		Data: map[string][]byte{"PDNS_API_URL": []byte(srv.APIURL), "PDNS_API_KEY": []byte(srv.Key)}}
	c, gets := countingSecrets(t, sec)
	f := &Factory{Client: c, Reread: time.Hour, ResolveReread: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := f.Resolve(ctx, "team", "pdns")
	if err != nil {
		t.Fatal(err)
	}
	sec.Data[KeyDNSAddress] = []byte("127.0.0.1:5353")
	if err := c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	if res, err := f.Resolve(ctx, "team", "pdns"); err != nil || res.DNSAddress != first.DNSAddress || gets.Load() != 1 {
		t.Fatalf("within ResolveReread: %v, DNS address %q, %d GETs; want the memoised provider and 1 GET", err, res.DNSAddress, gets.Load())
	}
	f.ResolveReread = -1 // every Resolve reads the Secret
	res, err := f.Resolve(ctx, "team", "pdns")
	if err != nil {
		t.Fatal(err)
	}
	if res.DNSAddress != "127.0.0.1:5353" {
		t.Fatalf("after ResolveReread: DNS address %q, want the edited 127.0.0.1:5353", res.DNSAddress)
	}
	again, err := f.Resolve(ctx, "team", "pdns")
	if err != nil || again.Provider != res.Provider {
		t.Fatalf("an unchanged Secret read again: %v, same provider %t; want the same provider", err, again.Provider == res.Provider)
	}
}
