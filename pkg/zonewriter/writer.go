package zonewriter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/zoneview"
)

// Options tunes a Writer. Zero values take the defaults below.
type Options struct {
	// MaxPending bounds one flush and the queue behind it, in changes (Change elements); default
	// DefaultMaxPending. A flush takes queued submissions in order up to MaxPending changes (at least one
	// submission); while MaxPending changes wait for the next flush, Apply blocks.
	MaxPending int
	// Resync re-reads the zone when the view is older than this, a time.Duration; 0 never
	// re-reads on age (the --zone-resync-interval flag).
	Resync time.Duration
	// CallTimeout bounds each provider call, a time.Duration; default 2m. Waiting for the
	// account's write slot (Capabilities.MaxWritesInFlight) is not counted.
	CallTimeout time.Duration
	// Resolve returns the provider of an account (Key.Account, the Secret's "namespace/name")
	// from its current credentials. When set, the writers of a Set call it before each provider
	// call, read or write, so that a rotated Secret takes effect at the next call of every
	// writer of the account: the heartbeat reporter's and the nameserver scraper's too, which
	// never call Set.For. Its error fails that call, wrapped. It must be cheap when nothing
	// changed (factory.Factory.ResolveAccount answers from memory while the Secret's
	// resourceVersion is unchanged). nil: a writer uses the provider last given to Set.For
	// (or New).
	Resolve func(ctx context.Context, account string) (provider.Provider, error)
	// LoadWait bounds how long the first flush after a view load waits for the callers that
	// waited for that load (Snapshot, RecordSets) to submit, a time.Duration: the flush goes
	// once every such caller has submitted, or once LoadWait passed with none of them still
	// being handed its view and no new submission. Default 5ms; negative: never wait.
	LoadWait time.Duration
	// Linger is how long a flush of an idle writer (no flush in flight when its first
	// submission came) waits for more, a time.Duration: it goes once Linger passed with no new
	// submission and no snapshot handed to a planner, or MaxLinger after that first submission,
	// or at once when MaxPending changes are queued. A rollout's objects, reconciled one after
	// another, then land in one write per zone, not one for the first and one for the rest
	// (without it, a 1% change took 19 PATCHes over 10 zones). A submission that queued behind a
	// flush in flight never lingers: it goes with the next flush. Default 0: a lone
	// submission goes at once (the manager's --write-linger sets it).
	Linger time.Duration
	// MaxLinger bounds Linger's wait from the first submission; default 10×Linger.
	MaxLinger time.Duration
	// Warming, when set, reports whether the controllers are still in their first pass over
	// the objects they found at start (warmup.Tracker.Warming). While it reports true, a flush
	// with fewer than MaxPending changes queued waits, asking again every WarmPoll, so that a
	// first sync writes each zone in as few requests as its size allows rather than a trickle
	// of small ones while the bulk is still being planned (without it, 3 to 7 PATCHes a zone at
	// 50,000 endpoints over 10 PowerDNS zones, where 2 are the floor). It must be cheap, and
	// must report false for good within a bounded time: every write of the writer, a
	// heartbeat's or a release's too, waits for it. nil: never.
	Warming func() bool
	// WarmPoll is how often a flush held by Warming asks again, a time.Duration; default 20ms.
	WarmPoll time.Duration
	// Clock is injected for tests; default the real clock. It dates the view for Resync and
	// times LoadWait.
	Clock clock.Clock
	// Log receives one line per applied batch.
	Log logr.Logger
	// Fence, when set, is asked right before every write (ApplyChanges): an error fails that
	// write unsent, wrapped, and it is retried like any failed write. The manager sets it, with
	// leader election, to refuse writes once its last Lease renewal is older than the renew
	// deadline (a leader that was stalled, and may have been replaced). nil: no fence.
	Fence func() error
}

func (o Options) withDefaults() Options {
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 2 * time.Minute
	}
	if o.LoadWait == 0 {
		o.LoadWait = defaultLoadWait
	}
	if o.Linger < 0 {
		o.Linger = 0
	}
	if o.MaxLinger <= 0 {
		o.MaxLinger = 10 * o.Linger
	}
	if o.WarmPoll <= 0 {
		o.WarmPoll = 20 * time.Millisecond
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return o
}

// DefaultMaxPending is Options.MaxPending's default, in changes: a batch of 5,000 A sets and
// their registry TXT records is about 1.1 MB of PowerDNS rrset JSON, under its 2 MB
// webserver-max-bodysize.
const DefaultMaxPending = 5000

// defaultLoadWait is Options.LoadWait's default: a few milliseconds, so that a cold start's
// planners, who all waited for one view load, land in one flush.
const defaultLoadWait = 5 * time.Millisecond

