package publish

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

// TestInflight_AnObjectIsEnqueuedOnceEveryZoneAnswered: a submission to three zones (a provider
// that answers only once all three writes are in flight, and rejects zone b's) is pending until
// the writers answer; then the object is enqueued once, and take hands over what each zone's
// writer said: when a and c were written, b's error (Err names it), once.
func TestInflight_AnObjectIsEnqueuedOnceEveryZoneAnswered(t *testing.T) {
	ctx, q, table := startedTable(t)
	key := types.NamespacedName{Namespace: "team", Name: "web"}
	plans := zonePlans(ctx, t, newBarrier(3, "b.test"), "a.test", "b.test", "c.test")
	for i := range plans {
		plans[i].Zone.Namespace, plans[i].Zone.Name = "team", strings.TrimSuffix(plans[i].Zone.Spec.Zone, ".test")
	}
	if _, state := table.take(key); state != inflightNone {
		t.Fatalf("before any submission: state %v, want none", state)
	}
	table.submit(ctx, key, 7, stamped(plans, nil))
	if !table.Pending(key) {
		if _, state := table.take(key); state != inflightDone {
			t.Fatalf("just submitted: neither pending nor done")
		}
		t.Fatal("the three writes were answered before all three were in flight")
	}
	if _, state := table.take(key); state != inflightPending {
		t.Fatalf("while the writes are in flight: state %v, want pending", state)
	}

	req, shutdown := q.Get()
	if shutdown || req.NamespacedName != key {
		t.Fatalf("enqueued %v (shutdown %v), want %v", req, shutdown, key)
	}
	q.Done(req)
	s, state := table.take(key)
	if state != inflightDone || s.Generation != 7 {
		t.Fatalf("after the answers: %+v, %v; want done, generation 7", s, state)
	}
	if w := s.Wrote(); w["team/a"].IsZero() || w["team/c"].IsZero() || len(w) != 2 {
		t.Errorf("Wrote = %v, want team/a and team/c", w)
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "DNSZone team/b") || !strings.Contains(err.Error(), "rejected") {
		t.Errorf("Err = %v, want zone team/b's rejection", err)
	}
	if got := s.Zones(); strings.Join(got, ",") != "team/a,team/b,team/c" {
		t.Errorf("Zones = %v", got)
	}
	if _, state := table.take(key); state != inflightNone || table.Len() != 0 {
		t.Errorf("after take: state %v, %d held; want none and an empty table", state, table.Len())
	}
	if q.Len() != 0 {
		t.Errorf("%d more requests enqueued, want the one", q.Len())
	}
}

// TestInflight_AnswersBeforeTheSourceStartsAreEnqueuedWhenItDoes: a submission answered before
// the controller started its sources is not lost.
func TestInflight_AnswersBeforeTheSourceStartsAreEnqueuedWhenItDoes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testrun.HangTimeout)
	defer cancel()
	table := NewInflight()
	key := types.NamespacedName{Namespace: "team", Name: "early"}
	plans := zonePlans(ctx, t, newBarrier(1), "a.test")
	plans[0].Zone.Namespace, plans[0].Zone.Name = "team", "a"
	table.submit(ctx, key, 1, stamped(plans, nil))
	deadline := time.Now().Add(testrun.HangTimeout)
	for table.Pending(key) {
		if time.Now().After(deadline) {
			t.Fatal("the write was never answered")
		}
		time.Sleep(time.Millisecond)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if err := table.Source().Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	if req, _ := q.Get(); req.NamespacedName != key {
		t.Fatalf("enqueued %v, want %v", req, key)
	}
}

