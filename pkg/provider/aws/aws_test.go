package aws_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/faultproxy"
	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/aws"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
	"github.com/dnsplane/dnsplane/pkg/provider/providertest"
)

func newProvider(t *testing.T, fake *route53fake.Server, mod func(*aws.Config)) *aws.Provider {
	t.Helper()
	cfg := aws.Config{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", Region: "us-east-1", EndpointURL: fake.URL,
		HTTPClient: fake.Client(), MaxAttempts: 3, MaxBackoff: 5 * time.Millisecond, ListPageSize: 100}
	if mod != nil {
		mod(&cfg)
	}
	p, err := aws.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{New: func(t *testing.T) providertest.Backend {
		fake := route53fake.New()
		t.Cleanup(fake.Close)
		return providertest.Backend{
			Provider: newProvider(t, fake, nil),
			Restart:  func(t *testing.T) provider.Provider { return newProvider(t, fake, nil) },
		}
	}})
}

func setup(t *testing.T, mod func(*aws.Config)) (*route53fake.Server, *aws.Provider, provider.Zone) {
	t.Helper()
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	p := newProvider(t, fake, mod)
	z, err := p.EnsureZone(context.Background(), provider.ZoneSpec{Name: "example.test", CallerReference: "ref-1"})
	if err != nil {
		t.Fatal(err)
	}
	return fake, p, z
}

func aSet(name string) provider.RecordSet {
	return provider.RecordSet{Name: name, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
}

func TestThrottlingIsRetriedThenMapped(t *testing.T) {
	fake, p, z := setup(t, nil)
	ctx := context.Background()
	rs := aSet("www.example.test")
	fake.Throttle(2) // GetHostedZone and ChangeResourceRecordSets retry within 3 attempts
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate, After: &rs}}); err != nil {
		t.Fatalf("ApplyChanges after 2 throttled requests: %v", err)
	}
	fake.Throttle(3)
	_, err := p.ListRecordSets(ctx, z.ID)
	var te *provider.ThrottledError
	if !errors.Is(err, provider.ErrThrottled) || !errors.As(err, &te) {
		t.Fatalf("ListRecordSets throttled beyond MaxAttempts: %v, want a ThrottledError", err)
	}
	if _, ok := provider.RetryAfter(err); !ok {
		t.Fatalf("RetryAfter does not report throttling")
	}
	if n := fake.Count("ListResourceRecordSets"); n != 3 {
		t.Errorf("ListResourceRecordSets requests = %d, want 3 attempts", n)
	}
}

func TestLargeBatchSplitByBothLimits(t *testing.T) {
	fake, raw, z := setup(t, nil)
	p := guard.New(raw, guard.Options{}) // the only splitter, as the factory builds the provider
	ctx := context.Background()
	// 2,000 single-record A creates (element limit), then 500 TXT sets of
	// 1,000 characters each (value limit: 1,011 characters quoted).
	var changes []provider.Change
	for i := range 2000 {
		rs := provider.RecordSet{Name: fmt.Sprintf("h%04d.example.test", i), Type: "A", TTL: 60, Targets: []string{fmt.Sprintf("10.0.%d.%d", i/256, i%256)}}
		changes = append(changes, provider.Change{Action: provider.ActionCreate, After: &rs})
	}
	for i := range 500 {
		rs := provider.RecordSet{Name: fmt.Sprintf("t%04d.example.test", i), Type: "TXT", TTL: 60, Targets: []string{strings.Repeat("v", 1000)}}
		changes = append(changes, provider.Change{Action: provider.ActionCreate, After: &rs})
	}
	if err := p.ApplyChanges(ctx, z.ID, changes); err != nil {
		t.Fatal(err)
	}
	// 1000 + 1000 A; 31 TXT per request (31*1011 = 31,341): 17 requests for 500.
	sizes := fake.BatchSizes()
	if got, want := len(sizes), 2+17; got != want {
		t.Fatalf("%d ChangeResourceRecordSets requests %v, want %d", got, sizes, want)
	}
	if sizes[0] != 1000 || sizes[1] != 1000 || sizes[2] != 31 {
		t.Errorf("batch sizes %v", sizes[:3])
	}
	sets, err := p.ListRecordSets(ctx, z.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2500+2 {
		t.Fatalf("listed %d sets, want 2502", len(sets))
	}
	// Updates are DELETE+CREATE: 1,000 single-record updates take 2 requests.
	var updates []provider.Change
	for _, c := range changes[:1000] {
		nv := c.After.Clone()
		nv.TTL = 120
		updates = append(updates, provider.Change{Action: provider.ActionUpdate, Before: c.After, After: &nv})
	}
	before := len(fake.BatchSizes())
	if err := p.ApplyChanges(ctx, z.ID, updates); err != nil {
		t.Fatal(err)
	}
	if got := len(fake.BatchSizes()) - before; got != 2 {
		t.Errorf("1,000 updates took %d requests, want 2", got)
	}
	if err := p.DeleteZone(ctx, z.ID); err != nil {
		t.Fatalf("DeleteZone with 2,500 sets: %v", err)
	}
}

func TestEnsureZoneConflictWithForeignZone(t *testing.T) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	p := newProvider(t, fake, nil)
	ctx := context.Background()
	foreign := fake.AddForeignZone("taken.test.", "console-1234")
	_, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "taken.test", CallerReference: "ours"})
	if !errors.Is(err, provider.ErrZoneConflict) {
		t.Fatalf("EnsureZone over a foreign zone: %v, want ErrZoneConflict", err)
	}
	zones, err := p.ListZones(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(zones) != 1 || zones[0].ID != foreign {
		t.Fatalf("zones %+v, want only the foreign %s", zones, foreign)
	}
}