// Writer applies record changes to one hosted zone. It is safe for concurrent use.
type Writer struct {
	zoneID  string
	account string // Key.Account for Options.Resolve; "" = never resolved
	opts    Options
	subs    chan *submission
	// turns carries a flush's request for its batch once it holds the account's write slot:
	// the loop answers with everything queued at that moment (see loop).
	turns chan chan []*submission
	// stopped is closed when the loop has ended (its context ended); Apply then fails at once.
	stopped chan struct{}
	stopErr func() error // the loop context's error
	// slots is the account's write budget, shared by the writers of a Set; nil: none.
	slots *slots
	// queued counts the submissions waiting for the next flush (for Queued).
	queued atomic.Int64

	// io serialises provider I/O: the loop's writes and the reads that load the view. Readers
	// of a fresh view never wait for it, so planning goes on while a batch is in flight.
	io sync.Mutex
	// mu guards the fields below; it is never held across provider I/O.
	mu   sync.Mutex
	p    provider.Provider
	sets map[provider.RecordSetKey]provider.RecordSet
	snap *zoneview.Snapshot // indexes sets; nil when sets changed since it was built
	// gen counts the changes of sets (loads, commits, resets): a snapshot is of one gen.
	gen uint64
	// building is the snapshot being built, outside mu, of generation building.gen; nil when
	// none. At most one build runs at a time.
	building *snapshotBuild
	// loadedAt is when the view was loaded (Options.Clock, Unix nanoseconds); 0: not loaded, or
	// invalidated. Atomic, so that a planner's freshness check never waits for mu.
	loadedAt atomic.Int64
	// notFound: the last provider read or write answered provider.ErrZoneNotFound.
	notFound bool
	// onNotFound, when set, is called (without locks held) each time notFound becomes true.
	onNotFound func()
	// viewWaiters counts the Snapshot and RecordSets callers that found the view stale and have
	// not been handed one yet; hold is the first flush's wait after a load (see Options.LoadWait).
	viewWaiters int
	hold        loadHold
	// active is the last submission or snapshot hand-off (Options.Clock), which a lingering
	// flush waits Linger after (Options.Linger); lingerFrom is when the first submission of an
	// idle writer's queue came (zero: the queue built up behind a flush, which does not linger).
	active     time.Time
	lingerFrom time.Time
	// flushing is true from a flush's start (loop) to its end, before the loop hears of it.
	flushing atomic.Bool
}

// loadHold is what the first flush after a view load waits for: expect submissions (the
// callers that waited for the load), or LoadWait after last (the load, the last hand-off of
// a view, or the last submission) with no caller still waiting for its view.
type loadHold struct {
	expect int
	last   time.Time
}

// snapshotBuild is one build of a snapshot of the sets of generation gen; done is closed
// once snap is set.
type snapshotBuild struct {
	gen  uint64
	done chan struct{}
	snap *zoneview.Snapshot
}

type submission struct {
	ctx     context.Context // the submitter's; a submission whose ctx ended is not sent
	changes []provider.Change
	done    chan error // buffered: the writer never blocks on an answer; nil with to
	// to, when set, receives the answer, tagged id (SubmitTo).
	to chan<- Answer
	id uint64
}

// An Answer is a writer's answer to one submission of SubmitTo: the submitter's ID, and what
// Apply would have returned.
type Answer struct {
	ID  uint64
	Err error
}

// answer answers s: on done, or on to.
func (s *submission) answer(err error) {
	if s.done != nil {
		s.done <- err
	}
	if s.to != nil {
		s.to <- Answer{ID: s.id, Err: err}
	}
}

// New returns a Writer for the hosted zone zoneID at p. Its loop runs until ctx ends;
// afterwards Apply returns ctx's error. A Writer made by New shares no write budget with other
// writers; a Set's writers share their account's (Capabilities.MaxWritesInFlight).
func New(ctx context.Context, p provider.Provider, zoneID string, opts Options) *Writer {
	return start(ctx, p, Key{ZoneID: zoneID}, opts, nil, nil)
}

// start returns a running Writer for k; with Options.Resolve and k.Account set it resolves its
// provider before each call. onNotFound, when set, is called each time the writer finds its
// hosted zone gone; sl, when set, is the account's write budget.
func start(ctx context.Context, p provider.Provider, k Key, opts Options, onNotFound func(), sl *slots) *Writer {
	w := &Writer{zoneID: k.ZoneID, opts: opts.withDefaults(), p: p, subs: make(chan *submission), turns: make(chan chan []*submission),
		stopped: make(chan struct{}), stopErr: ctx.Err, slots: sl, onNotFound: onNotFound}
	if w.opts.Resolve != nil {
		w.account = k.Account
	}
	go w.loop(ctx)
	return w
}

// ZoneNotFound reports whether the writer's last provider read or write answered
// provider.ErrZoneNotFound: the hosted zone was deleted at the provider. A later successful
// read or write, or Reset, clears it.
func (w *Writer) ZoneNotFound() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.notFound
}

// Reset drops the view and the ZoneNotFound mark, for example after the zone was re-created:
// the next RecordSets or Apply re-reads the zone, and a later ErrZoneNotFound is reported again.
func (w *Writer) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.loadedAt.Store(0)
	w.sets, w.snap, w.notFound = nil, nil, false
	w.gen++
}

