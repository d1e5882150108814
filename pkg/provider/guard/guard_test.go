package guard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// faults answers the local provider's before-apply fault point from a script: the n-th batch
// gets script[n] (nil past its end).
type faults struct {
	mu     sync.Mutex
	script []error
	n      int
}

func (f *faults) hook(_ context.Context, point local.FaultPoint, _ string) error {
	if point != local.FaultBeforeApplyChanges {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.n <= len(f.script) {
		return f.script[f.n-1]
	}
	return nil
}

func (f *faults) calls() int { f.mu.Lock(); defer f.mu.Unlock(); return f.n }

// setup returns a counted local provider with one zone, guarded with opts.
func setup(t *testing.T, f *faults, opts guard.Options) (*counting.Provider, *guard.Provider, string) {
	t.Helper()
	store := zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir()})
	inner := counting.Wrap(local.New(store, local.Options{FaultHook: f.hook}), "local", nil)
	z, err := inner.EnsureZone(context.Background(), provider.ZoneSpec{Name: "example.test", CallerReference: "t"})
	if err != nil {
		t.Fatal(err)
	}
	inner.Reset()
	return inner, guard.New(inner, opts), z.ID
}

func create(name string) []provider.Change {
	return []provider.Change{{Action: provider.ActionCreate, After: &provider.RecordSet{Name: name, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}}}
}

// waitForTimer blocks until the fake clock has a pending timer (the guard is backing off).
func waitForTimer(t *testing.T, c *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(testrun.HangTimeout)
	for !c.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the guard never started a back-off timer")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestThrottledBatchWaitsForRetryAfterThenSucceeds(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	f := &faults{script: []error{&provider.ThrottledError{RetryAfter: 5 * time.Second}}}
	_, g, zone := setup(t, f, guard.Options{Clock: clk, BaseDelay: 100 * time.Millisecond})
	done := make(chan error, 1)
	go func() { done <- g.ApplyChanges(context.Background(), zone, create("www.example.test")) }()

	waitForTimer(t, clk)
	clk.Step(4900 * time.Millisecond) // the back-off step (<= 150 ms) has passed, Retry-After has not
	if !clk.HasWaiters() {
		t.Fatal("retried before the backend's Retry-After of 5 s")
	}
	clk.Step(100 * time.Millisecond)
	if err := <-done; err != nil {
		t.Fatalf("ApplyChanges after one throttled attempt: %v", err)
	}
	if n := f.calls(); n != 2 {
		t.Fatalf("%d attempts, want 2", n)
	}
}

func TestThrottlingGivesUpAfterMaxRetries(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	throttled := &provider.ThrottledError{}
	f := &faults{script: []error{throttled, throttled, throttled, throttled}}
	_, g, zone := setup(t, f, guard.Options{Clock: clk, MaxRetries: 2, BaseDelay: time.Second, MaxDelay: 2 * time.Second})
	done := make(chan error, 1)
	go func() { done <- g.ApplyChanges(context.Background(), zone, create("www.example.test")) }()
	for range 2 { // two back-offs: 1 s then 2 s, each with up to 50% jitter
		waitForTimer(t, clk)
		clk.Step(3 * time.Second)
	}
	err := <-done
	if !errors.Is(err, provider.ErrThrottled) {
		t.Fatalf("err = %v, want ErrThrottled after the retries", err)
	}
	if n := f.calls(); n != 3 {
		t.Fatalf("%d attempts, want 1 + MaxRetries(2)", n)
	}
}

// TestAVerdictIsNotRetried: the backend's answers about the request (a conflict, an invalid
// change, credentials) and an error of unknown kind go back at once; only throttling and
// failures to reach the backend are retried (TestFailureToReachIsRetriedTwice).
func TestAVerdictIsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"conflict", provider.ErrConflict},
		{"invalid change", provider.ErrInvalidChange},
		{"credentials", provider.ErrInvalidCredentials},
		{"credentials over a transport error", fmt.Errorf("%w: %w", provider.ErrInvalidCredentials, reset())},
		{"other", errors.New("something else")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &faults{script: []error{tc.err}}
			_, g, zone := setup(t, f, guard.Options{})
			if err := g.ApplyChanges(context.Background(), zone, create("www.example.test")); !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if n := f.calls(); n != 1 {
				t.Fatalf("%d attempts, want 1", n)
			}
		})
	}
}

