package probe

import (
	"cmp"
	"container/heap"
	"context"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

// DefaultInterval is the time between two probes of one target when Check.Interval is not
// set (the API's intervalSeconds default).
const DefaultInterval = 10 * time.Second

// changesBuffer is the capacity of the Changes channel; when it is full, further changes are
// kept (one per Gslb) and sent as it drains, so no change is lost and none blocks probing.
const changesBuffer = 64

// HostKey names the targets of one host of one Gslb.
type HostKey struct {
	// Gslb is the Gslb's namespace and name.
	Gslb types.NamespacedName
	// Host is the Gslb host (spec.hosts[]), canonical: lower-case, no trailing dot.
	Host string
}

// Key names one probed target: one address of one host of one Gslb.
type Key struct {
	HostKey
	// Target is the address probed (one family).
	Target netip.Addr
}

// Target is one address to probe and the cluster it belongs to.
type Target struct {
	// Addr is the target's address.
	Addr netip.Addr
	// GeoTag is the geo tag of the cluster whose target it is (this cluster's or a peer's);
	// it labels the metrics only.
	GeoTag string
}

// Check is how to probe the targets of one host: healthCheck with its defaults applied.
type Check struct {
	// Spec is the probe (Protocol, Port, Path, Host, Expected, Timeout = timeoutSeconds). The
	// caller sets Host to the Gslb host when healthCheck.host is empty.
	Spec Spec
	// Interval is intervalSeconds: each target's next probe is due Interval plus a random 0 to
	// 10% after its last one ended (its first one, 0 to 10% of Interval after Set). <= 0 is
	// DefaultInterval.
	Interval time.Duration
	// Thresholds are failureThreshold and successThreshold.
	Thresholds health.Thresholds
}

// TargetState is one target's probe state from this vantage point.
type TargetState struct {
	Key
	// GeoTag is the target's cluster, as last Set.
	GeoTag string
	// State is the verdict, the current run, the last error (in words, "" after a pass) and
	// the last probe time (zero before the first one ends).
	State health.ProbeState
}

// Scheduler probes the targets the Gslb controller declares (Set), each every Interval plus
// jitter, through a pool of at most Workers probes in flight, keeps each target's
// health.ProbeState, and names on Changes the Gslb of every target whose verdict changed.
//
// It runs one goroutine, and one per probe in flight, only while some target is declared:
// with nothing declared it has no goroutine, no timer and no connection. Create it with
// NewScheduler; it is safe for concurrent use. Stop (or Start's context ending) ends it.
type Scheduler struct {
	opts SchedulerOptions

	ctx     context.Context
	cancel  context.CancelFunc
	changes chan event.TypedGenericEvent[types.NamespacedName]
	wake    chan struct{}
	results chan done
	wg      sync.WaitGroup

	mu       sync.Mutex
	targets  map[Key]*target
	queue    queue // the declared targets not in flight, by due time
	pending  map[types.NamespacedName]bool
	inflight int
	running  bool
	stopped  bool
}

// SchedulerOptions configure a Scheduler. The zero value works.
type SchedulerOptions struct {
	// Prober sends the probes (its Workers and Jitter are not used); nil is &Prober{Clock:
	// Clock}.
	Prober *Prober
	// Workers bounds the probes in flight; <= 0 is DefaultWorkers.
	Workers int
	// Clock schedules the probes and stamps their outcomes (k8s.io/utils/clock; a fake one in
	// tests); nil is the real clock. The probe timeouts are real time.
	Clock clock.Clock
	// GeoTag is this cluster's geo tag: the vantage label of the metrics.
	GeoTag string
	// Metrics records each probe and verdict change; nil records nothing.
	Metrics *Metrics
	// Observed, when set, is called after each probe result is applied, with the target's new
	// state, in the scheduler's goroutine: it must not block or call the Scheduler (tests).
	Observed func(TargetState)
}

// target is one declared target.
type target struct {
	key      Key
	geoTag   string
	check    Check
	state    health.ProbeState
	due      time.Time
	inflight bool
	index    int // in queue; -1 when not there (in flight, or forgotten)
}

// done is one probe's result, for the target entry it was sent for.
type done struct {
	t   *target
	res Result
}

// NewScheduler returns a Scheduler with nothing declared.
func NewScheduler(opts SchedulerOptions) *Scheduler {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Prober == nil {
		opts.Prober = &Prober{Clock: opts.Clock}
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Scheduler{
		opts:    opts,
		ctx:     ctx,
		cancel:  cancel,
		changes: make(chan event.TypedGenericEvent[types.NamespacedName], changesBuffer),
		wake:    make(chan struct{}, 1),
		results: make(chan done),
		targets: map[Key]*target{},
		pending: map[types.NamespacedName]bool{},
	}
}

// Changes names the Gslb of each target whose verdict changed (Unknown to Up or Down, Up to
// Down, Down to Up), for a controller-runtime source.Channel. Several changes of one Gslb not
// yet read are sent once. The channel is never closed.
func (s *Scheduler) Changes() <-chan event.TypedGenericEvent[types.NamespacedName] {
	return s.changes
}

// Set declares the targets of one Gslb host and how to probe them, replacing what was declared
// for it: a target no longer listed is forgotten (a probe in flight for it is ignored), a new
// one is first probed within 10% of Interval, and one listed again keeps its state unless
// c.Spec changed (then it starts over, Unknown). Invalid and repeated addresses are skipped.
// An empty targets forgets the host and deletes its metrics. Set after Stop does nothing.
func (s *Scheduler) Set(k HostKey, targets []Target, c Check) {
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	now := s.opts.Clock.Now()
	keep := make(map[Key]bool, len(targets))
	for _, t := range targets {
		if !t.Addr.IsValid() {
			continue
		}
		key := Key{HostKey: k, Target: t.Addr}
		if keep[key] {
			continue
		}
		keep[key] = true
		old := s.targets[key]
		if old != nil && sameSpec(old.check.Spec, c.Spec) {
			old.geoTag = t.GeoTag
			if old.check.Interval != c.Interval && old.index >= 0 {
				old.due = s.next(old.state.LastProbe, now, c.Interval)
				heap.Fix(&s.queue, old.index)
			}
			old.check = c
			continue
		}
		// New, or probed another way: a new entry (a result in flight for the old one is
		// ignored).
		s.remove(old)
		nt := &target{key: key, geoTag: t.GeoTag, check: c, due: now.Add(jitter(c.Interval))}
		s.targets[key] = nt
		heap.Push(&s.queue, nt)
	}
	for key, t := range s.targets {
		if key.HostKey == k && !keep[key] {
			s.remove(t)
		}
	}
	if len(keep) == 0 {
		s.opts.Metrics.ForgetHost(k.Gslb, k.Host)
	}
	s.kick()
}

// Forget forgets every target of a Gslb (deleted, or without healthCheck), drops its pending
// change and deletes its metrics.
func (s *Scheduler) Forget(gslb types.NamespacedName) {
	s.mu.Lock()
	for key, t := range s.targets {
		if key.Gslb == gslb {
			s.remove(t)
		}
	}
	delete(s.pending, gslb)
	s.opts.Metrics.ForgetGslb(gslb)
	s.kick()
	s.mu.Unlock()
}

// States returns the state of every declared target of a Gslb, sorted by host, then address.
func (s *Scheduler) States(gslb types.NamespacedName) []TargetState {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []TargetState
	for key, t := range s.targets {
		if key.Gslb == gslb {
			out = append(out, TargetState{Key: key, GeoTag: t.geoTag, State: t.state})
		}
	}
	slices.SortFunc(out, func(a, b TargetState) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), a.Target.Compare(b.Target))
	})
	return out
}