// observe records whether a provider call found the zone, and calls onNotFound when the zone
// has just been found missing.
func (w *Writer) observe(err error) {
	missing := errors.Is(err, provider.ErrZoneNotFound)
	w.mu.Lock()
	became := missing && !w.notFound
	if err == nil || missing {
		w.notFound = missing
	}
	if missing {
		w.loadedAt.Store(0) // the view is of a zone that is gone
	}
	w.mu.Unlock()
	if became && w.onNotFound != nil {
		w.onNotFound()
	}
}

// ZoneID returns the provider's identifier of the writer's zone.
func (w *Writer) ZoneID() string { return w.zoneID }

// SetProvider replaces the provider, for example after its credentials changed. The view of the
// zone is kept.
func (w *Writer) SetProvider(p provider.Provider) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.p = p
}

// Invalidate makes the next RecordSets or Apply re-read the zone from the provider.
func (w *Writer) Invalidate() {
	w.loadedAt.Store(0)
}

// RefreshOlderThan makes the next RecordSets, Snapshot or Apply re-read the zone when the view
// was loaded maxAge (a time.Duration, on Options.Clock) or longer ago; a younger view, or maxAge
// <= 0, is kept. Callers that retry on what another cluster may have changed (a name held by
// another owner) bound the age of what they plan against with it, and share one re-read per
// maxAge however many of them retry.
func (w *Writer) RefreshOlderThan(maxAge time.Duration) {
	at := w.loadedAt.Load()
	if maxAge <= 0 || at == 0 || w.opts.Clock.Now().Sub(time.Unix(0, at)) < maxAge {
		return
	}
	w.loadedAt.CompareAndSwap(at, 0)
}

// RecordSets returns every record set of the zone, registry records included, in no particular
// order. It reads the provider only when the view is not loaded, was invalidated, or is older
// than Options.Resync; errors are the provider's (provider.ErrZoneNotFound, ...), wrapped.
func (w *Writer) RecordSets(ctx context.Context) ([]provider.RecordSet, error) {
	sets, _, err := w.view(ctx, "")
	return sets, err
}

// view returns the fresh view, loading it when needed; with zone set it returns only the
// snapshot, built once per view, and no copy of the sets.
func (w *Writer) view(ctx context.Context, zone string) ([]provider.RecordSet, *zoneview.Snapshot, error) {
	if !w.fresh() {
		w.mu.Lock()
		w.viewWaiters++
		w.mu.Unlock()
		defer w.handedOff()
	}
	if err := w.ensureLoaded(ctx); err != nil {
		return nil, nil, err
	}
	if zone != "" {
		snap := w.snapshot(zone)
		w.planning()
		return nil, snap, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.setsLocked(), nil, nil
}

// setsLocked returns a copy of the view's sets, in no particular order; w.mu must be held.
func (w *Writer) setsLocked() []provider.RecordSet {
	out := make([]provider.RecordSet, 0, len(w.sets))
	for _, rs := range w.sets {
		out = append(out, rs)
	}
	return out
}

// snapshot returns a snapshot of the view at least as new as the view when it was called,
// built once per change of the view. The build runs without w.mu held: a flush committing its
// changes, and planners checking that the view is fresh, never wait for it (at 10,000
// DNSEndpoints, thousands of planners queued on w.mu behind each rebuild of a big zone's
// snapshot). At most one build runs at a time, so a zone is never indexed twice at once:
// planners that ask during a build wait for it, and take it if it is of the view they asked
// about; those that asked after a commit overtook it build the next one.
func (w *Writer) snapshot(zone string) *zoneview.Snapshot {
	w.mu.Lock()
	asked := w.gen
	for {
		if w.snap != nil {
			defer w.mu.Unlock()
			return w.snap
		}
		b := w.building
		if b == nil {
			break
		}
		w.mu.Unlock()
		<-b.done
		if b.gen >= asked {
			return b.snap
		}
		w.mu.Lock()
	}
	b := &snapshotBuild{gen: w.gen, done: make(chan struct{})}
	w.building = b
	sets := w.setsLocked()
	w.mu.Unlock()
	b.snap = zoneview.New(zone, sets)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.building = nil
	if w.gen == b.gen {
		w.snap = b.snap
	}
	close(b.done)
	return b.snap
}

// planning records that a planner was handed a snapshot: while the first flush after a seed
// holds (Seed), it waits LoadWait from the last one too, as the planner will submit.
func (w *Writer) planning() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.active = w.opts.Clock.Now()
	if w.hold.expect == math.MaxInt {
		w.hold.last = w.opts.Clock.Now()
	}
}

// handedOff records that a caller that waited for a view load has its view (or its error),
// so that the first flush's wait (Options.LoadWait) runs from now.
func (w *Writer) handedOff() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.viewWaiters--
	if w.hold.expect > 0 {
		w.hold.last = w.opts.Clock.Now()
	}
}

