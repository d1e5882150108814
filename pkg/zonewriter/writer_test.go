package zonewriter_test

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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

const zone = "example.test"

// setup returns a counted local provider holding one zone, and a writer for it.
func setup(t *testing.T, opts zonewriter.Options) (*counting.Provider, *zonewriter.Writer) {
	t.Helper()
	ctx, l, id := localZone(t)
	p := counting.Wrap(l, "local", nil)
	return p, zonewriter.New(ctx, p, id, opts)
}

// localZone returns a context that ends with the test, and a local provider on a fresh store
// that holds zone, with the zone's ID.
func localZone(t *testing.T) (context.Context, *local.Provider, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := local.New(zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir()}), local.Options{})
	z, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: zone, CallerReference: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, p, z.ID
}

// ctxT is a generous deadline for one test, never a timing assertion.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds, failing the test after a generous minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// gated wraps a provider so that a test decides when each ApplyChanges runs: while hold is set,
// a call reports its number of changes on calls and waits for release. busyAfter > 0 makes
// calls answer provider.ErrThrottled (as PowerDNS' 500 "database is locked" is) from that call
// on, 1-based, counting every call.
type gated struct {
	provider.Provider
	calls        chan int
	release      chan struct{}
	hold         atomic.Bool
	busyAfter, n atomic.Int64
	// failWith, when set, is the error calls answer from busyAfter on instead of busy.
	failWith              atomic.Pointer[error]
	inFlight, maxInFlight atomic.Int64
	// listHold, when set, holds each ListRecordSets until listRelease; listed reports it.
	listHold    atomic.Bool
	listed      chan struct{}
	listRelease chan struct{}
}

func (g *gated) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	if g.listHold.Load() {
		g.listed <- struct{}{}
		select {
		case <-g.listRelease:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Provider.ListRecordSets(ctx, zoneID)
}

func newGated(p provider.Provider) *gated {
	g := &gated{Provider: p, calls: make(chan int, 1000), release: make(chan struct{}),
		listed: make(chan struct{}, 100), listRelease: make(chan struct{})}
	g.hold.Store(true)
	return g
}

func (g *gated) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for m := g.maxInFlight.Load(); n > m && !g.maxInFlight.CompareAndSwap(m, n); m = g.maxInFlight.Load() {
	}
	if g.hold.Load() {
		g.calls <- len(changes)
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if after := g.busyAfter.Load(); g.n.Add(1) >= after && after > 0 {
		if err := g.failWith.Load(); err != nil {
			return *err
		}
		return &provider.ThrottledError{Err: errors.New("HTTP 500: database is locked")}
	}
	return g.Provider.ApplyChanges(ctx, zoneID, changes)
}

// entered waits for the next held call and returns its number of changes.
func (g *gated) entered(t *testing.T) int {
	t.Helper()
	select {
	case n := <-g.calls:
		return n
	case <-time.After(time.Minute):
		t.Fatal("no provider call")
		return 0
	}
}

// setupGated is setup with the writer's provider calls gated (hold is set).
func setupGated(t *testing.T, opts zonewriter.Options) (*counting.Provider, *gated, *zonewriter.Writer) {
	t.Helper()
	ctx, l, id := localZone(t)
	p := counting.Wrap(l, "local", nil)
	g := newGated(p)
	t.Cleanup(func() { g.hold.Store(false); close(g.release) })
	return p, g, zonewriter.New(ctx, g, id, opts)
}

// oneAtATime declares one write in flight, as PowerDNS does by default.
type oneAtATime struct{ provider.Provider }

func (o oneAtATime) Capabilities() provider.Capabilities {
	c := o.Provider.Capabilities()
	c.MaxWritesInFlight = 1
	return c
}

func aSet(name string, targets ...string) *provider.RecordSet {
	return &provider.RecordSet{Name: name, Type: "A", TTL: 60, Targets: targets}
}

func create(rs *provider.RecordSet) provider.Change {
	return provider.Change{Action: provider.ActionCreate, After: rs}
}

// TestWriter_SubmissionsDuringAFlushGoTogetherInTheNext pins group commit:
// while a flush is in flight, new submissions queue, and they all go in the next flush when it
// ends, as one call; the view is read once.
func TestWriter_SubmissionsDuringAFlushGoTogetherInTheNext(t *testing.T) {
	p, g, w := setupGated(t, zonewriter.Options{})
	ctx := ctxT(t)
	first := make(chan error, 1)
	go func() { first <- w.Apply(ctx, []provider.Change{create(aSet("first."+zone, "192.0.2.1"))}) }()
	if n := g.entered(t); n != 1 {
		t.Fatalf("the first flush carries %d changes, want 1 (the lone submission)", n)
	}
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.Apply(ctx, []provider.Change{create(aSet(fmt.Sprintf("h%d.%s", i, zone), "192.0.2.1"))})
		}()
	}
	waitFor(t, "50 submissions queued behind the flush in flight", func() bool { return w.Queued() == 50 })
	g.release <- struct{}{}
	if n := g.entered(t); n != 50 {
		t.Fatalf("the next flush carries %d changes, want the 50 queued during the first", n)
	}
	g.release <- struct{}{}
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("submission %d: %v", i, err)
		}
	}
	if c := p.Counts(); c[counting.OpApplyChanges] != 2 || c[counting.OpListRecordSets] != 1 {
		t.Fatalf("51 submissions cost %v; want 1 read and 2 writes", c)
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
	if n != 51 {
		t.Fatalf("provider holds %d A sets, want 51", n)
	}
}