func TestEnsureZoneAfterCrashBeforeTagging(t *testing.T) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	p := newProvider(t, fake, nil)
	// Created with our caller reference, but the tag never written.
	id := fake.AddForeignZone("crash.test", "ref-crash")
	z, err := p.EnsureZone(context.Background(), provider.ZoneSpec{Name: "crash.test", CallerReference: "ref-crash", Tags: map[string]string{"k": "v"}})
	if err != nil || z.ID != id || z.CallerReference != "ref-crash" || z.Tags["k"] != "v" {
		t.Fatalf("EnsureZone = %+v, %v; want adopted zone %s", z, err, id)
	}
	if strings.HasPrefix(z.ID, "/") || len(z.NameServers) != 4 {
		t.Errorf("zone ID %q, name servers %v", z.ID, z.NameServers)
	}
}

func TestEnsureZoneReusedCallerReferenceAfterDelete(t *testing.T) {
	_, p, z := setup(t, nil)
	ctx := context.Background()
	if err := p.DeleteZone(ctx, z.ID); err != nil {
		t.Fatal(err)
	}
	z2, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "example.test", CallerReference: "ref-1"})
	if err != nil || z2.ID == z.ID || z2.CallerReference != "ref-1" {
		t.Fatalf("re-ensure after delete = %+v, %v", z2, err)
	}
	again, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "example.test", CallerReference: "ref-1"})
	if err != nil || again.ID != z2.ID {
		t.Fatalf("third ensure = %+v, %v; want %s", again, err, z2.ID)
	}
}

func TestWaitForSyncPollsGetChange(t *testing.T) {
	fake, p, z := setup(t, func(c *aws.Config) { c.WaitForSync = true; c.SyncPollInterval = time.Millisecond })
	rs := aSet("www.example.test")
	if err := p.ApplyChanges(context.Background(), z.ID, []provider.Change{{Action: provider.ActionCreate, After: &rs}}); err != nil {
		t.Fatal(err)
	}
	if n := fake.Count("GetChange"); n != 2 {
		t.Errorf("GetChange polls = %d, want 2 (PENDING, INSYNC)", n)
	}
}

func TestNewRejectsHalfStaticCredentials(t *testing.T) {
	if _, err := aws.New(context.Background(), aws.Config{AccessKeyID: "AKID"}); !errors.Is(err, provider.ErrInvalidCredentials) {
		t.Fatalf("New with only an access key: %v", err)
	}
}

func TestRawBatchLimitsEnforcedByFake(t *testing.T) {
	// The fake itself rejects a request over the limits: a provider sending
	// everything in one request would fail (guards the split test).
	_, p, z := setup(t, nil)
	rs := provider.RecordSet{Name: "big.example.test", Type: "A", TTL: 60}
	for i := range 1001 {
		rs.Targets = append(rs.Targets, fmt.Sprintf("10.%d.%d.1", i/256, i%256))
	}
	err := p.ApplyChanges(context.Background(), z.ID, []provider.Change{{Action: provider.ActionCreate, After: &rs}})
	if !errors.Is(err, provider.ErrInvalidChange) {
		t.Fatalf("one set of 1,001 records: %v, want ErrInvalidChange", err)
	}
}