// Snapshot returns the zone's record sets indexed for planning (zoneview.New, which plan.NewSnapshot is), built once per
// view and shared by every reconciler that plans against it; zone is the zone's name. It reads
// the provider as RecordSets does.
func (w *Writer) Snapshot(ctx context.Context, zone string) (*zoneview.Snapshot, error) {
	_, snap, err := w.view(ctx, zone)
	return snap, err
}

// Apply submits changes and waits until they are applied. When no flush is in flight they go
// out at once; otherwise they wait for the flush in flight to end and go in the next one,
// together with everything else submitted meanwhile (group commit; see the package doc). It
// returns nil once the provider accepted them, an error wrapping provider.ErrConflict when a
// Change.Before no longer matches the zone (re-plan and try again), ctx's error when ctx ends
// first, the writer context's error once the writer stopped (Set.Forget), or the provider's
// error. An empty list returns nil at once.
func (w *Writer) Apply(ctx context.Context, changes []provider.Change) error {
	return w.Submit(ctx, changes)()
}

// Submit queues changes as Apply does and returns at once, unless the queue is full
// (Options.MaxPending), with wait, which waits until they are applied and returns what Apply
// returns. A caller that writes to several zones submits to each writer and then waits for each,
// from one goroutine: at 2,048 reconciles of objects in 10 zones, one goroutine per zone and
// object waiting in Apply held 19,000 goroutine stacks. wait must be called once.
func (w *Writer) Submit(ctx context.Context, changes []provider.Change) (wait func() error) {
	if len(changes) == 0 {
		return func() error { return nil }
	}
	s := &submission{ctx: ctx, changes: changes, done: make(chan error, 1)}
	select {
	case w.subs <- s:
	case <-ctx.Done():
		return func() error { return ctx.Err() }
	case <-w.stopped:
		err := fmt.Errorf("zone writer of %s stopped: %w", w.zoneID, w.stopErr())
		return func() error { return err }
	}
	return func() error {
		select {
		case err := <-s.done:
			return err
		case <-ctx.Done():
			// Not sent yet: the flush drops it. In flight: the caller's next plan sees it.
			return ctx.Err()
		}
	}
}

// SubmitTo queues changes as Submit does and sends one Answer, tagged id, on answers with what
// Apply would return: the provider's answer, the writer's stop, or ctx's error when ctx ends
// before the changes are taken into a flush. It returns once the changes are queued (or
// refused), blocking only while the queue is full (Options.MaxPending), so that a caller can
// submit and move on while the write happens: a reconcile that submits and returns holds no
// goroutine while it waits. The answer is sent from the writer's goroutine, or from the
// caller's when the changes were never queued (then before SubmitTo returns); the writer runs
// none of the submitter's code, and waits on the send: the receiver must keep receiving until
// it has every answer it is owed. An empty list is answered nil at once.
func (w *Writer) SubmitTo(ctx context.Context, changes []provider.Change, answers chan<- Answer, id uint64) {
	if len(changes) == 0 {
		answers <- Answer{ID: id}
		return
	}
	s := &submission{ctx: ctx, changes: changes, to: answers, id: id}
	select {
	case w.subs <- s:
	case <-ctx.Done():
		answers <- Answer{ID: id, Err: ctx.Err()}
	case <-w.stopped:
		answers <- Answer{ID: id, Err: fmt.Errorf("zone writer of %s stopped: %w", w.zoneID, w.stopErr())}
	}
}

// Queued returns how many submissions wait for the next flush, received while a flush is in
// flight; submitters blocked in Apply by a full queue (Options.MaxPending) are not counted.
func (w *Writer) Queued() int { return int(w.queued.Load()) }

// loop is the group commit: it starts a flush as soon as a submission is queued and no flush
// is in flight, and queues the submissions that arrive meanwhile for the next one. Only the
// first flush after a view load may wait, for the callers that waited for that load
// (Options.LoadWait), and the flush of an idle writer, for more submissions (Options.Linger). It runs until ctx ends, then fails what is queued and waits for the
// flush in flight.
func (w *Writer) loop(ctx context.Context) {
	defer close(w.stopped)
	var (
		queue   []*submission
		n       int              // changes in queue
		flushed chan struct{}    // non-nil while a flush is in flight; closed when it ends
		wake    <-chan time.Time // non-nil while the first flush after a load waits
	)
	for {
		in := w.subs
		if n >= w.opts.MaxPending {
			in = nil // full: submitters wait in Apply
		}
		select {
		case <-ctx.Done():
			answer(queue, ctx.Err())
			w.queued.Store(0)
			if flushed != nil {
				<-flushed
			}
			return
		case s := <-in:
			// Idle: nothing queued and no flush running (the flag, not flushed, which this
			// loop may not have seen closed yet).
			w.submitted(len(queue) == 0 && !w.flushing.Load())
			queue = append(queue, s)
			n += len(s.changes)
		case <-flushed:
			flushed = nil
		case <-wake:
			wake = nil
		case reply := <-w.turns:
			// A flush holds the write slot now: it takes what queued while it waited.
			var batch []*submission
			batch, queue, n = cut(queue, w.opts.MaxPending)
			reply <- batch
		}
		if flushed == nil && len(queue) > 0 {
			d := w.holdFor(len(queue), n)
			switch {
			case d > 0 && wake == nil:
				wake = w.opts.Clock.After(d)
			case d <= 0:
				wake = nil
				flushed = make(chan struct{})
				// The flush first waits for a write slot of the account (with a budget) and then
				// takes the queue as it is: submissions that arrive while other zones of the
				// account write go in this flush, not the next (a batch cut before the
				// wait would leave them for one more write each).
				w.flushing.Store(true)
				go func(done chan struct{}) {
					defer close(done)
					defer w.flushing.Store(false)
					w.flushInTurn(ctx)
				}(flushed)
			}
		}
		w.queued.Store(int64(len(queue)))
	}
}

