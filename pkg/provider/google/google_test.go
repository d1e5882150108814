package google_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/clouddnsfake"
	"github.com/dnsplane/dnsplane/internal/testing/faultproxy"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/google"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
	"github.com/dnsplane/dnsplane/pkg/provider/providertest"
)

const project = "dnsplane-test"

func newProvider(t *testing.T, fake *clouddnsfake.Server) *google.Provider {
	t.Helper()
	p, err := google.New(context.Background(), google.Config{ProjectID: project, EndpointURL: fake.URL, HTTPClient: fake.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newFake(t *testing.T) *clouddnsfake.Server {
	t.Helper()
	fake := clouddnsfake.New()
	fake.SetPageSize(7) // exercise page tokens everywhere
	t.Cleanup(fake.Close)
	return fake
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{New: func(t *testing.T) providertest.Backend {
		fake := newFake(t)
		return providertest.Backend{
			Provider: newProvider(t, fake),
			Restart:  func(t *testing.T) provider.Provider { return newProvider(t, fake) },
		}
	}})
}

func setup(t *testing.T) (*clouddnsfake.Server, *google.Provider, provider.Zone) {
	t.Helper()
	fake := newFake(t)
	p := newProvider(t, fake)
	z, err := p.EnsureZone(context.Background(), provider.ZoneSpec{Name: "example.test", CallerReference: "ref-1"})
	if err != nil {
		t.Fatal(err)
	}
	return fake, p, z
}

func TestThrottlingIsMapped(t *testing.T) {
	fake, p, z := setup(t)
	fake.Throttle(1)
	before := fake.Count("rrsets.list")
	_, err := p.ListRecordSets(context.Background(), z.ID)
	var te *provider.ThrottledError
	if !errors.Is(err, provider.ErrThrottled) || !errors.As(err, &te) {
		t.Fatalf("ListRecordSets on 429: %v, want a ThrottledError", err)
	}
	if d, ok := provider.RetryAfter(err); !ok || d != 2*time.Second {
		t.Errorf("RetryAfter = %v, %v; want 2s from the Retry-After header", d, ok)
	}
	if n := fake.Count("rrsets.list") - before; n != 1 {
		t.Errorf("rrsets.list requests = %d, want 1 (no hidden retries)", n)
	}
	// The next request goes through.
	if _, err := p.ListRecordSets(context.Background(), z.ID); err != nil {
		t.Fatal(err)
	}
	rs := provider.RecordSet{Name: "www.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	fake.Throttle(2) // managedZones.get, then changes.create
	if err := p.ApplyChanges(context.Background(), z.ID, []provider.Change{{Action: provider.ActionCreate, After: &rs}}); !errors.Is(err, provider.ErrThrottled) {
		t.Fatalf("ApplyChanges on 429: %v", err)
	}
}

func TestLargeBatchSplit(t *testing.T) {
	fake, raw, z := setup(t)
	p := guard.New(raw, guard.Options{}) // the only splitter, as the factory builds the provider
	ctx := context.Background()
	var changes []provider.Change
	for i := range 2500 {
		rs := provider.RecordSet{Name: fmt.Sprintf("h%04d.example.test", i), Type: "A", TTL: 60, Targets: []string{fmt.Sprintf("10.0.%d.%d", i/256, i%256)}}
		changes = append(changes, provider.Change{Action: provider.ActionCreate, After: &rs})
	}
	before := fake.Count("changes.create")
	if err := p.ApplyChanges(ctx, z.ID, changes); err != nil {
		t.Fatal(err)
	}
	if n := fake.Count("changes.create") - before; n != 3 {
		t.Fatalf("%d changes.create requests, want 3", n)
	}
	if got := fmt.Sprint(fake.ChangeSizes()); got != "[1000 1000 500]" {
		t.Errorf("change sizes %s, want [1000 1000 500]", got)
	}
	sets, err := p.ListRecordSets(ctx, z.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2500+2 {
		t.Fatalf("listed %d sets, want 2502", len(sets))
	}
	// Large TXT values are split by rrdata bytes (100,000 per change).
	var txt []provider.Change
	for i := range 300 {
		rs := provider.RecordSet{Name: fmt.Sprintf("t%03d.example.test", i), Type: "TXT", TTL: 60, Targets: []string{strings.Repeat("v", 1000)}}
		txt = append(txt, provider.Change{Action: provider.ActionCreate, After: &rs})
	}
	before = fake.Count("changes.create")
	if err := p.ApplyChanges(ctx, z.ID, txt); err != nil {
		t.Fatal(err)
	}
	// 1,011 bytes quoted each: 98 per change.
	if n := fake.Count("changes.create") - before; n != 4 {
		t.Errorf("300 TXT sets of 1,000 bytes took %d requests, want 4", n)
	}
	if err := p.DeleteZone(ctx, z.ID); err != nil {
		t.Fatalf("DeleteZone with 2,800 sets: %v", err)
	}
}

func TestEnsureZoneConflictWithForeignZone(t *testing.T) {
	fake := newFake(t)
	p := newProvider(t, fake)
	ctx := context.Background()
	fake.AddZone(project, "taken-console", "taken.test.", nil)
	fake.AddZone(project, "other-tool", "labelled.test.", map[string]string{google.LabelCallerReference: "someone-else"})
	for _, name := range []string{"taken.test", "labelled.test"} {
		_, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: name, CallerReference: "ours"})
		if !errors.Is(err, provider.ErrZoneConflict) {
			t.Fatalf("EnsureZone(%s) over a foreign zone: %v, want ErrZoneConflict", name, err)
		}
	}
	zones, err := p.ListZones(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(zones) != 2 || fake.Count("managedZones.create") != 0 {
		t.Fatalf("zones %+v, creates %d; want only the 2 foreign zones", zones, fake.Count("managedZones.create"))
	}
}

func TestEnsureZoneNamesAndLabels(t *testing.T) {
	fake := newFake(t)
	p := newProvider(t, fake)
	ref := "Providertest/Some-UID_" + strings.Repeat("x", 80)
	name := strings.Repeat("a", 60) + ".example.test"
	z, err := p.EnsureZone(context.Background(), provider.ZoneSpec{Name: name, CallerReference: ref, Tags: map[string]string{"dnsplane.io/test": "Conformance"}})
	if err != nil {
		t.Fatal(err)
	}
	if z.ID != google.ZoneName(name) || len(z.ID) > 63 || z.CallerReference != ref || len(z.NameServers) != 4 {
		t.Fatalf("zone %+v", z)
	}
	if l := google.CallerReferenceLabel(ref); len(l) > 63 || l != strings.ToLower(l) {
		t.Errorf("label %q", l)
	}
	if google.ZoneName("a-b.test") == google.ZoneName("a_b.test") {
		t.Errorf("distinct DNS names share a zone name")
	}
	again, err := newProvider(t, fake).EnsureZone(context.Background(), provider.ZoneSpec{Name: name, CallerReference: ref})
	if err != nil || again.ID != z.ID || fake.Count("managedZones.create") != 1 {
		t.Fatalf("re-ensure = %+v, %v; creates %d", again, err, fake.Count("managedZones.create"))
	}
}

func TestMissingDeletionIsConflictNotZoneNotFound(t *testing.T) {
	_, p, z := setup(t)
	rs := provider.RecordSet{Name: "gone.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	err := p.ApplyChanges(context.Background(), z.ID, []provider.Change{{Action: provider.ActionDelete, Before: &rs}})
	if !errors.Is(err, provider.ErrConflict) || errors.Is(err, provider.ErrZoneNotFound) {
		t.Fatalf("delete of a missing set: %v, want ErrConflict only", err)
	}
}

func TestNewRequiresProject(t *testing.T) {
	if _, err := google.New(context.Background(), google.Config{}); !errors.Is(err, provider.ErrInvalidCredentials) {
		t.Fatalf("New without a project: %v", err)
	}
	if _, err := google.New(context.Background(), google.Config{ProjectID: "p", CredentialsJSON: `{"type":"weird"}`}); !errors.Is(err, provider.ErrInvalidCredentials) {
		t.Fatalf("New with an unknown credential type: %v", err)
	}
}

// TestApplyChangesIsOneRequestTheGuardSplits: the provider's ApplyChanges
// sends one changes.create and never splits (1,001 additions exceed Cloud DNS's quota, nothing is
// written); the guard is the only splitter and sends them as 1,000 + 1.
func TestApplyChangesIsOneRequestTheGuardSplits(t *testing.T) {
	fake, p, z := setup(t)
	ctx := context.Background()
	var changes []provider.Change
	for i := range 1001 {
		rs := provider.RecordSet{Name: fmt.Sprintf("o%04d.example.test", i), Type: "A", TTL: 60, Targets: []string{fmt.Sprintf("10.4.%d.%d", i/256, i%256)}}
		changes = append(changes, provider.Change{Action: provider.ActionCreate, After: &rs})
	}
	before := fake.Count("changes.create")
	if err := p.ApplyChanges(ctx, z.ID, changes); err == nil {
		t.Fatal("1,001 additions in one ApplyChanges were accepted; want Cloud DNS's quota error")
	}
	if n := fake.Count("changes.create") - before; n != 1 {
		t.Errorf("one ApplyChanges sent %d changes.create requests, want 1", n)
	}
	if err := guard.New(p, guard.Options{}).ApplyChanges(ctx, z.ID, changes); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(fake.ChangeSizes()); got != "[1000 1]" {
		t.Errorf("guarded: changes of %s, want [1000 1]", got)
	}
}

// TestDeleteZone_ProviderSendsOneRequestGuardSplitsDeletions:
// the provider's DeleteZone deletes the zone's sets in one changes.create and never splits (1,001
// deletions exceed Cloud DNS's quota: rejected, nothing deleted); the guard, the only splitter,
// deletes them first in changes of 1,000 + 1 (provider.ZoneDrainer), then the empty zone.
func TestDeleteZone_ProviderSendsOneRequestGuardSplitsDeletions(t *testing.T) {
	fake, p, z := setup(t)
	providertest.DeleteZoneIsSplitByTheGuard(t, p, z.ID, providertest.Requests{
		Sent:     func() int { return fake.Count("changes.create") },
		Accepted: fake.ChangeSizes,
	})
}

// TestTimeoutBoundsAHungRequest: a Cloud DNS that never answers (faultproxy's hang) costs a
// request Config.Timeout, not the caller's whole deadline: ListZones under a context without a
// deadline returns an error after one request (Cloud DNS's client does not retry). The wait only
// catches a hang.
func TestTimeoutBoundsAHungRequest(t *testing.T) {
	fake := newFake(t)
	proxy := faultproxy.New(fake.URL, faultproxy.Options{})
	t.Cleanup(proxy.Close)
	proxy.SetPolicy(faultproxy.Always(faultproxy.Hang))
	p, err := google.New(context.Background(), google.Config{ProjectID: project, EndpointURL: proxy.URL(), HTTPClient: fake.Client(), Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = testrun.Returns(t, "ListZones through a hung Cloud DNS", func() error {
		_, err := p.ListZones(context.Background())
		return err
	})
	if err == nil {
		t.Fatal("ListZones through a hung Cloud DNS succeeded")
	}
	if n := proxy.Counts().ByKind[faultproxy.Hang]; n != 1 {
		t.Errorf("%d requests reached the hung Cloud DNS, want 1: %v", n, err)
	}
}
