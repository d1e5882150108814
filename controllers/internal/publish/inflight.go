package publish

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// Inflight holds the objects whose changes Run submitted to their zone writers and whose next
// Run has not yet taken the answers (Options.Async). A reconcile submits and returns, holding no
// goroutine while the writers batch and write; the last zone's answer enqueues the object (Source),
// and its next Run writes the status the answers call for. So a controller needs a few dozen
// workers, not one per object waiting in a writer's queue (docs/design.md, "Publishing"). It is
// safe for concurrent use; the zero value is not usable: use NewInflight.
type Inflight struct {
	clock func() time.Time
	// answers carries the zone writers' answers (zonewriter.Writer.SubmitTo) to drain, which
	// runs while some are owed (owed > 0): the writers run none of the table's code.
	answers chan zonewriter.Answer

	mu sync.Mutex
	m  map[types.NamespacedName]*Submission
	// tickets maps an answer's ID to the submission and zone it answers; next is the next ID.
	tickets  map[uint64]ticket
	next     uint64
	owed     int
	draining bool
	q        workqueue.TypedRateLimitingInterface[reconcile.Request] // set when Source starts
	// early are keys answered before Source started (none in a running manager); Source
	// enqueues them when it starts.
	early []types.NamespacedName
}

// Submission is one object's submission: what its zone writers answered, by zone (the DNSZone's
// "namespace/name", as status.zones spells it). One is held per object in flight, so it is kept
// small: slices in plan order rather than maps, which at 50,000 endpoints were 10 MB of the
// heap's peak.
type Submission struct {
	// Generation is the object's generation when it was planned.
	Generation int64
	left       int // zones not answered yet
	// order is the zones in plan (zone-key) order; wrote[i] is when zone i's writer answered
	// that the provider holds its changes (zero: not written), failed[i] its error.
	order  []string
	wrote  []time.Time
	failed []error
	// at is when the submission was made: before any of its writes.
	at time.Time
	// gone: the object was found deleted (Inflight.Gone) while it may hold records in order's
	// zones; policy is its last spec.policy, which its release keeps to ("" when unknown).
	gone   bool
	policy dnsv1.Policy
}

// Wrote returns when each written zone's writer answered, by zone.
func (s *Submission) Wrote() map[string]time.Time {
	out := make(map[string]time.Time, len(s.order))
	for i, z := range s.order {
		if !s.wrote[i].IsZero() {
			out[z] = s.wrote[i]
		}
	}
	return out
}

// writes returns, by written zone, when the submission was made and when the zone's writer
// answered.
func (s *Submission) writes() map[string]zoneWrite {
	out := map[string]zoneWrite{}
	for z, at := range s.Wrote() {
		out[z] = zoneWrite{submitted: s.at, at: at}
	}
	return out
}

// Err is the error of the first failed zone in plan (zone-key) order, naming the zone, or nil
// when every zone was written.
func (s *Submission) Err() error {
	for i, z := range s.order {
		if err := s.failed[i]; err != nil {
			return fmt.Errorf("DNSZone %s: %w", z, err)
		}
	}
	return nil
}

// Zones are the zones the submission wrote to or tried to, and those Inflight.Gone named,
// sorted: the ones an object that is gone may hold records in.
func (s *Submission) Zones() []string {
	return slices.Sorted(slices.Values(s.order))
}

// NewInflight returns an empty table.
func NewInflight() *Inflight {
	return &Inflight{clock: time.Now, m: map[types.NamespacedName]*Submission{}, tickets: map[uint64]ticket{},
		answers: make(chan zonewriter.Answer, answersBuffer)}
}

// Source returns the controller-runtime Source through which the table enqueues an object once
// its zone writers have all answered. Register it on the controller whose Run uses the table.
func (t *Inflight) Source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		t.mu.Lock()
		t.q = q
		early := t.early
		t.early = nil
		t.mu.Unlock()
		for _, k := range early {
			q.Add(reconcile.Request{NamespacedName: k})
		}
		return nil
	})
}

