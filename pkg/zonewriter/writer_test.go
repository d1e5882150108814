package zonewriter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

const zone = "example.test"

// setup returns a counted local provider holding one zone, and a writer for it.
func setup(t *testing.T, opts zonewriter.Options) (*counting.Provider, *zonewriter.Writer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store := dnsserver.NewStore(dnsserver.StoreOptions{Dir: t.TempDir()})
	p := counting.Wrap(local.New(store, local.Options{}), "local", nil)
	z, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: zone, CallerReference: "test"})
	if err != nil {
		t.Fatal(err)
	}
	p.Reset()
	return p, zonewriter.New(ctx, p, z.ID, opts)
}

func aSet(name string, targets ...string) *provider.RecordSet {
	return &provider.RecordSet{Name: name, Type: "A", TTL: 60, Targets: targets}
}

func create(rs *provider.RecordSet) provider.Change {
	return provider.Change{Action: provider.ActionCreate, After: rs}
}

func TestWriter_CoalescesConcurrentSubmissionsIntoOneCall(t *testing.T) {
	p, w := setup(t, zonewriter.Options{Window: 300 * time.Millisecond})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.Apply(ctx, []provider.Change{create(aSet(fmt.Sprintf("h%d.%s", i, zone), "192.0.2.1"))})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("submission %d: %v", i, err)
		}
	}
	c := p.Counts()
	if c[counting.OpApplyChanges] > 2 || c[counting.OpListRecordSets] != 1 {
		t.Fatalf("50 concurrent submissions cost %v; want 1 read and at most 2 writes", c)
	}
	sets, err := p.ListRecordSets(ctx, zone)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range sets {
		if s.Type == "A" && s.Name != "ns1."+zone {
			n++
		}
	}
	if n != 50 {
		t.Fatalf("provider holds %d A sets, want 50", n)
	}
}

