package zonewriter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/zoneview"
)

// Options tunes a Writer. Zero values take the defaults below.
type Options struct {
	// Window is the quiet period that ends a batch, a time.Duration; default 200ms. A Writer
	// keeps collecting while submissions keep arriving less than Window apart, up to MaxWait
	// after the first, so a burst (a start-up, a mass change) lands as one call.
	Window time.Duration
	// MaxWait caps how long the first submission of a batch waits, a time.Duration; default
	// 2s.
	MaxWait time.Duration
	// MaxPending flushes a batch early once it holds this many changes; default 5,000.
	MaxPending int
	// Resync re-reads the zone when the view is older than this, a time.Duration; 0 never
	// re-reads on age (the --zone-resync-interval flag).
	Resync time.Duration
	// CallTimeout bounds each provider call, a time.Duration; default 2m.
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
	// Clock is injected for tests; default the real clock.
	Clock clock.PassiveClock
	// Log receives one line per applied batch.
	Log logr.Logger
}

func (o Options) withDefaults() Options {
	if o.Window <= 0 {
		o.Window = 200 * time.Millisecond
	}
	if o.MaxWait < o.Window {
		o.MaxWait = 10 * o.Window
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 5000
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 2 * time.Minute
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return o
}

// Writer applies record changes to one hosted zone. It is safe for concurrent use.
type Writer struct {
	zoneID  string
	account string // Key.Account for Options.Resolve; "" = never resolved
	opts    Options
	subs    chan *submission

	// io serialises provider I/O: the loop's writes and the reads that load the view. Readers
	// of a fresh view never wait for it, so planning goes on while a batch is in flight.
	io sync.Mutex
	// mu guards the fields below; it is never held across provider I/O.
	mu       sync.Mutex
	p        provider.Provider
	sets     map[provider.RecordSetKey]provider.RecordSet
	loadedAt time.Time          // zero: not loaded
	snap     *zoneview.Snapshot // indexes sets; nil when sets changed since it was built
	// notFound: the last provider read or write answered provider.ErrZoneNotFound.
	notFound bool
	// onNotFound, when set, is called (without locks held) each time notFound becomes true.
	onNotFound func()
}

type submission struct {
	changes []provider.Change
	done    chan error
}

// New returns a Writer for the hosted zone zoneID at p. Its batching loop runs until ctx ends;
// afterwards Apply returns ctx's error.
func New(ctx context.Context, p provider.Provider, zoneID string, opts Options) *Writer {
	return start(ctx, p, Key{ZoneID: zoneID}, opts, nil)
}

// start returns a running Writer for k; with Options.Resolve and k.Account set it resolves its
// provider before each call. onNotFound, when set, is called each time the writer finds its
// hosted zone gone.
func start(ctx context.Context, p provider.Provider, k Key, opts Options, onNotFound func()) *Writer {
	w := &Writer{zoneID: k.ZoneID, opts: opts.withDefaults(), p: p, subs: make(chan *submission), onNotFound: onNotFound}
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
	w.loadedAt, w.sets, w.snap, w.notFound = time.Time{}, nil, nil, false
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
		w.loadedAt = time.Time{} // the view is of a zone that is gone
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
	w.mu.Lock()
	defer w.mu.Unlock()
	w.loadedAt = time.Time{}
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
	if err := w.ensureLoaded(ctx); err != nil {
		return nil, nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if zone != "" && w.snap != nil {
		return nil, w.snap, nil
	}
	out := make([]provider.RecordSet, 0, len(w.sets))
	for _, rs := range w.sets {
		out = append(out, rs)
	}
	if zone == "" {
		return out, nil, nil
	}
	w.snap = zoneview.New(zone, out)
	return nil, w.snap, nil
}

// Snapshot returns the zone's record sets indexed for planning (zoneview.New, which plan.NewSnapshot is), built once per
// view and shared by every reconciler that plans against it; zone is the zone's name. It reads
// the provider as RecordSets does.
func (w *Writer) Snapshot(ctx context.Context, zone string) (*zoneview.Snapshot, error) {
	_, snap, err := w.view(ctx, zone)
	return snap, err
}

// Apply submits changes and waits until they are applied, together with whatever else was
// submitted within the window. It returns nil once the provider accepted them, an error
// wrapping provider.ErrConflict when a Change.Before no longer matches the zone (re-plan and try
// again), ctx's error when ctx ends first, or the provider's error. An empty list returns nil at
// once.
func (w *Writer) Apply(ctx context.Context, changes []provider.Change) error {
	if len(changes) == 0 {
		return nil
	}
	s := &submission{changes: changes, done: make(chan error, 1)}
	select {
	case w.subs <- s:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-s.done:
		return err
	case <-ctx.Done():
		// The batch may still be applied; the caller's next plan sees it.
		return ctx.Err()
	}
}

// loop collects submissions until Window passes without one, MaxWait passes since the first, or
// MaxPending changes are pending; then it flushes them.
func (w *Writer) loop(ctx context.Context) {
	for {
		var batch []*submission
		select {
		case <-ctx.Done():
			return
		case s := <-w.subs:
			batch = append(batch, s)
		}
		n := len(batch[0].changes)
		timer := time.NewTimer(w.opts.Window)
		deadline := time.NewTimer(w.opts.MaxWait)
	collect:
		for n < w.opts.MaxPending {
			select {
			case s := <-w.subs:
				batch = append(batch, s)
				n += len(s.changes)
				timer.Reset(w.opts.Window)
			case <-timer.C:
				break collect
			case <-deadline.C:
				break collect
			case <-ctx.Done():
				timer.Stop()
				deadline.Stop()
				for _, s := range batch {
					s.done <- ctx.Err()
				}
				return
			}
		}
		timer.Stop()
		deadline.Stop()
		w.flush(ctx, batch)
	}
}

// flush checks each submission against the view, applies the valid ones in one provider call,
// and answers every submitter.
func (w *Writer) flush(ctx context.Context, batch []*submission) {
	if err := w.ensureLoaded(ctx); err != nil {
		for _, s := range batch {
			s.done <- err
		}
		return
	}
	w.io.Lock()
	defer w.io.Unlock()
	w.mu.Lock()
	work := cloneSets(w.sets)
	w.mu.Unlock()
	var ok []*submission
	var all []provider.Change
	for _, s := range batch {
		if err := ApplyTo(work, s.changes); err != nil {
			s.done <- err
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
		for _, s := range ok {
			s.done <- nil
		}
	case len(ok) > 1 && !errors.Is(err, provider.ErrConflict) && !isTransient(err):
		// One submission may carry a change the provider rejects: re-read, then apply them one
		// by one so that only the bad one fails.
		for _, s := range ok {
			if lerr := w.loadLocked(ctx); lerr != nil {
				s.done <- lerr
				continue
			}
			w.mu.Lock()
			one := cloneSets(w.sets)
			w.mu.Unlock()
			if aerr := ApplyTo(one, s.changes); aerr != nil {
				s.done <- aerr
				continue
			}
			if cerr := w.call(ctx, s.changes); cerr != nil {
				s.done <- cerr
				continue
			}
			w.commit(one)
			s.done <- nil
		}
		w.Invalidate()
	default:
		// Part of a split batch may have landed, or another writer changed the zone: re-read.
		w.Invalidate()
		for _, s := range ok {
			s.done <- err
		}
	}
}

// commit installs a view that the provider now holds.
func (w *Writer) commit(sets map[provider.RecordSetKey]provider.RecordSet) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sets, w.snap = sets, nil
}

func (w *Writer) call(ctx context.Context, changes []provider.Change) error {
	cctx, cancel := context.WithTimeout(ctx, w.opts.CallTimeout)
	defer cancel()
	p, err := w.provider(cctx)
	if err != nil {
		return fmt.Errorf("apply %d changes to zone %s: %w", len(changes), w.zoneID, err)
	}
	err = p.ApplyChanges(cctx, w.zoneID, changes)
	w.observe(err)
	if err != nil {
		return fmt.Errorf("apply %d changes to zone %s: %w", len(changes), w.zoneID, err)
	}
	return nil
}

// fresh reports whether the view is loaded and younger than Options.Resync.
func (w *Writer) fresh() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.loadedAt.IsZero() && (w.opts.Resync <= 0 || w.opts.Clock.Now().Sub(w.loadedAt) < w.opts.Resync)
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
	view := make(map[provider.RecordSetKey]provider.RecordSet, len(sets))
	for _, rs := range sets {
		view[rs.Key()] = rs
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sets, w.snap, w.loadedAt = view, nil, w.opts.Clock.Now()
	return nil
}

// provider returns the provider for the next call: resolved from the account's current
// credentials with Options.Resolve (and kept as the writer's provider), else the one last set.
func (w *Writer) provider(ctx context.Context) (provider.Provider, error) {
	if w.account != "" {
		p, err := w.opts.Resolve(ctx, w.account)
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

func cloneSets(in map[provider.RecordSetKey]provider.RecordSet) map[provider.RecordSetKey]provider.RecordSet {
	out := make(map[provider.RecordSetKey]provider.RecordSet, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// ApplyTo applies changes to view as a provider with conditional writes would, checking each
// precondition: a Create needs the key absent (or equal), an Update or Delete needs Before equal
// to the view. On a failed precondition it returns an error wrapping provider.ErrConflict (or
// provider.ErrInvalidChange for a malformed change) and leaves view partly changed, so callers
// apply to a copy.
func ApplyTo(view map[provider.RecordSetKey]provider.RecordSet, changes []provider.Change) error {
	for _, c := range changes {
		switch c.Action {
		case provider.ActionCreate:
			if c.After == nil {
				return fmt.Errorf("create without a record set: %w", provider.ErrInvalidChange)
			}
			if cur, ok := view[c.After.Key()]; ok && !cur.Equal(*c.After) {
				return fmt.Errorf("create %s: it already exists: %w", c.After.Key(), provider.ErrConflict)
			}
			view[c.After.Key()] = *c.After
		case provider.ActionUpdate, provider.ActionDelete:
			if c.Before == nil {
				return fmt.Errorf("%s without the current record set: %w", c.Action, provider.ErrInvalidChange)
			}
			cur, ok := view[c.Before.Key()]
			if !ok || !cur.Equal(*c.Before) {
				return fmt.Errorf("%s %s: it changed since it was read: %w", c.Action, c.Before.Key(), provider.ErrConflict)
			}
			delete(view, c.Before.Key())
			if c.Action == provider.ActionUpdate {
				if c.After == nil {
					return fmt.Errorf("update without a new record set: %w", provider.ErrInvalidChange)
				}
				view[c.After.Key()] = *c.After
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
