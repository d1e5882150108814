package warmup

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Defaults for New.
const (
	// DefaultStall ends the first pass when no expected object was planned for this long: an
	// object that never plans (its zone is never judged, a predicate filters it) must not hold
	// the writers. Long enough for a 50,000-endpoint first sync, whose planners wait while
	// full zone queues (zonewriter.Options.MaxPending) take turns at PowerDNS's one write slot
	// (about 3 s for 10 zones).
	DefaultStall = 5 * time.Second
	// DefaultMax ends the first pass this long after New whatever its progress.
	DefaultMax = 60 * time.Second
)

// Tracker is one controller's first pass: the objects its cache held when it synced
// (Expect), less those planned since (Planned). Warming reports whether the pass is still
// going; once it reports false it never reports true again. Safe for concurrent use; the
// zero value is not usable (New).
type Tracker struct {
	clock      clock.PassiveClock
	stall, max time.Duration
	started    time.Time

	done atomic.Bool

	mu sync.Mutex
	// expected is nil until Expect, then the expected objects not planned yet.
	expected map[types.NamespacedName]struct{}
	// early holds the objects planned before Expect (a reconcile may beat the listing).
	early    map[types.NamespacedName]struct{}
	progress time.Time // Expect, or the last Planned of an expected object

	ended     chan struct{} // closed by finish
	endReason string
	unplanned int // expected objects not planned when the pass ended
}

// Reasons the first pass ended (Ended).
const (
	EndPlanned = "every object planned"
	EndStalled = "stalled"
	EndMax     = "time limit"
)

// New returns a Tracker whose pass began now. stall and max (time.Duration) default to
// DefaultStall and DefaultMax when not positive; c defaults to the real clock.
func New(c clock.PassiveClock, stall, max time.Duration) *Tracker {
	if c == nil {
		c = clock.RealClock{}
	}
	if stall <= 0 {
		stall = DefaultStall
	}
	if max <= 0 {
		max = DefaultMax
	}
	return &Tracker{clock: c, stall: stall, max: max, started: c.Now(), early: map[types.NamespacedName]struct{}{}, ended: make(chan struct{})}
}

// Expect records the objects the controller's cache held when it synced. Only the first call
// counts. Objects already planned are not expected.
func (t *Tracker) Expect(keys []types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.expected != nil || t.done.Load() {
		return
	}
	t.expected = make(map[types.NamespacedName]struct{}, len(keys))
	for _, k := range keys {
		if _, ok := t.early[k]; !ok {
			t.expected[k] = struct{}{}
		}
	}
	t.early = nil
	t.progress = t.clock.Now()
	if len(t.expected) == 0 {
		t.finish(EndPlanned)
	}
}

// Planned records that key was planned (its changes submitted, or none needed). A nil Tracker
// ignores it.
func (t *Tracker) Planned(key types.NamespacedName) {
	if t == nil || t.done.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.expected == nil {
		if t.early != nil {
			t.early[key] = struct{}{}
		}
		return
	}
	if _, ok := t.expected[key]; !ok {
		return
	}
	delete(t.expected, key)
	t.progress = t.clock.Now()
	if len(t.expected) == 0 {
		t.finish(EndPlanned)
	}
}

// Warming reports whether the first pass is still going: before Expect, until DefaultMax (the
// cache is still listing, and nothing plans before it synced); after it, while an expected
// object is not planned, no object went unplanned for the stall time, and max has not passed.
func (t *Tracker) Warming() bool {
	if t == nil || t.done.Load() {
		return false
	}
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.done.Load(): // ended while this call waited for t.mu
		return false
	case now.Sub(t.started) >= t.max:
		t.finish(EndMax)
	case t.expected == nil:
		return true
	case now.Sub(t.progress) < t.stall:
		return true
	default:
		t.finish(EndStalled)
	}
	return false
}

// Done is closed when the first pass ends (Warming's first false).
func (t *Tracker) Done() <-chan struct{} { return t.ended }

// Ended returns, once Done is closed, why the pass ended (EndPlanned, EndStalled, EndMax) and
// how many of the expected objects were not planned by then.
func (t *Tracker) Ended() (reason string, unplanned int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.endReason, t.unplanned
}

// Remaining returns how many expected objects are not planned yet (0 once the pass ended, or
// before Expect).
func (t *Tracker) Remaining() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.expected)
}

// finish ends the pass for good, for reason; t.mu must be held.
func (t *Tracker) finish(reason string) {
	if t.done.Load() {
		return
	}
	t.endReason, t.unplanned = reason, len(t.expected)
	t.done.Store(true)
	t.expected, t.early = nil, nil
	close(t.ended)
}