func TestBackOffPastTheDeadlineReturnsAtOnce(t *testing.T) {
	f := &faults{script: []error{&provider.ThrottledError{RetryAfter: time.Hour}}}
	_, g, zone := setup(t, f, guard.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := g.ApplyChanges(ctx, zone, create("www.example.test"))
	if !errors.Is(err, provider.ErrThrottled) || !strings.Contains(err.Error(), "passes the deadline") {
		t.Fatalf("err = %v, want the throttling error, not retried", err)
	}
	if n := f.calls(); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
}

func TestZoneListIsCachedForItsTTL(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	inner, g, _ := setup(t, &faults{}, guard.Options{Clock: clk, ZoneListTTL: 30 * time.Second})
	ctx := context.Background()
	list := func(want int) {
		t.Helper()
		zs, err := g.ListZones(ctx)
		if err != nil || len(zs) != want {
			t.Fatalf("ListZones = %v, %v; want %d zones", zs, err, want)
		}
	}
	list(1)
	list(1)
	if n := inner.Counts()[counting.OpListZones]; n != 1 {
		t.Fatalf("%d ListZones requests within the TTL, want 1", n)
	}
	clk.Step(31 * time.Second)
	list(1)
	if n := inner.Counts()[counting.OpListZones]; n != 2 {
		t.Fatalf("%d ListZones requests after the TTL, want 2", n)
	}
	if _, err := g.EnsureZone(ctx, provider.ZoneSpec{Name: "other.test", CallerReference: "o"}); err != nil {
		t.Fatal(err)
	}
	list(2) // EnsureZone dropped the cache
	if n := inner.Counts()[counting.OpListZones]; n != 3 {
		t.Fatalf("%d ListZones requests after EnsureZone, want 3", n)
	}
}

func TestLimiterSpacesRequests(t *testing.T) {
	// 20 requests per second, burst 1: 6 requests span at least 5 intervals of 50 ms. This is
	// the limiter's guarantee (a lower bound), not a performance claim.
	_, g, zone := setup(t, &faults{}, guard.Options{Limiter: guard.NewLimiter(20, 1)})
	start := time.Now()
	for range 6 {
		if _, err := g.GetZone(context.Background(), zone); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 240*time.Millisecond {
		t.Fatalf("6 requests at 20 rps took %s, want >= 250 ms", d)
	}
}

func TestNewLimiter(t *testing.T) {
	if guard.NewLimiter(0, 10) != nil {
		t.Error("qps 0 must mean unlimited (nil)")
	}
	if l := guard.NewLimiter(2.5, 0); l == nil || l.Burst() != 3 {
		t.Errorf("burst default = %v, want ceil(qps) = 3", l)
	}
}

// limited is the local provider with a limit of 4 records per request and a RequestSizer that
// counts a set named "wide.example.test" as 4 records whatever its targets.
type limited struct{ *local.Provider }

func (limited) Capabilities() provider.Capabilities {
	return provider.Capabilities{BatchWrites: true, ConditionalWrites: true, CreateZones: true, MaxChangesPerBatch: 4}
}

func (limited) RequestCost(ch provider.Change) (int, int) {
	if ch.Key().Name == "wide.example.test" {
		return 4, 0
	}
	return provider.ChangeCost(ch)
}

// TestBatches_TheOnlySplitterAsksTheProvidersSizerThroughCounting: the guard
// splits by the wrapped provider's Capabilities, counting each change with the provider's own
// RequestCost, which pkg/provider/counting forwards; each batch is one inner ApplyChanges.
func TestBatches_TheOnlySplitterAsksTheProvidersSizerThroughCounting(t *testing.T) {
	store := zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir()})
	inner := counting.Wrap(limited{local.New(store, local.Options{})}, "local", nil)
	ctx := context.Background()
	z, err := inner.EnsureZone(ctx, provider.ZoneSpec{Name: "example.test", CallerReference: "t"})
	if err != nil {
		t.Fatal(err)
	}
	g := guard.New(inner, guard.Options{})
	changes := append(append(append(create("a.example.test"), create("wide.example.test")...), create("b.example.test")...), create("c.example.test")...)
	var sizes []int
	for _, b := range g.Batches(changes) {
		sizes = append(sizes, len(b))
	}
	// a (1) | wide (4) | b, c (2): by ChangeCost alone all four would fit one request.
	if got := fmt.Sprint(sizes); got != "[1 1 2]" {
		t.Fatalf("batch sizes %s, want [1 1 2]", got)
	}
	inner.Reset()
	if err := g.ApplyChanges(ctx, z.ID, changes); err != nil {
		t.Fatal(err)
	}
	if n := inner.Counts()[counting.OpApplyChanges]; n != 3 {
		t.Errorf("%d inner ApplyChanges, want one per batch (3)", n)
	}
}

// drainer is a provider.ZoneDrainer over the local provider with requests of at most 2 elements:
// its zone holds the deletions it is given, and DeleteZone fails while any is left.
type drainer struct {
	provider.Provider
	mu      sync.Mutex
	left    []provider.Deletion
	batches []int
}

func (d *drainer) Capabilities() provider.Capabilities {
	return provider.Capabilities{BatchWrites: true, MaxChangesPerBatch: 2, CreateZones: true}
}

func (d *drainer) ZoneDeletions(context.Context, string) ([]provider.Deletion, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]provider.Deletion(nil), d.left...), nil
}

func (d *drainer) DeleteRecordSets(_ context.Context, _ string, dels []provider.Deletion) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.batches = append(d.batches, len(dels))
	d.left = d.left[len(dels):]
	return nil
}