// submitted records a submission's arrival: the first flush after a load waits LoadWait from
// the last one, and a lingering flush Linger; idle says it is the first of a queue with no
// flush in flight, whose flush may linger (Options.Linger).
func (w *Writer) submitted(idle bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.opts.Clock.Now()
	w.active = now
	if idle {
		w.lingerFrom = now
	}
	if w.hold.expect > 0 {
		w.hold.last = now
	}
}

// lingerFor returns how long the next flush still lingers (Options.Linger): 0 when the queue
// built up behind a flush, or Linger passed since the last submission or hand-off, or
// MaxLinger since the first submission. w.mu must be held.
func (w *Writer) lingerFor() time.Duration {
	if w.opts.Linger <= 0 || w.lingerFrom.IsZero() {
		return 0
	}
	now := w.opts.Clock.Now()
	end := w.active.Add(w.opts.Linger)
	if last := w.lingerFrom.Add(w.opts.MaxLinger); last.Before(end) {
		end = last
	}
	if d := end.Sub(now); d > 0 {
		return d
	}
	w.lingerFrom = time.Time{}
	return 0
}

// holdFor returns how long the next flush waits for the callers of the last view load, with
// queued submissions (changes changes) waiting: 0 when it goes now (every caller of the load
// submitted, the queue is full, or LoadWait passed since the last hand-off or submission with
// no caller still waiting for its view), which ends the hold; with no load to wait for, how
// long it still lingers (lingerFor). While the controllers' first pass runs
// (Options.Warming), a flush that is not full waits WarmPoll and asks again.
func (w *Writer) holdFor(queued, changes int) time.Duration {
	if changes < w.opts.MaxPending && w.opts.Warming != nil && w.opts.Warming() {
		return w.opts.WarmPoll
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if changes >= w.opts.MaxPending {
		w.hold, w.lingerFrom = loadHold{}, time.Time{}
		return 0
	}
	h := w.hold
	if h.expect == 0 {
		return w.lingerFor()
	}
	if queued >= h.expect {
		w.hold, w.lingerFrom = loadHold{}, time.Time{}
		return 0
	}
	if w.viewWaiters > 0 { // they cannot submit before they have their view
		return w.opts.LoadWait
	}
	if d := h.last.Add(w.opts.LoadWait).Sub(w.opts.Clock.Now()); d > 0 {
		return d
	}
	w.hold, w.lingerFrom = loadHold{}, time.Time{}
	return 0
}

// cut splits queue into the next batch (submissions in order up to maxChanges changes, at
// least one) and the rest, which it copies so that the batch's array is not retained, and
// returns the rest's number of changes.
func cut(queue []*submission, maxChanges int) (batch, rest []*submission, restChanges int) {
	i, n := 0, 0
	for i < len(queue) && (i == 0 || n+len(queue[i].changes) <= maxChanges) {
		n += len(queue[i].changes)
		i++
	}
	for _, s := range queue[i:] {
		restChanges += len(s.changes)
	}
	return queue[:i:i], append([]*submission(nil), queue[i:]...), restChanges
}

func answer(subs []*submission, err error) {
	for _, s := range subs {
		s.answer(err)
	}
}

// live answers the submissions whose submitter gave up (ctx ended) with that error and returns
// the others: nothing is written for a caller that no longer waits, whose next plan would
// submit it again.
func live(batch []*submission) []*submission {
	out := batch[:0:0]
	for _, s := range batch {
		if err := s.ctx.Err(); err != nil {
			s.answer(err)
			continue
		}
		out = append(out, s)
	}
	return out
}

// flushInTurn waits for a write slot of the account, then asks the loop for the queue as it is
// and flushes it with the slot held. Without a slot (ctx ended, or the provider could not be
// resolved) the queue is answered with the error, or left to the loop, which answers it as it
// ends.
func (w *Writer) flushInTurn(ctx context.Context) {
	var err error
	if w.slots != nil {
		var release func()
		if release, err = w.acquire(ctx); release != nil {
			defer release()
		}
	}
	reply := make(chan []*submission, 1)
	select {
	case w.turns <- reply:
	case <-ctx.Done():
		return
	}
	batch := <-reply
	if err != nil {
		answer(live(batch), err)
		return
	}
	w.flush(ctx, batch)
}

// acquire takes a write slot of the account, under the limit of the provider's current
// Capabilities.MaxWritesInFlight; release gives it back.
func (w *Writer) acquire(ctx context.Context) (release func(), err error) {
	p, err := w.provider(ctx)
	if err != nil {
		return nil, fmt.Errorf("write to zone %s: %w", w.zoneID, err)
	}
	release, err = w.slots.acquire(ctx, p.Capabilities().MaxWritesInFlight)
	if err != nil {
		return nil, fmt.Errorf("write to zone %s: %w", w.zoneID, err)
	}
	return release, nil
}

// flush checks each submission against the view, applies the valid ones in one provider call,
// and answers every submitter. The caller (flushInTurn) holds the account's write slot for the
// whole flush.
func (w *Writer) flush(ctx context.Context, batch []*submission) {
	if batch = live(batch); len(batch) == 0 {
		return
	}
	if err := w.ensureLoaded(ctx); err != nil {
		answer(batch, err)
		return
	}
	w.io.Lock()
	defer w.io.Unlock()
	work := w.overlay()
	var ok []*submission
	var all []provider.Change
	for _, s := range batch {
		if _, err := tryApply(work, s.changes); err != nil {
			s.answer(err)
			continue
		}
		ok = append(ok, s)
		all = append(all, s.changes...)
	}
	if len(ok) == 0 {
		return
	}
	err := w.call(ctx, all)
	switch {
	case err == nil:
		w.commit(work)
		w.opts.Log.V(1).Info("applied batch", "zoneID", w.zoneID, "submissions", len(ok), "changes", len(all))
		answer(ok, nil)
	case len(ok) > 1 && rejected(err):
		w.opts.Log.V(1).Info("batch rejected; retrying its submissions one by one", "zoneID", w.zoneID, "submissions", len(ok), "error", err.Error())
		w.oneByOne(ctx, ok)
	default:
		// Busy, throttled past the guard's retries, timed out, or the zone or credentials are
		// gone: the whole batch fails and nothing is split. Part of a split batch may have
		// landed, or another writer changed the zone: the next flush re-reads (once).
		w.Invalidate()
		answer(ok, err)
	}
}

// oneByOne retries the submissions of a rejected batch one at a time, so that only the bad
// one fails. It reads the zone once for all of them (part of a split batch may have landed),
// never once per submission, and stops sending as soon as an answer is not a rejection of that
// submission (busy, throttled, zone gone): the rest fail with it rather than each trying alone.
// w.io must be held.
func (w *Writer) oneByOne(ctx context.Context, subs []*submission) {
	if err := w.loadLocked(ctx); err != nil {
		answer(subs, err)
		return
	}
	view := w.overlay()
	results := make([]error, len(subs)) // answered once the view holds the accepted ones
	unsure := false
	for i, s := range subs {
		undo, err := tryApply(view, s.changes)
		if err == nil {
			if err = w.call(ctx, s.changes); err != nil {
				undo()
				// A refused change wrote nothing; anything else may have, or the zone moved.
				unsure = unsure || !errors.Is(err, provider.ErrInvalidChange) && !errors.Is(err, provider.ErrNotCapable)
			}
		}
		results[i] = err
		if err != nil && !errors.Is(err, provider.ErrConflict) && !rejected(err) {
			// Not this submission's fault (busy, throttled, zone or credentials gone).
			for j := i + 1; j < len(subs); j++ {
				results[j] = err
			}
			break
		}
	}
	w.commit(view)
	if unsure {
		w.Invalidate()
	}
	for i, s := range subs {
		s.answer(results[i])
	}
}

// rejected reports whether err may be the fault of one submission of a combined batch, so that
// applying the submissions alone makes only the bad one fail: not a conflict (the submitter
// re-plans), not transient (busy, throttled, a deadline), not a failure to reach the provider
// (provider.Unreachable: splitting such a batch only multiplies the requests to a failing
// backend; a 30% reset rate cost 1,020 requests for 1,000 records), not a missing
// zone or credentials.
func rejected(err error) bool {
	return !errors.Is(err, provider.ErrConflict) && !isTransient(err) && !provider.Unreachable(err) &&
		!errors.Is(err, provider.ErrZoneNotFound) && !errors.Is(err, provider.ErrInvalidCredentials)
}

// overlay returns the view with room for a flush's changes on top; w.io must be held, so
// that nothing else changes the view until commit.
func (w *Writer) overlay() *overlay {
	w.mu.Lock()
	defer w.mu.Unlock()
	return &overlay{base: w.sets, changed: map[provider.RecordSetKey]entryOf{}}
}

// commit writes a flush's accepted changes, which the provider now holds, into the view; w.io
// must be held. A view dropped meanwhile (Reset) stays dropped: the next use re-reads.
func (w *Writer) commit(o *overlay) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sets == nil || len(o.changed) == 0 {
		return
	}
	for k, e := range o.changed {
		if e.ok {
			w.sets[k] = e.rs
		} else {
			delete(w.sets, k)
		}
	}
	w.snap = nil
	w.gen++
}