// TestWriter_IdleWriterSendsALoneSubmissionAtOnce: with no flush in flight a
// submission goes out at once, alone. The clock is a fake that never moves, so a writer that
// waited for any window on it would never send.
func TestWriter_IdleWriterSendsALoneSubmissionAtOnce(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	p, g, w := setupGated(t, zonewriter.Options{Clock: clk})
	ctx := ctxT(t)
	if _, err := w.RecordSets(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		done := make(chan error, 1)
		go func() {
			done <- w.Apply(ctx, []provider.Change{create(aSet(fmt.Sprintf("h%d.%s", i, zone), "192.0.2.1"))})
		}()
		if n := g.entered(t); n != 1 {
			t.Fatalf("submission %d went out with %d changes, want alone", i, n)
		}
		g.release <- struct{}{}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if c := p.Counts(); c[counting.OpApplyChanges] != 3 || c[counting.OpListRecordSets] != 1 {
		t.Fatalf("3 submissions one after another cost %v; want 1 read and 3 writes", c)
	}
}

// coldStart has n callers take the writer's first view (Snapshot) while its read is held, and
// the first submit of them submit one change each once they have it; it returns when all n wait
// for the read, and the submitters' results.
func coldStart(t *testing.T, g *gated, w *zonewriter.Writer, n, submit int) <-chan error {
	t.Helper()
	ctx := ctxT(t)
	g.listHold.Store(true)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			if _, err := w.Snapshot(ctx, zone); err != nil || i >= submit {
				errs <- err
				return
			}
			errs <- w.Apply(ctx, []provider.Change{create(aSet(fmt.Sprintf("h%d.%s", i, zone), "192.0.2.1"))})
		}()
	}
	select {
	case <-g.listed:
	case <-time.After(time.Minute):
		t.Fatal("no read of the zone")
	}
	waitFor(t, "every caller waiting for the first read", func() bool { return zonewriter.ViewWaiters(w) == n })
	g.listHold.Store(false)
	close(g.listRelease)
	return errs
}

// TestWriter_FirstFlushAfterALoadTakesEveryCallerOfTheLoad: the planners of a
// cold start all wait for the writer's first read, then submit; the first flush waits for all
// of them, so the zone costs 1 read and 1 write. The clock never moves: the flush goes because
// every caller of the load submitted, not because a wait ran out.
func TestWriter_FirstFlushAfterALoadTakesEveryCallerOfTheLoad(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	p, g, w := setupGated(t, zonewriter.Options{Clock: clk})
	const n = 20
	errs := coldStart(t, g, w, n, n)
	if got := g.entered(t); got != n {
		t.Fatalf("the first flush after the load carries %d changes, want %d (every caller of the load)", got, n)
	}
	g.release <- struct{}{}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if c := p.Counts(); c[counting.OpApplyChanges] != 1 || c[counting.OpListRecordSets] != 1 {
		t.Fatalf("a cold start of %d submitters cost %v; want 1 read and 1 write", n, c)
	}
}

// TestWriter_FirstFlushAfterALoadWaitsAtMostLoadWait: when some callers of the load submit
// nothing, the first flush goes once Options.LoadWait passed since the last submission, on the
// injected clock, with what was submitted.
func TestWriter_FirstFlushAfterALoadWaitsAtMostLoadWait(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	const wait = 5 * time.Millisecond
	_, g, w := setupGated(t, zonewriter.Options{Clock: clk, LoadWait: wait})
	errs := coldStart(t, g, w, 5, 3)
	for range 2 { // the two callers that submit nothing
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "3 submissions queued, the writer waiting on its clock", func() bool {
		return w.Queued() == 3 && zonewriter.ViewWaiters(w) == 0 && clk.HasWaiters()
	})
	select {
	case n := <-g.calls:
		t.Fatalf("a flush of %d changes went before LoadWait passed", n)
	default:
	}
	clk.Step(wait)
	if got := g.entered(t); got != 3 {
		t.Fatalf("the flush after LoadWait carries %d changes, want the 3 submitted", got)
	}
	g.release <- struct{}{}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriter_MaxPendingBoundsAFlush: a flush takes queued submissions in order up to
// MaxPending changes; the rest go in the flush after.
func TestWriter_MaxPendingBoundsAFlush(t *testing.T) {
	_, g, w := setupGated(t, zonewriter.Options{MaxPending: 3})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	apply := func(name string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Apply(ctx, []provider.Change{create(aSet(name+"."+zone, "192.0.2.1"))}); err != nil {
				t.Error(err)
			}
		}()
	}
	apply("first")
	g.entered(t)
	for i := range 5 {
		apply(fmt.Sprintf("h%d", i))
	}
	// The queue holds MaxPending changes; the other submitters wait in Apply.
	waitFor(t, "3 submissions queued", func() bool { return w.Queued() == 3 })
	var sizes []int
	for range 2 {
		g.release <- struct{}{}
		sizes = append(sizes, g.entered(t))
	}
	g.release <- struct{}{}
	wg.Wait()
	if fmt.Sprint(sizes) != "[3 2]" {
		t.Fatalf("flush sizes after the first: %v, want [3 2]", sizes)
	}
}