func (d *drainer) DeleteZone(ctx context.Context, id string) error {
	d.mu.Lock()
	n := len(d.left)
	d.mu.Unlock()
	if n > 0 {
		return fmt.Errorf("zone %s not empty: %d sets", id, n)
	}
	return d.Provider.DeleteZone(ctx, id)
}

// TestDeleteZone_DrainsThroughTheOneSplitterThenDeletesTheEmptyZone: for a
// provider.ZoneDrainer, the guard lists the zone's deletions once and sends them in batches of
// the same splitter as ApplyChanges (here 2 + 2 + 1 by their declared cost), each one request
// through pkg/provider/counting, before the provider's DeleteZone; a provider that is no
// ZoneDrainer is asked for DeleteZone alone.
func TestDeleteZone_DrainsThroughTheOneSplitterThenDeletesTheEmptyZone(t *testing.T) {
	store := zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir()})
	d := &drainer{Provider: local.New(store, local.Options{})}
	for i := range 5 {
		d.left = append(d.left, provider.Deletion{Key: provider.RecordSetKey{Name: fmt.Sprintf("h%d.example.test", i), Type: "A"}, Elements: 1})
	}
	inner := counting.Wrap(d, "drainer", nil)
	ctx := context.Background()
	z, err := inner.EnsureZone(ctx, provider.ZoneSpec{Name: "example.test", CallerReference: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if err := guard.New(inner, guard.Options{}).DeleteZone(ctx, z.ID); err != nil {
		t.Fatalf("DeleteZone: %v", err)
	}
	if got := fmt.Sprint(d.batches); got != "[2 2 1]" {
		t.Errorf("deletion requests of %s sets, want [2 2 1]", got)
	}
	c := inner.Counts()
	if c[counting.OpZoneDeletions] != 1 || c[counting.OpDeleteRecordSets] != 3 || c[counting.OpDeleteZone] != 1 {
		t.Errorf("counted %v, want 1 ZoneDeletions, 3 DeleteRecordSets, 1 DeleteZone", c)
	}

	plain := counting.Wrap(local.New(store, local.Options{}), "local", nil)
	z, err = plain.EnsureZone(ctx, provider.ZoneSpec{Name: "plain.test", CallerReference: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if err := guard.New(plain, guard.Options{}).DeleteZone(ctx, z.ID); err != nil {
		t.Fatalf("DeleteZone of a provider that is no ZoneDrainer: %v", err)
	}
	if c := plain.Counts(); c[counting.OpZoneDeletions] != 0 || c[counting.OpDeleteRecordSets] != 0 || c[counting.OpDeleteZone] != 1 {
		t.Errorf("counted %v, want DeleteZone alone", c)
	}
}

// reset is a connection reset as net/http reports it.
func reset() error {
	return &url.Error{Op: "Patch", URL: "http://127.0.0.1:8081/api/v1/servers/localhost/zones/example.test.",
		Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
}

// TestFailureToReachIsRetriedTwice: a request that did not reach the backend, or that
// it failed to answer (a reset, a reply cut short, a per-request timeout, ErrUnavailable), is
// tried 3 times in all on the back-off, and succeeds when a retry does; the caller's own deadline
// passed is not retried.
func TestFailureToReachIsRetriedTwice(t *testing.T) {
	for name, failure := range map[string]error{
		"reset":               reset(),
		"reply cut short":     fmt.Errorf("read response: %w", io.ErrUnexpectedEOF),
		"per-request timeout": fmt.Errorf("PATCH: %w", context.DeadlineExceeded),
		"unavailable (5xx)":   fmt.Errorf("azure: %w", provider.ErrUnavailable),
	} {
		t.Run(name, func(t *testing.T) {
			f := &faults{script: []error{failure, failure}}
			_, g, zone := setup(t, f, guard.Options{BaseDelay: time.Millisecond})
			if err := g.ApplyChanges(context.Background(), zone, create("www.example.test")); err != nil {
				t.Fatalf("after two failures the third attempt should succeed: %v", err)
			}
			if n := f.calls(); n != 3 {
				t.Fatalf("%d attempts, want 3", n)
			}
			f = &faults{script: []error{failure, failure, failure}}
			_, g, zone = setup(t, f, guard.Options{BaseDelay: time.Millisecond})
			if err := g.ApplyChanges(context.Background(), zone, create("www.example.test")); !errors.Is(err, failure) {
				t.Fatalf("err = %v, want the failure after 3 attempts", err)
			}
			if n := f.calls(); n != 3 {
				t.Fatalf("%d attempts, want 1 + DefaultMaxFailureRetries (2)", n)
			}
		})
	}
	t.Run("the caller's deadline", func(t *testing.T) {
		f := &faults{script: []error{context.DeadlineExceeded}}
		_, g, zone := setup(t, f, guard.Options{BaseDelay: time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := g.ApplyChanges(ctx, zone, create("www.example.test")); err == nil {
			t.Fatal("ApplyChanges with the caller's context done succeeded")
		}
		if n := f.calls(); n > 1 {
			t.Fatalf("%d attempts with the caller's context done, want at most 1", n)
		}
	})
}