// inflightState is what the table knows of an object.
type inflightState int

const (
	inflightNone    inflightState = iota // nothing submitted, or its answers were taken
	inflightPending                      // some zone writer has not answered yet
	inflightDone                         // every zone answered; taken (removed) by take
)

// take returns the object's submission once every zone answered, and removes it; pending
// while a writer has not answered (the object is enqueued when it does).
func (t *Inflight) take(key types.NamespacedName) (*Submission, inflightState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.m[key]
	switch {
	case !ok:
		return nil, inflightNone
	case s.left > 0:
		return nil, inflightPending
	}
	delete(t.m, key)
	return s, inflightDone
}

// answeredZones are the zones of the object's submission once every zone answered and before
// its next Run takes it: zones the object may hold records in that status.zones does not name
// yet (that Run may submit a later change instead of recording this one).
func (t *Inflight) answeredZones(key types.NamespacedName) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.m[key]; ok && s.left == 0 {
		return s.Zones()
	}
	return nil
}

// restore puts back a submission taken by take whose follow-up failed (a release to retry).
func (t *Inflight) restore(key types.NamespacedName, s *Submission) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.m[key]; !ok {
		t.m[key] = s
	}
}

// Pending reports whether some zone writer has not yet answered the object's submission.
func (t *Inflight) Pending(key types.NamespacedName) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.m[key]
	return ok && s.left > 0
}

// Len is how many objects the table holds, answered or not.
func (t *Inflight) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// Gone records that the object at key was deleted while it may hold records in zones (the
// DNSZones' "namespace/name": its last status.zones, or the zones whose registry names it), with
// its last spec.policy when known (a delete event's; "" for the sweep's: the manager's), and
// enqueues it once no submission of it is pending: the reconcile that finds it gone releases
// them (Planner.ReleaseGone), and one that finds it created again plans them too (Run). The
// zones join a submission the table holds. DNSEndpoints carry no finalizer: their delete events
// and the start's sweep call this.
func (t *Inflight) Gone(key types.NamespacedName, zones []string, policy dnsv1.Policy) {
	if len(zones) == 0 {
		return
	}
	t.mu.Lock()
	s, ok := t.m[key]
	if !ok {
		s = &Submission{}
		t.m[key] = s
	}
	s.gone = true
	if policy != "" {
		s.policy = policy
	}
	for _, z := range zones {
		if !slices.Contains(s.order, z) {
			s.order = append(s.order, z)
			s.wrote = append(s.wrote, time.Time{})
			s.failed = append(s.failed, nil)
		}
	}
	ready, q := s.left == 0, t.q
	if ready && q == nil {
		t.early = append(t.early, key)
	}
	t.mu.Unlock()
	if ready && q != nil {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}

// Enqueue enqueues the objects at keys through Source: at once when it started, else when it
// starts. A controller enqueues with it what an event of its own reconcile concerns (the objects
// waiting on the names a release freed).
func (t *Inflight) Enqueue(keys ...types.NamespacedName) {
	if len(keys) == 0 {
		return
	}
	t.mu.Lock()
	q := t.q
	if q == nil {
		t.early = append(t.early, keys...)
	}
	t.mu.Unlock()
	if q == nil {
		return
	}
	for _, k := range keys {
		q.Add(reconcile.Request{NamespacedName: k})
	}
}

// GonePolicy returns the spec.policy Gone recorded for the object at key, "" when none: its
// release plans under it (an UpsertOnly object's records stay).
func (t *Inflight) GonePolicy(key types.NamespacedName) dnsv1.Policy {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.m[key]; ok && s.gone {
		return s.policy
	}
	return ""
}

// goneZones returns the zones Gone recorded for key, when its entry says the object was gone.
func (t *Inflight) goneZones(key types.NamespacedName) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.m[key]; ok && s.gone {
		return s.Zones()
	}
	return nil
}