func TestWriter_ViewFollowsOwnWritesWithoutReads(t *testing.T) {
	p, w := setup(t, zonewriter.Options{})
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
	_, w := setup(t, zonewriter.Options{})
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

// TestWriter_RejectedBatchIsRetriedOneByOneWithOneRead: when the provider rejects a combined
// batch, its submissions are retried one at a time so that only the bad one fails, after one
// read of the zone for all of them, never one per submission (a read per retry
// re-reads a 10,000-set zone each time).
func TestWriter_RejectedBatchIsRetriedOneByOneWithOneRead(t *testing.T) {
	p, g, w := setupGated(t, zonewriter.Options{})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := map[string]error{}
	var mu sync.Mutex
	apply := func(name string, rs *provider.RecordSet) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := w.Apply(ctx, []provider.Change{create(rs)})
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}()
	}
	apply("first", aSet("first."+zone, "192.0.2.1"))
	g.entered(t)
	apply("bad", &provider.RecordSet{Name: "bad." + zone, Type: "A", TTL: 60, Targets: []string{"not-an-address"}})
	for i := range 4 {
		apply(fmt.Sprintf("good%d", i), aSet(fmt.Sprintf("good%d.%s", i, zone), "192.0.2.3"))
	}
	waitFor(t, "5 submissions queued", func() bool { return w.Queued() == 5 })
	g.hold.Store(false)
	g.release <- struct{}{}
	wg.Wait()
	for name, err := range errs {
		switch {
		case name == "bad" && !errors.Is(err, provider.ErrInvalidChange):
			t.Errorf("bad submission: got %v, want ErrInvalidChange", err)
		case name != "bad" && err != nil:
			t.Errorf("%s failed because of a bad one in its batch: %v", name, err)
		}
	}
	// 1 read at first use, 1 for the whole fallback; 1 + 1 combined + 5 single writes.
	if c := p.Counts(); c[counting.OpListRecordSets] != 2 || c[counting.OpApplyChanges] != 7 {
		t.Errorf("a rejected batch of 5 cost %v; want 2 reads and 7 writes", c)
	}
	// The view holds the good ones without another read.
	sets, err := w.RecordSets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, rs := range sets {
		if strings.HasPrefix(rs.Name, "good") {
			got++
		}
	}
	if got != 4 || p.Counts()[counting.OpListRecordSets] != 2 {
		t.Errorf("view holds %d of the 4 good sets, after %d reads", got, p.Counts()[counting.OpListRecordSets])
	}
}

// TestWriter_BusyProviderFailsTheBatchWithoutSplittingIt: a batch the provider answers busy
// (provider.ErrThrottled, as PowerDNS' 500 "database is locked" is, after the guard's own
// back-off) fails as a whole: no per-submission retry, no read per submission; once the
// provider recovers the next submissions go through with one re-read.
func TestWriter_BusyProviderFailsTheBatchWithoutSplittingIt(t *testing.T) {
	p, g, w := setupGated(t, zonewriter.Options{})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make([]error, 10)
	wg.Add(1)
	var firstErr error
	go func() {
		defer wg.Done()
		firstErr = w.Apply(ctx, []provider.Change{create(aSet("first."+zone, "192.0.2.1"))})
	}()
	g.entered(t)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.Apply(ctx, []provider.Change{create(aSet(fmt.Sprintf("h%d.%s", i, zone), "192.0.2.1"))})
		}()
	}
	waitFor(t, "10 submissions queued", func() bool { return w.Queued() == 10 })
	g.busyAfter.Store(2) // the first passes, the batch finds the provider busy
	g.hold.Store(false)
	g.release <- struct{}{}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	for i, err := range errs {
		if !errors.Is(err, provider.ErrThrottled) {
			t.Fatalf("submission %d: %v, want ErrThrottled", i, err)
		}
	}
	if c, calls := p.Counts(), g.n.Load(); c[counting.OpListRecordSets] != 1 || calls != 2 {
		t.Fatalf("a busy batch of 10 cost %v and %d write calls; want 1 read and 2 writes (first, then the batch once)", c, calls)
	}
	g.busyAfter.Store(0)
	if err := w.Apply(ctx, []provider.Change{create(aSet("h0."+zone, "192.0.2.1"))}); err != nil {
		t.Fatal(err)
	}
	if c, calls := p.Counts(), g.n.Load(); c[counting.OpListRecordSets] != 2 || calls != 3 {
		t.Fatalf("after recovery %v and %d write calls; want one re-read and one more write", c, calls)
	}
}

// TestWriter_BusyDuringTheOneByOneRetryStopsIt: when a single retry of a rejected batch is
// answered busy, the other submissions fail with it instead of each trying alone.
func TestWriter_BusyDuringTheOneByOneRetryStopsIt(t *testing.T) {
	_, g, w := setupGated(t, zonewriter.Options{})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make([]error, 5)
	wg.Add(1)
	go func() { defer wg.Done(); _ = w.Apply(ctx, []provider.Change{create(aSet("first."+zone, "192.0.2.1"))}) }()
	g.entered(t)
	for i := range errs {
		rs := aSet(fmt.Sprintf("h%d.%s", i, zone), "192.0.2.1")
		if i == 0 {
			rs.Targets = []string{"not-an-address"}
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = w.Apply(ctx, []provider.Change{create(rs)}) }()
	}
	waitFor(t, "5 submissions queued", func() bool { return w.Queued() == 5 })
	g.busyAfter.Store(3) // the combined batch is rejected, then the first single retry finds it busy
	g.hold.Store(false)
	g.release <- struct{}{}
	wg.Wait()
	busy := 0
	for _, err := range errs {
		if errors.Is(err, provider.ErrThrottled) {
			busy++
		}
	}
	if calls := g.n.Load(); calls != 3 || busy != 5 {
		t.Fatalf("%d write calls, %d busy answers (errors %v); want 3 (the first, the combined batch, one single retry) and all 5 failed busy", calls, busy, errs)
	}
}

func TestWriter_ResyncRereadsAfterInterval(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1_700_000_000, 0))
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