func TestWriter_ViewFollowsOwnWritesWithoutReads(t *testing.T) {
	p, w := setup(t, zonewriter.Options{Window: time.Millisecond})
	ctx := context.Background()
	if _, err := w.RecordSets(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Apply(ctx, []provider.Change{create(aSet("www."+zone, "192.0.2.1"))}); err != nil {
		t.Fatal(err)
	}
	sets, err := w.RecordSets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range sets {
		found = found || s.Name == "www."+zone
	}
	if !found {
		t.Fatal("the writer's view lacks its own write")
	}
	if c := p.Counts(); c[counting.OpListRecordSets] != 1 {
		t.Fatalf("reads = %d, want 1 (the first)", c[counting.OpListRecordSets])
	}
}

func TestWriter_StalePreconditionFailsOnlyThatSubmission(t *testing.T) {
	_, w := setup(t, zonewriter.Options{Window: 200 * time.Millisecond})
	ctx := context.Background()
	if err := w.Apply(ctx, []provider.Change{create(aSet("a."+zone, "192.0.2.1"))}); err != nil {
		t.Fatal(err)
	}
	stale := provider.Change{Action: provider.ActionUpdate, Before: aSet("a."+zone, "192.0.2.9"), After: aSet("a."+zone, "192.0.2.2")}
	var wg sync.WaitGroup
	var staleErr, goodErr error
	wg.Add(2)
	go func() { defer wg.Done(); staleErr = w.Apply(ctx, []provider.Change{stale}) }()
	go func() {
		defer wg.Done()
		goodErr = w.Apply(ctx, []provider.Change{create(aSet("b."+zone, "192.0.2.3"))})
	}()
	wg.Wait()
	if !errors.Is(staleErr, provider.ErrConflict) {
		t.Fatalf("stale update: got %v, want ErrConflict", staleErr)
	}
	if goodErr != nil {
		t.Fatalf("the valid submission in the same batch failed: %v", goodErr)
	}
}

func TestWriter_RejectedSubmissionDoesNotFailOthers(t *testing.T) {
	_, w := setup(t, zonewriter.Options{Window: 200 * time.Millisecond})
	ctx := context.Background()
	bad := create(&provider.RecordSet{Name: "bad." + zone, Type: "A", TTL: 60, Targets: []string{"not-an-address"}})
	var wg sync.WaitGroup
	var badErr, goodErr error
	wg.Add(2)
	go func() { defer wg.Done(); badErr = w.Apply(ctx, []provider.Change{bad}) }()
	go func() {
		defer wg.Done()
		goodErr = w.Apply(ctx, []provider.Change{create(aSet("good."+zone, "192.0.2.3"))})
	}()
	wg.Wait()
	if !errors.Is(badErr, provider.ErrInvalidChange) {
		t.Fatalf("bad submission: got %v, want ErrInvalidChange", badErr)
	}
	if goodErr != nil {
		t.Fatalf("a good submission failed because of a bad one in its batch: %v", goodErr)
	}
}

func TestWriter_ResyncRereadsAfterInterval(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
	p, w := setup(t, zonewriter.Options{Resync: time.Hour, Clock: clk})
	ctx := context.Background()
	for range 3 {
		if _, err := w.RecordSets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	clk.SetTime(clk.Now().Add(61 * time.Minute))
	if _, err := w.RecordSets(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.Counts()[counting.OpListRecordSets]; got != 2 {
		t.Fatalf("reads = %d, want 2 (first use, then after the resync interval)", got)
	}
	w.Invalidate()
	if _, err := w.RecordSets(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.Counts()[counting.OpListRecordSets]; got != 3 {
		t.Fatalf("reads = %d after Invalidate, want 3", got)
	}
}

func TestWriter_ApplyReturnsWhenContextEnds(t *testing.T) {
	_, w := setup(t, zonewriter.Options{Window: time.Hour, MaxPending: 1 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := w.Apply(ctx, []provider.Change{create(aSet("x."+zone, "192.0.2.1"))})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
}

// TestSet_ReportsAZoneDeletedAtTheProviderOnce: a write that finds the hosted zone gone marks
// the writer ZoneNotFound and delivers its key on Set.ZoneNotFound, once per loss; Reset re-arms
// it, and the next read sees the re-created zone (issue 11 item 2).
func TestSet_ReportsAZoneDeletedAtTheProviderOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store := dnsserver.NewStore(dnsserver.StoreOptions{Dir: t.TempDir()})
	p := local.New(store, local.Options{})
	z, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: zone, CallerReference: "test"})
	if err != nil {
		t.Fatal(err)
	}
	set := zonewriter.NewSet(ctx, zonewriter.Options{Window: 10 * time.Millisecond})
	key := zonewriter.Key{Account: "ns/dns", ZoneID: z.ID}
	w := set.For(key, p)
	if err := w.Apply(ctx, []provider.Change{create(aSet("a."+zone, "192.0.2.1"))}); err != nil {
		t.Fatal(err)
	}
	if set.Lookup(key) != w || set.Lookup(zonewriter.Key{ZoneID: "other"}) != nil {
		t.Fatal("Lookup does not return the zone's writer only")
	}
	if err := p.DeleteZone(ctx, z.ID); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		err := w.Apply(ctx, []provider.Change{create(aSet(fmt.Sprintf("b%d.%s", i, zone), "192.0.2.2"))})
		if !errors.Is(err, provider.ErrZoneNotFound) {
			t.Fatalf("write %d to a deleted zone: %v", i, err)
		}
	}
	if !w.ZoneNotFound() {
		t.Fatal("writer not marked ZoneNotFound")
	}
	select {
	case got := <-set.ZoneNotFound():
		if got != key {
			t.Fatalf("reported %v, want %v", got, key)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no ZoneNotFound report")
	}
	select {
	case got := <-set.ZoneNotFound():
		t.Fatalf("second report %v for the same loss", got)
	default:
	}
	if _, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: zone, CallerReference: "test"}); err != nil {
		t.Fatal(err)
	}
	w.Reset()
	if w.ZoneNotFound() {
		t.Fatal("Reset kept the mark")
	}
	sets, err := w.RecordSets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range sets {
		if rs.Name == "a."+zone {
			t.Fatalf("view still holds the deleted zone's %s after Reset", rs.Key())
		}
	}
}

// TestSet_ResolvesTheAccountsCurrentProviderBeforeEachCall (issue 11, item 8): with
// Options.Resolve, a Set's writer reads and writes through the provider the account's current
// credentials give, although nobody calls For again after the rotation (the heartbeat reporter
// and the scraper never do); a resolve error fails the call and names the account.
func TestSet_ResolvesTheAccountsCurrentProviderBeforeEachCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store := dnsserver.NewStore(dnsserver.StoreOptions{Dir: t.TempDir()})
	old := counting.Wrap(local.New(store, local.Options{}), "local", nil)
	rotated := counting.Wrap(local.New(store, local.Options{}), "local", nil)
	z, err := old.EnsureZone(ctx, provider.ZoneSpec{Name: zone, CallerReference: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	current, resolveErr := provider.Provider(old), error(nil)
	set := zonewriter.NewSet(ctx, zonewriter.Options{Window: time.Millisecond, Resolve: func(_ context.Context, account string) (provider.Provider, error) {
		mu.Lock()
		defer mu.Unlock()
		if account != "ns/dns" {
			return nil, fmt.Errorf("unexpected account %q", account)
		}
		return current, resolveErr
	}})
	w := set.For(zonewriter.Key{Account: "ns/dns", ZoneID: z.ID}, old)
	if _, err := w.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	old.Reset()
	mu.Lock()
	current = rotated // the Secret now holds new credentials
	mu.Unlock()
	if _, err := w.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Apply(ctx, []provider.Change{create(aSet("www."+zone, "192.0.2.1"))}); err != nil {
		t.Fatal(err)
	}
	if n := old.Counts(); len(n) != 0 {
		t.Errorf("calls through the old provider after the rotation: %v", n)
	}
	if n := rotated.Counts(); n["ListRecordSets"] != 1 || n["ApplyChanges"] != 1 {
		t.Errorf("calls through the rotated provider: %v, want one read and one write", n)
	}
	mu.Lock()
	resolveErr = errors.New("secret ns/dns does not exist")
	mu.Unlock()
	if _, err := w.Reload(ctx); err == nil || !strings.Contains(err.Error(), "ns/dns") {
		t.Errorf("Reload with the Secret gone: %v, want an error naming the account", err)
	}
}