// TestDeleteZone_ProviderSendsOneRequestGuardSplitsDeletions:
// the provider's DeleteZone deletes the zone's sets in one ChangeResourceRecordSets and never
// splits (1,001 deletions exceed Route 53's 1,000 elements: rejected, nothing deleted); the
// guard, the only splitter, deletes them first in batches of 1,000 + 1 (provider.ZoneDrainer),
// then the empty zone.
func TestDeleteZone_ProviderSendsOneRequestGuardSplitsDeletions(t *testing.T) {
	fake, p, z := setup(t, nil)
	providertest.DeleteZoneIsSplitByTheGuard(t, p, z.ID, providertest.Requests{
		Sent:     func() int { return fake.Count("ChangeResourceRecordSets") },
		Accepted: fake.BatchSizes,
		Rejected: provider.ErrInvalidChange,
	})
}

// TestTimeoutBoundsAHungRequest: a Route 53 that never answers (faultproxy's hang) costs each
// attempt Config.Timeout, not the caller's whole deadline: ListZones under a context without a
// deadline returns an error after MaxAttempts attempts. The wait only catches a hang.
func TestTimeoutBoundsAHungRequest(t *testing.T) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	proxy := faultproxy.New(fake.URL, faultproxy.Options{})
	t.Cleanup(proxy.Close)
	proxy.SetPolicy(faultproxy.Always(faultproxy.Hang))
	p := newProvider(t, fake, func(c *aws.Config) {
		c.HTTPClient, c.EndpointURL, c.Timeout, c.MaxAttempts = nil, proxy.URL(), 100*time.Millisecond, 2
	})
	err := testrun.Returns(t, "ListZones through a hung Route 53", func() error {
		_, err := p.ListZones(context.Background())
		return err
	})
	if err == nil {
		t.Fatal("ListZones through a hung Route 53 succeeded")
	}
	if n := proxy.Counts().ByKind[faultproxy.Hang]; n != 2 {
		t.Errorf("%d attempts reached the hung Route 53, want MaxAttempts (2): %v", n, err)
	}
}

// TestChangeSync_PendingUntilGetChangeSaysInSync: a write is recorded with its second; InSync
// stays below it while GetChange says PENDING (the fake's first answer), reaches it at INSYNC,
// and then forgets the change: a further InSync asks nothing.
func TestChangeSync_PendingUntilGetChangeSaysInSync(t *testing.T) {
	fake, p, z := setup(t, nil)
	ctx := context.Background()
	if got := p.Submitted(z.ID); got != 0 {
		t.Fatalf("Submitted before any write = %d, want 0", got)
	}
	if err := p.ApplyChanges(ctx, z.ID, []provider.Change{{Action: provider.ActionCreate, After: ptrSet(aSet("a.example.test"))}}); err != nil {
		t.Fatal(err)
	}
	at := p.Submitted(z.ID)
	if at == 0 {
		t.Fatal("Submitted after a write = 0")
	}
	s, err := p.InSync(ctx, z.ID)
	if err != nil || s >= at {
		t.Fatalf("InSync while PENDING = %d, %v; want below %d", s, err, at)
	}
	// INSYNC now: nothing is pending, and InSync is the second before the current one, so it
	// reaches the write's second once the clock has left it, with no further GetChange.
	if _, err = p.InSync(ctx, z.ID); err != nil {
		t.Fatal(err)
	}
	before := fake.Count("GetChange")
	testrun.Eventually(t, 5*time.Second, "InSync reaches the write's second", func() error {
		if s, err := p.InSync(ctx, z.ID); err != nil || s < at {
			return fmt.Errorf("InSync = %d, %v; want %d or later", s, err, at)
		}
		return nil
	})
	if n := fake.Count("GetChange") - before; n != 0 {
		t.Fatalf("InSync with nothing pending asked GetChange %d times, want 0", n)
	}
	if p.ChangeSyncName() != "Route 53" {
		t.Fatalf("ChangeSyncName = %q", p.ChangeSyncName())
	}
}

func ptrSet(rs provider.RecordSet) *provider.RecordSet { return &rs }