// TestWriter_RefreshOlderThanRereadsOncePerAge: callers that bound the view's age (conflicted
// objects retrying) share one read per age, however many of them ask.
func TestWriter_RefreshOlderThanRereadsOncePerAge(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	p, w := setup(t, zonewriter.Options{Resync: time.Hour, Clock: clk})
	ctx := context.Background()
	reads := func() int { return p.Counts()[counting.OpListRecordSets] }
	use := func(maxAge time.Duration) {
		t.Helper()
		w.RefreshOlderThan(maxAge)
		if _, err := w.RecordSets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	use(30 * time.Second) // not loaded yet: the first read
	clk.Step(10 * time.Second)
	for range 5 {
		use(30 * time.Second) // 10 s old: kept
	}
	use(0) // no bound: kept
	if got := reads(); got != 1 {
		t.Fatalf("reads = %d with a view younger than the bound, want 1", got)
	}
	clk.Step(25 * time.Second)
	for range 5 {
		use(30 * time.Second) // 35 s old: one re-read, then fresh for the others
	}
	if got := reads(); got != 2 {
		t.Fatalf("reads = %d after the view passed the bound, want 2", got)
	}
}

// TestWriter_ApplyReturnsWhenContextEnds: a submitter whose context ends while its submission
// waits behind a flush gets ctx's error, and its changes are never sent.
func TestWriter_ApplyReturnsWhenContextEnds(t *testing.T) {
	p, g, w := setupGated(t, zonewriter.Options{})
	ctx := ctxT(t)
	first := make(chan error, 1)
	go func() { first <- w.Apply(ctx, []provider.Change{create(aSet("first."+zone, "192.0.2.1"))}) }()
	g.entered(t)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := w.Apply(short, []provider.Change{create(aSet("x."+zone, "192.0.2.1"))})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	g.hold.Store(false)
	g.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := w.Apply(ctx, []provider.Change{create(aSet("y."+zone, "192.0.2.1"))}); err != nil {
		t.Fatal(err)
	}
	if c := p.Counts(); c[counting.OpApplyChanges] != 2 {
		t.Fatalf("writes %v; want 2 (the abandoned submission is not sent)", c)
	}
	sets, err := p.ListRecordSets(ctx, zone)
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range sets {
		if rs.Name == "x."+zone {
			t.Fatal("the abandoned submission reached the provider")
		}
	}
}

// TestSet_ApplyToAForgottenWriterFailsAtOnce: a writer whose loop ended (Set.Forget) fails
// Apply at once instead of holding the submitter's goroutine until its context ends.
func TestSet_ApplyToAForgottenWriterFailsAtOnce(t *testing.T) {
	ctx, p, id := localZone(t)
	set := zonewriter.NewSet(ctx, zonewriter.Options{})
	key := zonewriter.Key{Account: "ns/dns", ZoneID: id}
	w := set.For(key, p)
	set.Forget(key)
	err := w.Apply(ctxT(t), []provider.Change{create(aSet("a."+zone, "192.0.2.1"))})
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Apply to a forgotten writer: %v, want a stopped-writer error before the deadline", err)
	}
}

// TestSet_WritersOfAnAccountShareItsWriteSlots: with a provider that takes
// one write at a time (Capabilities.MaxWritesInFlight 1, PowerDNS on sqlite), a write of one
// zone's writer waits while another zone's writer of the same account has a write in flight;
// another account does not wait.
func TestSet_WritersOfAnAccountShareItsWriteSlots(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store := zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir()})
	g := newGated(oneAtATime{local.New(store, local.Options{})})
	var ids []string
	for _, name := range []string{"a.test", "b.test", "c.test"} {
		z, err := g.EnsureZone(ctx, provider.ZoneSpec{Name: name, CallerReference: "test"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, z.ID)
	}
	set := zonewriter.NewSet(ctx, zonewriter.Options{})
	wa := set.For(zonewriter.Key{Account: "ns/one", ZoneID: ids[0]}, g)
	wb := set.For(zonewriter.Key{Account: "ns/one", ZoneID: ids[1]}, g)
	wc := set.For(zonewriter.Key{Account: "ns/other", ZoneID: ids[2]}, g)
	for _, w := range []*zonewriter.Writer{wa, wb, wc} {
		if _, err := w.RecordSets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 3)
	go func() { done <- wa.Apply(ctx, []provider.Change{create(aSet("www.a.test", "192.0.2.1"))}) }()
	g.entered(t)
	go func() { done <- wb.Apply(ctx, []provider.Change{create(aSet("www.b.test", "192.0.2.1"))}) }()
	waitFor(t, "b's write waiting for the account's slot", func() bool { return zonewriter.WritesWaiting(set, "ns/one") == 1 })
	go func() { done <- wc.Apply(ctx, []provider.Change{create(aSet("www.c.test", "192.0.2.1"))}) }()
	g.entered(t) // c, of another account, is not held back by a
	if got := g.maxInFlight.Load(); got != 2 {
		t.Fatalf("%d writes in flight, want a's and c's", got)
	}
	g.hold.Store(false)
	g.release <- struct{}{}
	g.release <- struct{}{}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := g.maxInFlight.Load(); got != 2 {
		t.Fatalf("at most %d writes were in flight, want 2 (one per account)", got)
	}
}