// zoneChanges is one zone's changes of a submission.
type zoneChanges struct {
	zone    string // "namespace/name" of the DNSZone
	plan    ZonePlan
	changes []provider.Change
}

// ticket is what one answer of a submission answers: zone i of s, the submission of key.
type ticket struct {
	key types.NamespacedName
	s   *Submission
	i   int
}

// answersBuffer is how many answers the writers may leave before drain takes them.
const answersBuffer = 64

// submit records the object's submission, then submits each zone's changes to its writer
// (zonewriter.Writer.SubmitTo, under ctx without its cancellation: the reconcile that submits
// returns at once), whose answers drain receives. It blocks only while a writer's queue is
// full. zones must not be empty, and no submission of key may be pending.
func (t *Inflight) submit(ctx context.Context, key types.NamespacedName, generation int64, zones []zoneChanges) {
	s := &Submission{Generation: generation, left: len(zones), order: make([]string, len(zones)),
		wrote: make([]time.Time, len(zones)), failed: make([]error, len(zones)), at: t.clock()}
	ids := make([]uint64, len(zones))
	t.mu.Lock()
	t.m[key] = s
	for i, z := range zones {
		s.order[i] = z.zone
		ids[i] = t.next
		t.tickets[t.next] = ticket{key: key, s: s, i: i}
		t.next++
	}
	t.owed += len(zones)
	start := !t.draining
	t.draining = true
	t.mu.Unlock()
	if start {
		go t.drain()
	}
	ctx = context.WithoutCancel(ctx)
	for i, z := range zones {
		z.plan.Writer.SubmitTo(ctx, z.changes, t.answers, ids[i])
	}
}

// drain records the writers' answers until none is owed. Every submission is answered once
// (zonewriter.Writer.SubmitTo), so it ends once the writers answered what was submitted; the
// next submission starts it again.
func (t *Inflight) drain() {
	for a := range t.answers {
		if !t.answer(a) {
			return
		}
	}
}

// answer records one zone writer's answer, and enqueues its object once every zone of its
// submission answered. It reports whether more answers are owed.
func (t *Inflight) answer(a zonewriter.Answer) (owed bool) {
	t.mu.Lock()
	tk := t.tickets[a.ID]
	delete(t.tickets, a.ID)
	if a.Err != nil {
		tk.s.failed[tk.i] = a.Err
	} else {
		tk.s.wrote[tk.i] = t.clock()
	}
	tk.s.left--
	last := tk.s.left == 0
	q := t.q
	if last && q == nil {
		t.early = append(t.early, tk.key)
	}
	t.owed--
	owed = t.owed > 0
	t.draining = owed
	t.mu.Unlock()
	if last && q != nil {
		q.Add(reconcile.Request{NamespacedName: tk.key})
	}
	return owed
}

// ReleaseGone releases what the object at key may hold, when it is gone (not found:
// lifecycle.Lifecycle.Gone): the zones its last submission wrote to, once answered (an object
// deleted before its finalizer was added), and those Gone recorded. Its records there are
// removed as a Delete phase would (Release, with o an object of that key whose status.zones are
// those zones, and no endpoints). released are those zones once the release is applied, so that
// the caller hands the names over (the objects waiting on them); nil when nothing was released.
// Nothing happens when the table holds nothing of key; while answers are pending it waits for
// them (the last enqueues the object). done is false when the release must be retried (the
// submission is kept for that).
func (p *Planner) ReleaseGone(ctx context.Context, c client.Reader, rec record.EventRecorder, key types.NamespacedName, o Object, opts Options) (released []string, done bool, _ error) {
	s, state := opts.Async.take(key)
	if state != inflightDone {
		return nil, true, nil
	}
	o.SetHeldZones(s.Zones())
	async := opts.Async
	opts.Async = nil // taken above; Release must not wait for it
	done, err := p.Release(ctx, c, rec, o, opts)
	if err != nil || !done {
		async.restore(key, s)
		return nil, done, err
	}
	return s.Zones(), true, nil
}