// Verdicts returns this vantage point's verdict on every declared target of one host that has
// one (Up or Down): health.Input.Own.
func (s *Scheduler) Verdicts(k HostKey) map[netip.Addr]health.Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[netip.Addr]health.Verdict{}
	for key, t := range s.targets {
		if key.HostKey == k && t.state.Verdict != health.Unknown {
			out[key.Target] = t.state.Verdict
		}
	}
	return out
}

// Start runs until ctx ends, then Stops: a manager.Runnable (the probing itself starts with
// the first Set, not here).
func (s *Scheduler) Start(ctx context.Context) error {
	<-ctx.Done()
	s.Stop()
	return nil
}

// Stop cancels the probes in flight, forgets every target and returns when no goroutine of
// the Scheduler is left. Later Sets do nothing.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	s.stopped = true
	clear(s.targets)
	for _, t := range s.queue {
		t.index = -1
	}
	s.queue = nil
	clear(s.pending)
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// remove forgets t (nil: nothing). s.mu is held.
func (s *Scheduler) remove(t *target) {
	if t == nil {
		return
	}
	delete(s.targets, t.key)
	if t.index >= 0 {
		heap.Remove(&s.queue, t.index)
	}
}

// kick wakes the loop, starting it when it is not running. s.mu is held.
func (s *Scheduler) kick() {
	if !s.running {
		if len(s.targets) == 0 || s.stopped {
			return
		}
		s.running = true
		s.wg.Add(1)
		go s.loop()
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// next is when a target last probed at last (zero: never) is due again.
func (s *Scheduler) next(last, now time.Time, interval time.Duration) time.Time {
	if last.IsZero() {
		return now.Add(jitter(interval))
	}
	return last.Add(interval + jitter(interval))
}

// jitter is a random duration in [0, interval/10).
func jitter(interval time.Duration) time.Duration {
	if j := interval / 10; j > 0 {
		return rand.N(j)
	}
	return 0
}

// loop sends the due probes, applies their results and sends the changes, until nothing is
// declared or in flight, or the Scheduler stops.
func (s *Scheduler) loop() {
	defer s.wg.Done()
	for {
		timer, send, first, ok := s.dispatch()
		if !ok {
			return
		}
		var timerC <-chan time.Time
		if timer != nil {
			timerC = timer.C()
		}
		select {
		case <-timerC:
		case <-s.wake:
		case d := <-s.results:
			s.apply(d)
		case send <- event.TypedGenericEvent[types.NamespacedName]{Object: first}:
			s.mu.Lock()
			delete(s.pending, first)
			s.mu.Unlock()
		case <-s.ctx.Done():
			s.mu.Lock()
			n := s.inflight
			s.mu.Unlock()
			for range n {
				<-s.results
			}
			s.mu.Lock()
			s.inflight, s.running = 0, false
			s.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// dispatch starts the due probes the pool has room for and returns a timer for the next due
// one (nil when none is waiting), the changes channel and a Gslb to send on it (a nil channel
// when none is pending); ok false means the loop ends (nothing declared and nothing in
// flight), with running cleared.
func (s *Scheduler) dispatch() (timer clock.Timer, send chan event.TypedGenericEvent[types.NamespacedName], first types.NamespacedName, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() == nil && len(s.targets) == 0 && s.inflight == 0 {
		clear(s.pending)
		s.running = false
		return nil, nil, first, false
	}
	now := s.opts.Clock.Now()
	for s.inflight < s.opts.Workers && len(s.queue) > 0 && !s.queue[0].due.After(now) {
		t := heap.Pop(&s.queue).(*target)
		t.inflight = true
		s.inflight++
		job := Job{Addr: t.key.Target, Spec: t.check.Spec}
		go func() {
			s.results <- done{t: t, res: s.opts.Prober.Probe(s.ctx, job)}
		}()
	}
	// With the pool full, a result wakes the loop; otherwise the next due target does.
	if s.inflight < s.opts.Workers && len(s.queue) > 0 {
		timer = s.opts.Clock.NewTimer(s.queue[0].due.Sub(now))
	}
	for g := range s.pending {
		return timer, s.changes, g, true
	}
	return timer, nil, first, true
}

// apply applies one probe result to its target, if it is still declared.
func (s *Scheduler) apply(d done) {
	s.mu.Lock()
	s.inflight--
	t := d.t
	t.inflight = false
	if s.targets[t.key] != t || s.ctx.Err() != nil {
		s.mu.Unlock()
		return // forgotten, or replaced, while in flight
	}
	now := s.opts.Clock.Now()
	before := t.state.Verdict
	t.state = t.state.Observe(health.Outcome{OK: d.res.OK, Err: d.res.Err, At: now, Abstain: d.res.Abstain}, t.check.Thresholds)
	t.due = s.next(now, now, t.check.Interval)
	heap.Push(&s.queue, t)
	changed := t.state.Verdict != before
	if changed {
		s.pending[t.key.Gslb] = true
	}
	st := TargetState{Key: t.key, GeoTag: t.geoTag, State: t.state}
	// Recorded under s.mu, so that a Forget's deletion of the series comes after.
	s.opts.Metrics.probed(t, s.opts.GeoTag, d.res)
	if changed {
		s.opts.Metrics.verdictChanged(t, s.opts.GeoTag, st.State.Verdict)
	}
	s.mu.Unlock()
	if s.opts.Observed != nil {
		s.opts.Observed(st)
	}
}

// sameSpec reports whether a and b probe the same way.
func sameSpec(a, b Spec) bool {
	return a.Protocol == b.Protocol && a.Port == b.Port && a.Path == b.Path && a.Host == b.Host &&
		a.Timeout == b.Timeout && a.InsecureSkipVerify == b.InsecureSkipVerify && slices.Equal(a.Expected, b.Expected)
}

// queue is a min-heap of targets by due time (container/heap).
type queue []*target

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q queue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}

func (q *queue) Push(x any) {
	t := x.(*target)
	t.index = len(*q)
	*q = append(*q, t)
}

func (q *queue) Pop() any {
	old := *q
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*q = old[:len(old)-1]
	return t
}