// call sends changes in one ApplyChanges, bounded by Options.CallTimeout; the caller holds one
// of the account's write slots (flushInTurn, Capabilities.MaxWritesInFlight).
func (w *Writer) call(ctx context.Context, changes []provider.Change) error {
	p, err := w.provider(ctx)
	if err != nil {
		return fmt.Errorf("apply %d changes to zone %s: %w", len(changes), w.zoneID, err)
	}
	if w.opts.Fence != nil {
		if err := w.opts.Fence(); err != nil {
			return fmt.Errorf("apply %d changes to zone %s: %w", len(changes), w.zoneID, err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, w.opts.CallTimeout)
	defer cancel()
	err = p.ApplyChanges(cctx, w.zoneID, changes)
	w.observe(err)
	if err != nil {
		return fmt.Errorf("apply %d changes to zone %s: %w", len(changes), w.zoneID, err)
	}
	return nil
}

// fresh reports whether the view is loaded and younger than Options.Resync.
func (w *Writer) fresh() bool {
	at := w.loadedAt.Load()
	return at != 0 && (w.opts.Resync <= 0 || w.opts.Clock.Now().Sub(time.Unix(0, at)) < w.opts.Resync)
}

// ensureLoaded reads the zone unless the view is fresh.
func (w *Writer) ensureLoaded(ctx context.Context) error {
	if w.fresh() {
		return nil
	}
	w.io.Lock()
	defer w.io.Unlock()
	if w.fresh() { // loaded while we waited
		return nil
	}
	return w.loadLocked(ctx)
}

// loadLocked reads the zone from the provider; w.io must be held.
func (w *Writer) loadLocked(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, w.opts.CallTimeout)
	defer cancel()
	p, err := w.provider(cctx)
	if err != nil {
		return fmt.Errorf("read zone %s: %w", w.zoneID, err)
	}
	sets, err := p.ListRecordSets(cctx, w.zoneID)
	w.observe(err)
	if err != nil {
		return fmt.Errorf("read zone %s: %w", w.zoneID, err)
	}
	view := viewOf(sets)
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.opts.Clock.Now()
	w.installLocked(view, now)
	if w.opts.LoadWait > 0 {
		w.hold = loadHold{expect: w.viewWaiters, last: now}
	}
	return nil
}

// Seed installs sets as the view, read from the provider at readAt (Options.Clock) together
// with the zone itself (provider.ZoneReader: the DNSZone controller adopts a zone with one read
// and hands its record sets here), when no view is loaded and no read or write is in flight; it
// reports whether it did. A loaded view, even a stale one, is kept: the writer re-reads it as
// usual. The writer keeps sets, not a copy: callers must not modify it afterwards. A view seeded
// so is exactly as old as it would be had the writer read it at readAt, and ages under
// Options.Resync from then.
func (w *Writer) Seed(sets []provider.RecordSet, readAt time.Time) bool {
	if sets == nil || w.loadedAt.Load() != 0 || !w.io.TryLock() {
		return false
	}
	defer w.io.Unlock()
	view := viewOf(sets)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.loadedAt.Load() != 0 {
		return false
	}
	w.notFound = false
	w.installLocked(view, readAt)
	if w.opts.LoadWait > 0 {
		// Nobody waits for a seeded view, so nobody is counted: the first flush waits until
		// LoadWait passes with no new submission, as the planners of a zone that just became
		// available arrive together (one write per zone in a first sync).
		w.hold = loadHold{expect: math.MaxInt, last: readAt}
	}
	return true
}

// viewOf indexes sets by key, as the writer's view holds them.
func viewOf(sets []provider.RecordSet) map[provider.RecordSetKey]provider.RecordSet {
	view := make(map[provider.RecordSetKey]provider.RecordSet, len(sets))
	for _, rs := range sets {
		view[rs.Key()] = rs
	}
	return view
}

// installLocked makes view, read from the provider at readAt, the writer's view (a new
// generation, no snapshot yet); w.mu must be held.
func (w *Writer) installLocked(view map[provider.RecordSetKey]provider.RecordSet, readAt time.Time) {
	w.sets, w.snap = view, nil
	w.gen++
	w.loadedAt.Store(readAt.UnixNano())
}

// provider returns the provider for the next call: resolved from the account's current
// credentials with Options.Resolve (and kept as the writer's provider), else the one last set.
func (w *Writer) provider(ctx context.Context) (provider.Provider, error) {
	if w.account != "" {
		rctx, cancel := context.WithTimeout(ctx, w.opts.CallTimeout)
		defer cancel()
		p, err := w.opts.Resolve(rctx, w.account)
		if err != nil {
			return nil, fmt.Errorf("resolve the provider of %s: %w", w.account, err)
		}
		w.SetProvider(p)
		return p, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.p, nil
}

func isTransient(err error) bool {
	return errors.Is(err, provider.ErrThrottled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled)
}

// setView is what ApplyTo reads and writes: a zone's record sets by key.
type setView interface {
	get(k provider.RecordSetKey) (provider.RecordSet, bool)
	put(k provider.RecordSetKey, rs provider.RecordSet)
	del(k provider.RecordSetKey)
}

type mapView map[provider.RecordSetKey]provider.RecordSet

func (m mapView) get(k provider.RecordSetKey) (provider.RecordSet, bool) {
	rs, ok := m[k]
	return rs, ok
}
func (m mapView) put(k provider.RecordSetKey, rs provider.RecordSet) { m[k] = rs }
func (m mapView) del(k provider.RecordSetKey)                        { delete(m, k) }

// entryOf is one key of an overlay: the set it now holds, or ok false for a deletion.
type entryOf struct {
	rs provider.RecordSet
	ok bool
}

// overlay is a view (base, never written) with a flush's changes on top (changed), so that a
// flush costs the size of its changes, not a copy of the zone. base may be nil.
type overlay struct {
	base    map[provider.RecordSetKey]provider.RecordSet
	changed map[provider.RecordSetKey]entryOf
}

func (o *overlay) get(k provider.RecordSetKey) (provider.RecordSet, bool) {
	if e, ok := o.changed[k]; ok {
		return e.rs, e.ok
	}
	rs, ok := o.base[k]
	return rs, ok
}
func (o *overlay) put(k provider.RecordSetKey, rs provider.RecordSet) {
	o.changed[k] = entryOf{rs, true}
}
func (o *overlay) del(k provider.RecordSetKey) { o.changed[k] = entryOf{} }

// tryApply applies changes to o as ApplyTo does, but leaves o as it was when a precondition
// fails; undo restores o as it was before, for a write the provider refused.
func tryApply(o *overlay, changes []provider.Change) (undo func(), err error) {
	type prior struct {
		e   entryOf
		had bool
	}
	saved := make(map[provider.RecordSetKey]prior, 2*len(changes))
	for _, c := range changes {
		for _, rs := range []*provider.RecordSet{c.Before, c.After} {
			if rs == nil {
				continue
			}
			k := rs.Key()
			if _, ok := saved[k]; !ok {
				e, had := o.changed[k]
				saved[k] = prior{e, had}
			}
		}
	}
	undo = func() {
		for k, p := range saved {
			if p.had {
				o.changed[k] = p.e
			} else {
				delete(o.changed, k)
			}
		}
	}
	if err := applyTo(o, changes); err != nil {
		undo()
		return nil, err
	}
	return undo, nil
}

// ApplyTo applies changes to view as a provider with conditional writes would, checking each
// precondition: a Create needs the key absent (or equal), an Update or Delete needs Before equal
// to the view. On a failed precondition it returns an error wrapping provider.ErrConflict (or
// provider.ErrInvalidChange for a malformed change) and leaves view partly changed, so callers
// apply to a copy (the writer's own flushes apply to an overlay and undo what they touched).
func ApplyTo(view map[provider.RecordSetKey]provider.RecordSet, changes []provider.Change) error {
	return applyTo(mapView(view), changes)
}

func applyTo(view setView, changes []provider.Change) error {
	for _, c := range changes {
		switch c.Action {
		case provider.ActionCreate:
			if c.After == nil {
				return fmt.Errorf("create without a record set: %w", provider.ErrInvalidChange)
			}
			if cur, ok := view.get(c.After.Key()); ok && !cur.Equal(*c.After) {
				return fmt.Errorf("create %s: it already exists: %w", c.After.Key(), provider.ErrConflict)
			}
			view.put(c.After.Key(), *c.After)
		case provider.ActionUpdate, provider.ActionDelete:
			if c.Before == nil {
				return fmt.Errorf("%s without the current record set: %w", c.Action, provider.ErrInvalidChange)
			}
			cur, ok := view.get(c.Before.Key())
			if !ok || !cur.Equal(*c.Before) {
				return fmt.Errorf("%s %s: it changed since it was read: %w", c.Action, c.Before.Key(), provider.ErrConflict)
			}
			view.del(c.Before.Key())
			if c.Action == provider.ActionUpdate {
				if c.After == nil {
					return fmt.Errorf("update without a new record set: %w", provider.ErrInvalidChange)
				}
				view.put(c.After.Key(), *c.After)
			}
		default:
			return fmt.Errorf("unknown action %q: %w", c.Action, provider.ErrInvalidChange)
		}
	}
	return nil
}

// Reload re-reads the zone from the provider now, replacing the view, and returns its record
// sets. The nameserver scraper uses it, so one listing per scrape also refreshes the view.
func (w *Writer) Reload(ctx context.Context) ([]provider.RecordSet, error) {
	w.io.Lock()
	err := w.loadLocked(ctx)
	w.io.Unlock()
	if err != nil {
		return nil, err
	}
	return w.RecordSets(ctx)
}
