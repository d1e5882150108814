package azure_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/azurefake"
	"github.com/dnsplane/dnsplane/internal/testing/faultproxy"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/azure"
	"github.com/dnsplane/dnsplane/pkg/provider/providertest"
)

const (
	sub = "00000000-0000-0000-0000-000000000001"
	rg  = "dns-rg"
)

func newProvider(t *testing.T, fake *azurefake.Server) *azure.Provider {
	t.Helper()
	p, err := azure.New(context.Background(), azure.Config{SubscriptionID: sub, ResourceGroup: rg, TenantID: "tenant-1",
		ClientID: fake.ClientID, ClientSecret: fake.ClientSecret, EndpointURL: fake.URL, AuthorityHost: fake.URL + "/",
		Transport: fake.Client(), MaxRetries: 2, MaxRetryDelay: 2 * time.Second, ListPageSize: 50, PollFrequency: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{New: func(t *testing.T) providertest.Backend {
		fake := azurefake.New()
		t.Cleanup(fake.Close)
		return providertest.Backend{
			Provider: newProvider(t, fake),
			Restart:  func(t *testing.T) provider.Provider { return newProvider(t, fake) },
		}
	}})
}

func setup(t *testing.T) (*azurefake.Server, *azure.Provider, provider.Zone) {
	t.Helper()
	fake := azurefake.New()
	t.Cleanup(fake.Close)
	p := newProvider(t, fake)
	z, err := p.EnsureZone(context.Background(), provider.ZoneSpec{Name: "example.test", CallerReference: "ref-1"})
	if err != nil {
		t.Fatal(err)
	}
	return fake, p, z
}

func TestThrottledMapsRetryAfter(t *testing.T) {
	fake, p, z := setup(t)
	fake.Throttle(10, 7*time.Second) // above MaxRetryDelay: not waited for
	_, err := p.ListRecordSets(context.Background(), z.ID)
	d, ok := provider.RetryAfter(err)
	if !ok || d != 7*time.Second {
		t.Fatalf("ListRecordSets throttled: %v (retry after %s, %v), want ThrottledError 7s", err, d, ok)
	}
	fake.Throttle(1, 0) // Retry-After: 0 is retried by azcore
	if _, err := p.ListRecordSets(context.Background(), z.ID); err != nil {
		t.Fatalf("after one retried 429: %v", err)
	}
}

func TestETagConflictBetweenReadAndWrite(t *testing.T) {
	fake, p, z := setup(t)
	ctx := context.Background()
	v1 := provider.RecordSet{Name: "www.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate, After: &v1}}); err != nil {
		t.Fatal(err)
	}
	v2 := v1.Clone()
	v2.Targets = []string{"192.0.2.2"}
	// A concurrent writer changes the set after our read, before our PUT.
	fake.BeforePut(func() { fake.TouchRecordSet("example.test", "A", "www") })
	err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionUpdate, Before: &v1, After: &v2}})
	if !errors.Is(err, provider.ErrConflict) {
		t.Fatalf("update racing a concurrent writer: %v, want ErrConflict (412)", err)
	}
	fake.BeforePut(nil)
	// Stale Before: rejected before any write.
	puts := fake.Count("RecordSetsCreateOrUpdate")
	err = p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionUpdate, Before: &v1, After: &v2}})
	if !errors.Is(err, provider.ErrConflict) || fake.Count("RecordSetsCreateOrUpdate") != puts {
		t.Fatalf("stale Before: %v, PUTs %d -> %d", err, puts, fake.Count("RecordSetsCreateOrUpdate"))
	}
}

func TestNextLinkPaging(t *testing.T) {
	fake, p, z := setup(t)
	ctx := context.Background()
	var changes []provider.Change
	for i := range 120 {
		rs := provider.RecordSet{Name: fmt.Sprintf("h%03d.example.test", i), Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
		changes = append(changes, provider.Change{Action: provider.ActionCreate, After: &rs})
	}
	if err := p.ApplyChanges(ctx, z.ID, changes); err != nil {
		t.Fatal(err)
	}
	before := fake.Count("RecordSetsList")
	sets, err := p.ListRecordSets(ctx, z.ID)
	if err != nil || len(sets) != 122 {
		t.Fatalf("listed %d sets, %v; want 122", len(sets), err)
	}
	if n := fake.Count("RecordSetsList") - before; n != 3 {
		t.Errorf("list pages = %d, want 3 (page size 50)", n)
	}
}

func TestEnsureZoneForeignZoneConflict(t *testing.T) {
	fake := azurefake.New()
	t.Cleanup(fake.Close)
	p := newProvider(t, fake)
	ctx := context.Background()
	fake.AddForeignZone(sub, rg, "taken.test")
	_, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "taken.test", CallerReference: "ours"})
	if !errors.Is(err, provider.ErrZoneConflict) {
		t.Fatalf("EnsureZone over a foreign zone: %v, want ErrZoneConflict", err)
	}
	zones, err := p.ListZones(ctx)
	if err != nil || len(zones) != 1 || zones[0].CallerReference != "" {
		t.Fatalf("zones %+v, %v; want only the untouched foreign zone", zones, err)
	}
	if fake.Count("ZonesCreateOrUpdate") != 0 {
		t.Errorf("a zone PUT was sent")
	}
}

func TestBadClientSecretIsInvalidCredentials(t *testing.T) {
	fake := azurefake.New()
	t.Cleanup(fake.Close)
	p, err := azure.New(context.Background(), azure.Config{SubscriptionID: sub, ResourceGroup: rg, TenantID: "t", ClientID: fake.ClientID,
		ClientSecret: "wrong", EndpointURL: fake.URL, AuthorityHost: fake.URL + "/", Transport: fake.Client(), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ListZones(context.Background()); !errors.Is(err, provider.ErrInvalidCredentials) {
		t.Fatalf("ListZones with a wrong secret: %v, want ErrInvalidCredentials", err)
	}
}

// TestTryTimeoutBoundsAHungRequest: an Azure DNS that never answers (faultproxy's hang, token
// requests included) costs each try Config.TryTimeout, not the caller's whole deadline:
// ListZones under a context without a deadline returns an error after MaxRetries+1 tries. The
// wait only catches a hang.
func TestTryTimeoutBoundsAHungRequest(t *testing.T) {
	fake := azurefake.New()
	t.Cleanup(fake.Close)
	proxy := faultproxy.New(fake.URL, faultproxy.Options{TLS: true, Transport: fake.Client().Transport})
	t.Cleanup(proxy.Close)
	proxy.SetPolicy(faultproxy.Always(faultproxy.Hang))
	p, err := azure.New(context.Background(), azure.Config{SubscriptionID: sub, ResourceGroup: rg, TenantID: "tenant-1",
		ClientID: fake.ClientID, ClientSecret: fake.ClientSecret, EndpointURL: proxy.URL(), AuthorityHost: proxy.URL() + "/",
		Transport: proxy.Client(), MaxRetries: 1, MaxRetryDelay: 10 * time.Millisecond, TryTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = testrun.Returns(t, "ListZones through a hung Azure", func() error {
		_, err := p.ListZones(context.Background())
		return err
	})
	if err == nil {
		t.Fatal("ListZones through a hung Azure succeeded")
	}
	if n := proxy.Counts().ByKind[faultproxy.Hang]; n == 0 {
		t.Errorf("no request reached the hung Azure: %v", err)
	}
}