// TestSet_ReportsAZoneDeletedAtTheProviderOnce: a write that finds the hosted zone gone marks
// the writer ZoneNotFound and delivers its key on Set.ZoneNotFound, once per loss; Reset re-arms
// it, and the next read sees the re-created zone.
func TestSet_ReportsAZoneDeletedAtTheProviderOnce(t *testing.T) {
	ctx, p, id := localZone(t)
	set := zonewriter.NewSet(ctx, zonewriter.Options{})
	key := zonewriter.Key{Account: "ns/dns", ZoneID: id}
	w := set.For(key, p)
	if err := w.Apply(ctx, []provider.Change{create(aSet("a."+zone, "192.0.2.1"))}); err != nil {
		t.Fatal(err)
	}
	if set.Lookup(key) != w || set.Lookup(zonewriter.Key{ZoneID: "other"}) != nil {
		t.Fatal("Lookup does not return the zone's writer only")
	}
	if err := p.DeleteZone(ctx, id); err != nil {
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
	case <-time.After(testrun.HangTimeout):
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

// TestSet_ResolvesTheAccountsCurrentProviderBeforeEachCall: with
// Options.Resolve, a Set's writer reads and writes through the provider the account's current
// credentials give, although nobody calls For again after the rotation (the heartbeat reporter
// and the scraper never do); a resolve error fails the call and names the account.
func TestSet_ResolvesTheAccountsCurrentProviderBeforeEachCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store := zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir()})
	old := counting.Wrap(local.New(store, local.Options{}), "local", nil)
	rotated := counting.Wrap(local.New(store, local.Options{}), "local", nil)
	z, err := old.EnsureZone(ctx, provider.ZoneSpec{Name: zone, CallerReference: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	current, resolveErr := provider.Provider(old), error(nil)
	set := zonewriter.NewSet(ctx, zonewriter.Options{Resolve: func(_ context.Context, account string) (provider.Provider, error) {
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

// TestWriter_SnapshotIsNeverOlderThanTheCallersLastWrite: snapshots are built outside the
// writer's lock, one build at a time, while flushes commit (planners never queue on the lock
// behind a big zone's rebuild). Whatever the interleaving, a Snapshot taken after
// an Apply returned holds that Apply's record set: a build overtaken by a commit is never handed
// to a caller that asked after the commit. 8 writers of their own names, each checking its own
// write at once, in a zone of 5,000 sets so that a build takes long enough to be overtaken.
func TestWriter_SnapshotIsNeverOlderThanTheCallersLastWrite(t *testing.T) {
	_, w := setup(t, zonewriter.Options{})
	ctx := ctxT(t)
	var bulk []provider.Change
	for i := range 5000 {
		bulk = append(bulk, create(aSet(fmt.Sprintf("bulk%d.%s", i, zone), "192.0.2.9")))
	}
	if err := w.Apply(ctx, bulk); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				name := fmt.Sprintf("h%d-%d.%s", g, i, zone)
				if err := w.Apply(ctx, []provider.Change{create(aSet(name, "192.0.2.1"))}); err != nil {
					errs <- err
					return
				}
				snap, err := w.Snapshot(ctx, zone)
				if err != nil {
					errs <- err
					return
				}
				if _, ok := snap.Lookup(provider.RecordSetKey{Name: name, Type: "A"}); !ok {
					errs <- fmt.Errorf("a snapshot taken after writing %s lacks it", name)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestWriter_FenceRefusesAWriteUnsent: while Options.Fence fails (the manager's: a leader that
// has not renewed its Lease within the renew deadline), a submission fails with its error and
// the provider sees no write; once it passes again, the same submission is written.
func TestWriter_FenceRefusesAWriteUnsent(t *testing.T) {
	var fenced atomic.Bool
	fenced.Store(true)
	errFenced := errors.New("lease not held")
	p, w := setup(t, zonewriter.Options{Fence: func() error {
		if fenced.Load() {
			return errFenced
		}
		return nil
	}})
	ctx := ctxT(t)
	change := []provider.Change{create(aSet("fenced."+zone, "192.0.2.1"))}
	if err := w.Apply(ctx, change); !errors.Is(err, errFenced) {
		t.Fatalf("Apply while fenced = %v, want the fence's error", err)
	}
	if n := p.Counts()[counting.OpApplyChanges]; n != 0 {
		t.Fatalf("%d writes reached the provider while fenced, want 0", n)
	}
	fenced.Store(false)
	if err := w.Apply(ctx, change); err != nil {
		t.Fatalf("Apply once the fence passes: %v", err)
	}
	if n := p.Counts()[counting.OpApplyChanges]; n != 1 {
		t.Fatalf("%d writes reached the provider, want 1", n)
	}
}

// TestWriter_TransportFailureFailsTheBatchWithoutSplittingIt (under a 30%
// reset rate, splitting cost 1,020 requests for 1,000 records): a batch whose call fails in transport (a
// connection reset, a reply cut short) was not refused for any one submission's sake, so it
// fails as a whole, like a busy one: no per-submission retry and no read per submission.
func TestWriter_TransportFailureFailsTheBatchWithoutSplittingIt(t *testing.T) {
	reset := &url.Error{Op: "Patch", URL: "http://127.0.0.1:8081/api/v1/servers/localhost/zones/example.test.",
		Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	for name, failure := range map[string]error{
		"connection reset":    fmt.Errorf("apply changes: %w", reset),
		"reply cut short":     fmt.Errorf("PATCH /zones/example.test.: read response: %w", io.ErrUnexpectedEOF),
		"provider down (5xx)": fmt.Errorf("azure RecordSets.CreateOrUpdate: %w", provider.ErrUnavailable),
	} {
		t.Run(name, func(t *testing.T) {
			p, g, w := setupGated(t, zonewriter.Options{})
			ctx := ctxT(t)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.Apply(ctx, []provider.Change{create(aSet("first."+zone, "192.0.2.1"))}); err != nil {
					t.Error(err)
				}
			}()
			g.entered(t)
			errs := make([]error, 5)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = w.Apply(ctx, []provider.Change{create(aSet(fmt.Sprintf("h%d.%s", i, zone), "192.0.2.1"))})
				}()
			}
			waitFor(t, "5 submissions queued", func() bool { return w.Queued() == 5 })
			g.failWith.Store(&failure)
			g.busyAfter.Store(2) // the first passes, the batch fails in transport
			g.hold.Store(false)
			g.release <- struct{}{}
			wg.Wait()
			for i, err := range errs {
				if !errors.Is(err, failure) {
					t.Fatalf("submission %d: %v, want the transport failure", i, err)
				}
			}
			if c, calls := p.Counts(), g.n.Load(); c[counting.OpListRecordSets] != 1 || calls != 2 {
				t.Fatalf("a batch of 5 failing in transport cost %v and %d write calls; want 1 read and 2 writes (first, then the batch once)", c, calls)
			}
		})
	}
}

// TestWriter_SeededViewNeedsNoReadAndHoldsTheFirstFlush pins Seed (adopting a zone and
// planning against it takes no read of its own): a view seeded from the zone read that adopted it serves
// planners without a ListRecordSets, ages from the read's time, and its first flush waits, as the
// first flush after a load does, until LoadWait passes with no new submission, so that planners
// arriving together go in one write. A loaded view is never replaced by a seed.
func TestWriter_SeededViewNeedsNoReadAndHoldsTheFirstFlush(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	const wait = 5 * time.Millisecond
	p, g, w := setupGated(t, zonewriter.Options{Clock: clk, LoadWait: wait, Resync: time.Hour})
	ctx := ctxT(t)
	current, err := p.ListRecordSets(ctx, local.ZoneID(zone))
	if err != nil {
		t.Fatal(err)
	}
	p.Reset()
	if !w.Seed(current, clk.Now()) {
		t.Fatal("Seed of a writer with no view did nothing")
	}
	if w.Seed([]provider.RecordSet{*aSet("stale."+zone, "192.0.2.9")}, clk.Now()) {
		t.Fatal("a second Seed replaced the seeded view")
	}
	snap, err := w.Snapshot(ctx, zone)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Lookup(provider.RecordSetKey{Name: "stale." + zone, Type: "A"}); ok {
		t.Fatal("the snapshot holds the set of the refused second seed")
	}
	const n = 3
	errs := make(chan error, n)
	for i := range n {
		go func() {
			errs <- w.Apply(ctx, []provider.Change{create(aSet(fmt.Sprintf("h%d.%s", i, zone), "192.0.2.1"))})
		}()
	}
	waitFor(t, "3 submissions queued, the writer waiting on its clock", func() bool {
		return w.Queued() == n && clk.HasWaiters()
	})
	clk.Step(wait)
	if got := g.entered(t); got != n {
		t.Fatalf("the first flush of a seeded view carries %d changes, want %d", got, n)
	}
	g.release <- struct{}{}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if c := p.Counts(); c[counting.OpListRecordSets] != 0 || c[counting.OpApplyChanges] != 1 {
		t.Fatalf("planning and writing against a seeded view cost %v; want no read and 1 write", c)
	}
	clk.Step(61 * time.Minute) // past Resync from the seed's read
	if _, err := w.RecordSets(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.Counts()[counting.OpListRecordSets]; got != 1 {
		t.Fatalf("reads after Resync passed since the seed = %d, want 1", got)
	}
}

// TestWriter_SubmitReturnsBeforeTheWriteAndWaitAfterIt: Submit queues and returns while the
// flush carrying the changes is still held at the provider; its wait returns once the provider
// answered, with the provider's answer.
func TestWriter_SubmitReturnsBeforeTheWriteAndWaitAfterIt(t *testing.T) {
	_, g, w := setupGated(t, zonewriter.Options{LoadWait: -1})
	ctx := ctxT(t)
	if _, err := w.RecordSets(ctx); err != nil {
		t.Fatal(err)
	}
	wait := w.Submit(ctx, []provider.Change{create(aSet("submit."+zone, "192.0.2.1"))})
	if got := g.entered(t); got != 1 {
		t.Fatalf("the flush carries %d changes, want 1", got)
	}
	done := make(chan error, 1)
	go func() { done <- wait() }()
	select {
	case err := <-done:
		t.Fatalf("wait returned %v while the provider still held the write", err)
	case <-time.After(20 * time.Millisecond):
	}
	g.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSet_AFlushWaitingForTheAccountsSlotTakesWhatQueuedMeanwhile pins the flush's late cut: while
// zone a's write holds the account's only slot, zone b's flush waits for it, and the
// submissions that reach b meanwhile go in that same flush, one write, not one more each.
func TestSet_AFlushWaitingForTheAccountsSlotTakesWhatQueuedMeanwhile(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store := zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir()})
	g := newGated(oneAtATime{local.New(store, local.Options{})})
	t.Cleanup(func() { g.hold.Store(false) })
	var ids []string
	for _, name := range []string{"a.test", "b.test"} {
		z, err := g.EnsureZone(ctx, provider.ZoneSpec{Name: name, CallerReference: "test"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, z.ID)
	}
	set := zonewriter.NewSet(ctx, zonewriter.Options{LoadWait: -1})
	wa := set.For(zonewriter.Key{Account: "ns/one", ZoneID: ids[0]}, g)
	wb := set.For(zonewriter.Key{Account: "ns/one", ZoneID: ids[1]}, g)
	for _, w := range []*zonewriter.Writer{wa, wb} {
		if _, err := w.RecordSets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	const n = 5
	done := make(chan error, n+1)
	go func() { done <- wa.Apply(ctx, []provider.Change{create(aSet("www.a.test", "192.0.2.1"))}) }()
	g.entered(t)
	go func() { done <- wb.Apply(ctx, []provider.Change{create(aSet("h0.b.test", "192.0.2.1"))}) }()
	waitFor(t, "b's flush waiting for the account's slot", func() bool { return zonewriter.WritesWaiting(set, "ns/one") == 1 })
	for i := 1; i < n; i++ {
		go func() {
			done <- wb.Apply(ctx, []provider.Change{create(aSet(fmt.Sprintf("h%d.b.test", i), "192.0.2.1"))})
		}()
	}
	waitFor(t, "b's other submissions queued", func() bool { return wb.Queued() == n })
	g.release <- struct{}{} // a's write ends; b's flush takes the slot
	if got := g.entered(t); got != n {
		t.Fatalf("b's flush carries %d changes, want all %d that queued while it waited for the slot", got, n)
	}
	g.release <- struct{}{}
	for range n + 1 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriter_ALingeringFlushTakesARollout (a 1% change: at most one write per zone):
// with Options.Linger, the flush of an idle writer waits until Linger passed with no new
// submission and no snapshot handed to a planner, at most MaxLinger from its first submission,
// so that objects reconciled one after another land in one write; submissions that queued
// behind a flush in flight go with the next flush at once. All on the injected clock.
func TestWriter_ALingeringFlushTakesARollout(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	const linger, maxLinger = 10 * time.Millisecond, 50 * time.Millisecond
	p, g, w := setupGated(t, zonewriter.Options{Clock: clk, Linger: linger, MaxLinger: maxLinger, Resync: time.Hour})
	ctx := ctxT(t)
	if _, err := w.RecordSets(ctx); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 32)
	next := 0
	submit := func() {
		i := next
		next++
		go func() {
			errs <- w.Apply(ctx, []provider.Change{create(aSet(fmt.Sprintf("r%d.%s", i, zone), "192.0.2.1"))})
		}()
	}
	queued := func(n int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d submissions queued, the writer waiting on its clock", n), func() bool {
			return w.Queued() == n && clk.HasWaiters()
		})
	}
	noFlush := func(when string) {
		t.Helper()
		select {
		case n := <-g.calls:
			t.Fatalf("a flush of %d changes went %s", n, when)
		case <-time.After(20 * time.Millisecond):
		}
	}
	answered := func(n int) {
		t.Helper()
		for range n {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}

	// The first flush after a load goes once every caller of the load submitted (here the
	// one RecordSets caller): it does not linger.
	submit()
	if n := g.entered(t); n != 1 {
		t.Fatalf("the first flush after the load carries %d changes, want 1", n)
	}
	g.release <- struct{}{}
	answered(1)
	waitFor(t, "the first flush ended", func() bool { return !zonewriter.Flushing(w) })

	// A rollout: a submission, a planner handed a snapshot 6 ms later, its submission 6 ms
	// after that: the flush waits Linger after the last of them, and carries both.
	submit()
	queued(1)
	clk.Step(6 * time.Millisecond)
	if _, err := w.Snapshot(ctx, zone); err != nil {
		t.Fatal(err)
	}
	clk.Step(6 * time.Millisecond) // 12 ms after the first submission, 6 after the hand-off
	noFlush("6 ms after a planner was handed a snapshot")
	submit()
	queued(2)
	clk.Step(linger - time.Millisecond)
	noFlush("before Linger passed since the last submission")
	clk.Step(time.Millisecond)
	if n := g.entered(t); n != 2 {
		t.Fatalf("the lingering flush carries %d changes, want the rollout's 2", n)
	}
	g.release <- struct{}{}
	answered(2)
	waitFor(t, "the rollout's flush ended", func() bool { return !zonewriter.Flushing(w) })

	// Submissions that never stop coming: the flush goes MaxLinger after the first.
	submit()
	queued(1)
	for k := 2; k <= 6; k++ {
		clk.Step(linger - time.Millisecond)
		submit()
		queued(k)
	}
	// 45 ms after the first: MaxLinger (50 ms) is 5 ms away, Linger from the last 10 ms.
	clk.Step(5 * time.Millisecond)
	if n := g.entered(t); n != 6 {
		t.Fatalf("the flush at MaxLinger carries %d changes, want 6", n)
	}
	// Behind that flush, in flight: two submissions queue, and go at once when it ends.
	submit()
	submit()
	waitFor(t, "2 submissions queued behind the flush in flight", func() bool { return w.Queued() == 2 })
	g.release <- struct{}{}
	if n := g.entered(t); n != 2 {
		t.Fatalf("the flush after the one in flight carries %d changes, want 2", n)
	}
	g.release <- struct{}{}
	answered(8)
	if c := p.Counts(); c[counting.OpApplyChanges] != 4 || c[counting.OpListRecordSets] != 1 {
		t.Fatalf("a first write, a rollout of 2, a stream of 6 and 2 behind a flush cost %v; want 1 read and 4 writes", c)
	}
}

// TestWriter_SubmitToAnswersEverySubmissionOnce: SubmitTo returns once the changes are queued,
// and each submission's answer arrives exactly once on the submitter's channel, tagged with its
// ID: nil once the provider holds them (submissions queued behind a flush in flight go together
// in the next), the precondition's conflict for a stale one, the context's error for one whose
// submitter gave up before it was sent, and an error at once from a stopped writer. The writer
// runs none of the submitter's code: it sends.
func TestWriter_SubmitToAnswersEverySubmissionOnce(t *testing.T) {
	p, g, w := setupGated(t, zonewriter.Options{})
	ctx := ctxT(t)
	names := []string{"first", "a", "b", "stale", "abandoned"}
	answers := make(chan zonewriter.Answer) // unbuffered: the writer waits for the receiver
	submit := func(ctx context.Context, id uint64, ch provider.Change) {
		w.SubmitTo(ctx, []provider.Change{ch}, answers, id)
	}
	submit(ctx, 0, create(aSet("first."+zone, "192.0.2.1")))
	g.entered(t) // the first flush is in flight; what follows queues behind it
	submit(ctx, 1, create(aSet("a."+zone, "192.0.2.1")))
	submit(ctx, 2, create(aSet("b."+zone, "192.0.2.2")))
	submit(ctx, 3, provider.Change{Action: provider.ActionDelete, Before: aSet("never."+zone, "192.0.2.9")})
	gone, cancel := context.WithCancel(ctx)
	submit(gone, 4, create(aSet("abandoned."+zone, "192.0.2.3")))
	cancel()
	g.hold.Store(false)
	g.release <- struct{}{}
	got := map[string]error{}
	for range len(names) {
		select {
		case a := <-answers:
			name := names[a.ID]
			if _, twice := got[name]; twice {
				t.Fatalf("%s answered twice", name)
			}
			got[name] = a.Err
		case <-ctx.Done():
			t.Fatalf("answers so far %v: %v", got, ctx.Err())
		}
	}
	for _, name := range []string{"first", "a", "b"} {
		if got[name] != nil {
			t.Errorf("%s: %v, want nil", name, got[name])
		}
	}
	if !errors.Is(got["stale"], provider.ErrConflict) {
		t.Errorf("stale: %v, want ErrConflict", got["stale"])
	}
	if !errors.Is(got["abandoned"], context.Canceled) {
		t.Errorf("abandoned: %v, want context.Canceled", got["abandoned"])
	}
	if c := p.Counts(); c[counting.OpApplyChanges] != 2 {
		t.Errorf("writes %v, want 2: the first, then a and b together", c)
	}
	select {
	case a := <-answers:
		t.Errorf("an extra answer: %v", a)
	case <-time.After(50 * time.Millisecond):
	}

	// A stopped writer answers at once, on the caller's goroutine.
	wctx, stop := context.WithCancel(context.Background())
	store := zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir()})
	lp := local.New(store, local.Options{})
	z, err := lp.EnsureZone(ctx, provider.ZoneSpec{Name: zone, CallerReference: "stopped"})
	if err != nil {
		t.Fatal(err)
	}
	w2 := zonewriter.New(wctx, lp, z.ID, zonewriter.Options{})
	stop()
	waitFor(t, "the writer to stop", func() bool {
		return w2.Apply(ctx, []provider.Change{create(aSet("probe."+zone, "192.0.2.1"))}) != nil
	})
	late := make(chan zonewriter.Answer, 2)
	w2.SubmitTo(ctx, []provider.Change{create(aSet("late."+zone, "192.0.2.1"))}, late, 9)
	if len(late) != 1 {
		t.Fatalf("a stopped writer: %d answers when SubmitTo returned, want 1", len(late))
	}
	if a := <-late; a.ID != 9 || a.Err == nil || errors.Is(a.Err, context.DeadlineExceeded) {
		t.Errorf("a stopped writer answered %+v, want ID 9 with its stop", a)
	}
}

// The controllers' first pass (Options.Warming) holds a flush that is not full, however long
// the submissions take to come; a full queue (MaxPending) goes at once, and the rest goes in
// one flush when the pass ends (2 PATCHes a zone at 50,000 endpoints, not 3 to 7).
func TestWriter_TheFirstPassHoldsFlushesUntilFullOrOver(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	var warming atomic.Bool
	warming.Store(true)
	const poll = 20 * time.Millisecond
	_, g, w := setupGated(t, zonewriter.Options{Clock: clk, Linger: 10 * time.Millisecond, MaxPending: 3, Resync: time.Hour,
		Warming: warming.Load, WarmPoll: poll})
	ctx := ctxT(t)
	if _, err := w.RecordSets(ctx); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for i := range 5 {
		go func() {
			errs <- w.Apply(ctx, []provider.Change{create(aSet(fmt.Sprintf("r%d.%s", i, zone), "192.0.2.1"))})
		}()
		if i < 2 {
			waitFor(t, fmt.Sprintf("%d submissions queued, the writer waiting on its clock", i+1), func() bool {
				return w.Queued() == i+1 && clk.HasWaiters()
			})
			// Far past LoadWait, Linger and MaxLinger: only the first pass holds the flush.
			clk.Step(time.Second)
			select {
			case n := <-g.calls:
				t.Fatalf("a flush of %d changes went during the first pass, not full", n)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	// The third submission fills the queue (MaxPending 3): that flush goes at once.
	if n := g.entered(t); n != 3 {
		t.Fatalf("the full flush carries %d changes, want 3", n)
	}
	waitFor(t, "2 submissions queued behind the full flush", func() bool { return w.Queued() == 2 })
	g.release <- struct{}{}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the full flush ended, the rest held on the clock", func() bool { return !zonewriter.Flushing(w) && clk.HasWaiters() })
	clk.Step(time.Second)
	select {
	case n := <-g.calls:
		t.Fatalf("a flush of %d changes went during the first pass, not full", n)
	case <-time.After(20 * time.Millisecond):
	}
	// The pass ends: the rest goes at the next poll, in one flush.
	warming.Store(false)
	clk.Step(poll)
	if n := g.entered(t); n != 2 {
		t.Fatalf("the flush after the first pass carries %d changes, want 2", n)
	}
	g.release <- struct{}{}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