// TestInflight_GoneRecordsTheZonesOfADeletedObject: Gone on an object the table does not hold
// enqueues it once with its zones and policy, for ReleaseGone (take: done); Gone with no zones
// does nothing; Gone on an object whose submission is in flight adds its zones to it, and the
// object is enqueued once.
func TestInflight_GoneRecordsTheZonesOfADeletedObject(t *testing.T) {
	ctx, q, table := startedTable(t)
	key := types.NamespacedName{Namespace: "team", Name: "gone"}

	table.Gone(key, nil, "")
	if table.Len() != 0 || q.Len() != 0 {
		t.Fatalf("Gone without zones: %d held, %d enqueued; want nothing", table.Len(), q.Len())
	}
	table.Gone(key, []string{"team/b", "team/a"}, dnsv1.PolicyUpsertOnly)
	table.Gone(key, []string{"team/a"}, "") // the sweep after the delete event: no new zone, policy kept
	if q.Len() != 1 {
		t.Fatalf("%d requests enqueued, want one", q.Len())
	}
	if got := table.goneZones(key); strings.Join(got, ",") != "team/a,team/b" {
		t.Errorf("goneZones = %v", got)
	}
	if p := table.GonePolicy(key); p != dnsv1.PolicyUpsertOnly {
		t.Errorf("GonePolicy = %q, want the delete event's UpsertOnly", p)
	}
	s, state := table.take(key)
	if state != inflightDone || strings.Join(s.Zones(), ",") != "team/a,team/b" || s.Err() != nil || len(s.Wrote()) != 0 {
		t.Fatalf("take = %+v, %v; want done with team/a and team/b, nothing written or failed", s, state)
	}
	if table.goneZones(key) != nil || table.GonePolicy(key) != "" {
		t.Error("after take the table still knows the object as gone")
	}
	req, _ := q.Get()
	q.Done(req)

	// Deleted while its writes are in flight: the zones join the submission.
	pending := types.NamespacedName{Namespace: "team", Name: "pending"}
	plans := zonePlans(ctx, t, newBarrier(2), "a.test", "c.test")
	for i := range plans {
		plans[i].Zone.Namespace, plans[i].Zone.Name = "team", strings.TrimSuffix(plans[i].Zone.Spec.Zone, ".test")
	}
	table.submit(ctx, pending, 3, stamped(plans, nil))
	table.Gone(pending, []string{"team/b", "team/c"}, "")
	req, shutdown := q.Get()
	if shutdown || req.NamespacedName != pending {
		t.Fatalf("enqueued %v, want %v once the writers answered", req, pending)
	}
	q.Done(req)
	s, state = table.take(pending)
	if state != inflightDone || strings.Join(s.Zones(), ",") != "team/a,team/b,team/c" {
		t.Fatalf("take = %+v, %v; want done with team/a, team/b and team/c", s, state)
	}
	if w := s.Wrote(); len(w) != 2 || w["team/a"].IsZero() || w["team/c"].IsZero() {
		t.Errorf("Wrote = %v, want the two written zones", w)
	}
	if q.Len() != 0 {
		t.Errorf("%d more requests enqueued", q.Len())
	}
}

// startedTable returns a context that ends with the test (at testrun.HangTimeout at the
// latest), a work queue shut down with it, and an Inflight whose Source enqueues into it.
func startedTable(t *testing.T) (context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request], *Inflight) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testrun.HangTimeout)
	t.Cleanup(cancel)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	table := NewInflight()
	if err := table.Source().Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	return ctx, q, table
}

// TestInflight_EnqueueAddsKeysAtOnceOrWhenTheSourceStarts: Enqueue hands keys to the queue the
// Source started with, and keeps those given before it started until it does.
func TestInflight_EnqueueAddsKeysAtOnceOrWhenTheSourceStarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testrun.HangTimeout)
	defer cancel()
	table := NewInflight()
	before, after := types.NamespacedName{Namespace: "team", Name: "before"}, types.NamespacedName{Namespace: "team", Name: "after"}
	table.Enqueue()
	table.Enqueue(before)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if err := table.Source().Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	table.Enqueue(after)
	for _, want := range []types.NamespacedName{before, after} {
		req, shutdown := q.Get()
		if shutdown || req.NamespacedName != want {
			t.Fatalf("enqueued %v (shutdown %v), want %v", req, shutdown, want)
		}
		q.Done(req)
	}
	if n := q.Len(); n != 0 || table.Len() != 0 {
		t.Fatalf("queue holds %d more, table %d; want none", n, table.Len())
	}
}

// TestInflight_TheAnswersGoroutineRunsWhileAnswersAreOwed: the goroutine that receives the zone
// writers' answers runs while some are owed, ends once every submission is answered (nothing is
// left of it in the table), and starts again with the next submission, whose answers enqueue
// its object as the first's did.
func TestInflight_TheAnswersGoroutineRunsWhileAnswersAreOwed(t *testing.T) {
	ctx, q, table := startedTable(t)
	idle := func() bool {
		table.mu.Lock()
		defer table.mu.Unlock()
		return !table.draining && table.owed == 0 && len(table.tickets) == 0
	}
	for round, name := range []string{"first", "second"} {
		key := types.NamespacedName{Namespace: "team", Name: name}
		plans := zonePlans(ctx, t, newBarrier(2), "a.test", "b.test")
		for i := range plans {
			plans[i].Zone.Namespace, plans[i].Zone.Name = "team", strings.TrimSuffix(plans[i].Zone.Spec.Zone, ".test")
		}
		table.submit(ctx, key, 1, stamped(plans, nil))
		req, shutdown := q.Get()
		if shutdown || req.NamespacedName != key {
			t.Fatalf("round %d: enqueued %v (shutdown %v), want %v", round, req, shutdown, key)
		}
		q.Done(req)
		if s, state := table.take(key); state != inflightDone || s.Err() != nil || len(s.Wrote()) != 2 {
			t.Fatalf("round %d: %+v, %v; want both zones written", round, s, state)
		}
		deadline := time.Now().Add(testrun.HangTimeout)
		for !idle() {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the answers' goroutine still runs with every answer in", round)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
