package heartbeat_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dnsplane/dnsplane/pkg/heartbeat"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// The reporter is a manager Runnable that runs in the leader only.
var (
	_ manager.Runnable               = (*heartbeat.Reporter)(nil)
	_ manager.LeaderElectionRunnable = (*heartbeat.Reporter)(nil)
)

func TestReporter_NeedsLeaderElection(t *testing.T) {
	if !heartbeat.New(heartbeat.Options{}).NeedLeaderElection() {
		t.Fatal("NeedLeaderElection = false; only the leader may heartbeat")
	}
}

// TestReporter_200TargetsInOneZoneCostOneReadAndOneWritePerTick pins the budget: 200 DNSRecords
// in one zone (100 sharing one rootHost, 100 on their own) cost exactly one ListRecordSets and at
// most one ApplyChanges per tick, and each tick refreshes every heartbeat and changes nothing
// else.
func TestReporter_200TargetsInOneZoneCostOneReadAndOneWritePerTick(t *testing.T) {
	b := newBackend(t, zone)
	w := newWriter(t, b.counted, zone)
	clk := testclock.NewFakeClock(t0)
	seen := newChecks(0)
	r := heartbeat.New(heartbeat.Options{Interval: 2 * time.Second, Threshold: 10 * time.Second, Clock: clk, OnCheck: seen.onCheck})
	var targets []heartbeat.Target
	for i := range 200 {
		root := "app.shared.test"
		if i >= 100 {
			root = fmt.Sprintf("app-%03d.shared.test", i)
		}
		targets = append(targets, target(fmt.Sprintf("apps/app-%03d", i), self(fmt.Sprintf("cluster-%03d", i), "app"), w, root, ip(i)))
	}
	publish(t, b.counted, zone, targets...)
	for _, tg := range targets {
		if err := r.Set(tg); err != nil {
			t.Fatal(err)
		}
	}
	before := list(t, b.raw, zone)
	b.counted.Reset()

	ctx := context.Background()
	for i, step := range []time.Duration{0, 2 * time.Second, 2 * time.Second} {
		clk.Step(step)
		r.Tick(ctx)
		c := b.counted.ZoneCounts(local.ZoneID(zone))
		if c[counting.OpListRecordSets] != i+1 || c[counting.OpApplyChanges] != i+1 {
			t.Fatalf("after tick %d: %v; want exactly one read and one write per tick", i+1, c)
		}
	}
	// A second tick within the same second has nothing to refresh: a read, no write.
	r.Tick(ctx)
	if c := b.counted.ZoneCounts(local.ZoneID(zone)); c[counting.OpListRecordSets] != 4 || c[counting.OpApplyChanges] != 3 {
		t.Fatalf("after a tick within the same second: %v; want 4 reads and still 3 writes", c)
	}

	now := clk.Now()
	for _, tg := range targets {
		hb, ok := heartbeatOf(t, b.raw, zone, tg.Self, tg.RootHost)
		if !ok || !hb.Equal(now) {
			t.Fatalf("%s: heartbeat %v (record %v), want %v", tg.Key, hb, ok, now)
		}
		owners, n := seen.get(tg.Key)
		if n != 4 {
			t.Fatalf("%s: checked %d times in 4 ticks", tg.Key, n)
		}
		if len(heartbeat.Failing(owners)) != 0 {
			t.Fatalf("%s: failing owners %v", tg.Key, heartbeat.FailingMessage(owners, now))
		}
	}
	if o, _ := seen.get("apps/app-000"); len(o) != 100 {
		t.Fatalf("the shared rootHost has %d owners, want 100", len(o))
	}
	if got := targetsAt(t, b.raw, zone, "app.shared.test"); len(got) != 100 {
		t.Fatalf("the shared set has %d targets, want 100", len(got))
	}
	// Nothing but the contributors' own registry records' heartbeats changed.
	after := list(t, b.raw, zone)
	if len(after) != len(before) {
		t.Fatalf("the zone had %d sets, now %d", len(before), len(after))
	}
	for _, a := range after {
		i := slices.IndexFunc(before, func(x provider.RecordSet) bool { return x.Key() == a.Key() })
		if i < 0 {
			t.Fatalf("new set %s", a)
		}
		if a.Equal(before[i]) || a.Type == "SOA" {
			continue
		}
		eb, errb := registry.Parse(before[i].Targets[0])
		ea, erra := registry.Parse(a.Targets[0])
		if errb != nil || erra != nil || !ea.EqualIgnoringHeartbeat(eb) || !ea.Heartbeat.Equal(now) {
			t.Fatalf("%s changed beyond its heartbeat:\n  %s\n  %s", a.Key(), before[i], a)
		}
	}
}

// TestReporter_PinsHeartbeatFailingTransitions drives two clusters' reporters with one fake clock
// (interval 2s, threshold 10s): cluster-b stops heartbeating at t0; cluster-a's reporter, run by
// Start on the fake clock's ticker, sees it healthy at t0+10s and failing at t0+12s, the first
// check after t0+10s; b's target is still served; when b comes back a sees it healthy at once.
func TestReporter_PinsHeartbeatFailingTransitions(t *testing.T) {
	const root = "app.shared.test"
	b := newBackend(t, zone)
	clk := testclock.NewFakeClock(t0)
	wa, wb := newWriter(t, b.counted, zone), newWriter(t, b.counted, zone)
	ta := target("apps/app", self("cluster-a", "app"), wa, root, "192.0.2.1")
	tb := target("apps/app", self("cluster-b", "app"), wb, root, "192.0.2.2")
	publish(t, b.counted, zone, ta, tb)

	seen := newChecks(64)
	opts := heartbeat.Options{Interval: 2 * time.Second, Threshold: 10 * time.Second, Clock: clk}
	rb := heartbeat.New(opts)
	if err := rb.Set(tb); err != nil {
		t.Fatal(err)
	}
	rb.Tick(context.Background()) // b's last heartbeat: t0

	opts.OnCheck = seen.onCheck
	ra := heartbeat.New(opts)
	if err := ra.Set(ta); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ra.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})

	bAt := func() heartbeat.Owner {
		t.Helper()
		seen.wait(t, "apps/app")
		owners, _ := seen.get("apps/app")
		o, ok := owner(owners, "cluster-b")
		if !ok {
			t.Fatalf("cluster-b is not among the owners %v", owners)
		}
		return o
	}
	// Start ticks at once (t0), then every 2s.
	for elapsed := time.Duration(0); elapsed <= 10*time.Second; elapsed += 2 * time.Second {
		if elapsed > 0 {
			clk.Step(2 * time.Second)
		}
		if o := bAt(); !o.Healthy || !o.LastHeartbeat.Equal(t0) {
			t.Fatalf("at t0+%s: cluster-b %+v, want healthy with last heartbeat t0", elapsed, o)
		}
	}
	clk.Step(2 * time.Second) // t0+12s
	o := bAt()
	if o.Healthy {
		t.Fatalf("at t0+12s: cluster-b healthy, want failing (threshold 10s)")
	}
	owners, _ := seen.get("apps/app")
	msg := heartbeat.FailingMessage(owners, clk.Now())
	if want := "owner cluster-b (DNSRecord/apps/app) last heartbeat 2026-11-30T01:00:00Z, 12s ago"; msg != want {
		t.Fatalf("message %q, want %q", msg, want)
	}
	if a, _ := owner(owners, "cluster-a"); !a.Healthy || !a.LastHeartbeat.Equal(t0.Add(12*time.Second)) {
		t.Fatalf("cluster-a %+v, want healthy at t0+12s (its own reporter heartbeats it)", a)
	}
	if got := targetsAt(t, b.raw, zone, root); !slices.Equal(got, []string{"192.0.2.1", "192.0.2.2"}) {
		t.Fatalf("served %q; heartbeats only report, b's target must stay", got)
	}

	// b restarts at t0+18s and ticks before a's next tick. Stepping 6s fires a's ticker once
	// (a ticker drops the ticks nobody took), at t0+18s.
	clk.Step(6 * time.Second)
	if o := bAt(); o.Healthy {
		t.Fatalf("at t0+18s, before b's restart: cluster-b healthy")
	}
	rb.Tick(context.Background())
	clk.Step(2 * time.Second) // t0+20s
	if o := bAt(); !o.Healthy || !o.LastHeartbeat.Equal(t0.Add(18*time.Second)) {
		t.Fatalf("after b's restart: %+v, want healthy with heartbeat t0+18s", o)
	}
}

// TestReporter_SelfHealRestoresALostTargetWithinOneTick: a target dropped by a racing write (as
// on a provider without conditional writes) and a lost registry record come back at the owner's
// next tick, in its one write; a peer's tick never touches them.
func TestReporter_SelfHealRestoresALostTargetWithinOneTick(t *testing.T) {
	const root = "app.shared.test"
	b := newBackend(t, zone)
	h := &hook{Provider: b.counted}
	clk := testclock.NewFakeClock(t0)
	wa, wb := newWriter(t, h, zone), newWriter(t, b.counted, zone)
	ta := target("apps/app", self("cluster-a", "app"), wa, root, "192.0.2.1")
	tb := target("apps/app", self("cluster-b", "app"), wb, root, "192.0.2.2")
	publish(t, b.counted, zone, ta, tb)
	ra := heartbeat.New(heartbeat.Options{Interval: 2 * time.Second, Clock: clk})
	rb := heartbeat.New(heartbeat.Options{Interval: 2 * time.Second, Clock: clk})
	if err := ra.Set(ta); err != nil {
		t.Fatal(err)
	}
	if err := rb.Set(tb); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// A racing write replaced the set with b's target only.
	lose := func() {
		t.Helper()
		cur := aSet(root, "192.0.2.1", "192.0.2.2")
		next := aSet(root, "192.0.2.2")
		if err := b.counted.ApplyChanges(ctx, local.ZoneID(zone), []provider.Change{{Action: provider.ActionUpdate, Before: &cur, After: &next}}); err != nil {
			t.Fatal(err)
		}
	}
	lose()
	rb.Tick(ctx) // b has all it needs: it only heartbeats, and never restores a's target
	if got := targetsAt(t, b.raw, zone, root); !slices.Equal(got, []string{"192.0.2.2"}) {
		t.Fatalf("after b's tick: %q; b must not write a's target", got)
	}
	b.counted.Reset()
	clk.Step(2 * time.Second)
	ra.Tick(ctx)
	if got := targetsAt(t, b.raw, zone, root); !slices.Equal(got, []string{"192.0.2.1", "192.0.2.2"}) {
		t.Fatalf("after a's tick: %q, want a's target restored", got)
	}
	if c := b.counted.ZoneCounts(local.ZoneID(zone)); c[counting.OpListRecordSets] != 1 || c[counting.OpApplyChanges] != 1 {
		t.Fatalf("a's healing tick cost %v; want one read and one write", c)
	}
	if hb, _ := heartbeatOf(t, b.raw, zone, ta.Self, root); !hb.Equal(clk.Now()) {
		t.Fatalf("a's heartbeat %v, want %v (written with the heal)", hb, clk.Now())
	}

	// Its registry record is lost too: it comes back in one change, heartbeat included.
	ix := registry.NewIndex(zone, list(t, b.raw, zone))
	recs := ix.Records(ta.Self, provider.RecordSetKey{Name: root, Type: "A"})
	if len(recs) != 1 {
		t.Fatalf("a has %d registry records", len(recs))
	}
	lose()
	if err := b.counted.ApplyChanges(ctx, local.ZoneID(zone), []provider.Change{{Action: provider.ActionDelete, Before: &recs[0].Set}}); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Second)
	ra.Tick(ctx)
	if got := targetsAt(t, b.raw, zone, root); !slices.Equal(got, []string{"192.0.2.1", "192.0.2.2"}) {
		t.Fatalf("after a's tick: %q, want a's target restored", got)
	}
	hb, ok := heartbeatOf(t, b.raw, zone, ta.Self, root)
	if !ok || !hb.Equal(clk.Now()) {
		t.Fatalf("a's registry record: present %v, heartbeat %v; want restored with heartbeat %v", ok, hb, clk.Now())
	}
	keys := map[provider.RecordSetKey]int{}
	for _, ch := range h.lastApply() {
		keys[ch.Key()]++
		if keys[ch.Key()] > 1 {
			t.Fatalf("the healing write changes %s twice: %v", ch.Key(), h.lastApply())
		}
	}
	// b's registry record was never written by a.
	if hbB, _ := heartbeatOf(t, b.raw, zone, tb.Self, root); !hbB.Equal(t0) {
		t.Fatalf("b's heartbeat %v, want t0 (only b writes it)", hbB)
	}
}

// TestReporter_MonitorOnlyTargetsNeverWrite: DryRun, Disabled and failed objects are checked
// and reported but cost no write.
func TestReporter_MonitorOnlyTargetsNeverWrite(t *testing.T) {
	const root = "app.shared.test"
	b := newBackend(t, zone)
	w := newWriter(t, b.counted, zone)
	clk := testclock.NewFakeClock(t0)
	seen := newChecks(0)
	r := heartbeat.New(heartbeat.Options{Clock: clk, OnCheck: seen.onCheck})
	ta := target("apps/app", self("cluster-a", "app"), w, root, "192.0.2.1")
	publish(t, b.counted, zone, ta)
	// Even with its target lost, a monitor-only target writes nothing.
	cur, next := aSet(root, "192.0.2.1"), aSet(root, "192.0.2.9")
	if err := b.counted.ApplyChanges(context.Background(), local.ZoneID(zone), []provider.Change{{Action: provider.ActionUpdate, Before: &cur, After: &next}}); err != nil {
		t.Fatal(err)
	}
	ta.Write = false
	if err := r.Set(ta); err != nil {
		t.Fatal(err)
	}
	b.counted.Reset()
	r.Tick(context.Background())
	if c := b.counted.ZoneCounts(local.ZoneID(zone)); c[counting.OpListRecordSets] != 1 || c[counting.OpApplyChanges] != 0 {
		t.Fatalf("a monitor-only tick cost %v; want one read, no write", c)
	}
	owners, n := seen.get("apps/app")
	if n != 1 || len(owners) != 1 || owners[0].Healthy || !owners[0].LastHeartbeat.IsZero() {
		t.Fatalf("check: %d calls, owners %+v; want one call naming cluster-a as never heartbeating", n, owners)
	}
}

// TestReporter_ConflictIsLeftForTheNextTick: a write that finds the zone changed is not retried
// within the tick; the next tick writes.
func TestReporter_ConflictIsLeftForTheNextTick(t *testing.T) {
	const root = "app.shared.test"
	b := newBackend(t, zone)
	h := &hook{Provider: b.counted}
	w := newWriter(t, h, zone)
	clk := testclock.NewFakeClock(t0)
	m, reg := newMetrics(t)
	r := heartbeat.New(heartbeat.Options{Clock: clk, Metrics: m})
	ta := target("apps/app", self("cluster-a", "app"), w, root, "192.0.2.1")
	publish(t, b.counted, zone, ta)
	if err := r.Set(ta); err != nil {
		t.Fatal(err)
	}
	b.counted.Reset()
	h.mu.Lock()
	h.failApply = fmt.Errorf("injected: %w", provider.ErrConflict)
	h.mu.Unlock()
	r.Tick(context.Background())
	h.mu.Lock()
	attempts := len(h.applies)
	h.mu.Unlock()
	if attempts != 1 || ticks(t, reg, heartbeat.ResultConflict) != 1 {
		t.Fatalf("after a conflict: %d write attempts, %v conflict ticks; want 1 and 1 (no retry)", attempts, ticks(t, reg, heartbeat.ResultConflict))
	}
	if hb, _ := heartbeatOf(t, b.raw, zone, ta.Self, root); !hb.IsZero() {
		t.Fatalf("heartbeat %v written despite the conflict", hb)
	}
	clk.Step(time.Second)
	r.Tick(context.Background())
	if hb, _ := heartbeatOf(t, b.raw, zone, ta.Self, root); !hb.Equal(clk.Now()) {
		t.Fatalf("heartbeat %v after the next tick, want %v", hb, clk.Now())
	}
	if ticks(t, reg, heartbeat.ResultOK) != 1 {
		t.Fatalf("ok ticks = %v, want 1", ticks(t, reg, heartbeat.ResultOK))
	}
}

// TestReporter_SlowZoneIsSkippedNotStacked runs Start on a fake clock with two zones, one of
// which hangs in its read: the next tick skips that zone (no second concurrent tick for it) and
// still ticks the other one on time; once the slow tick ends, the zone ticks again.
func TestReporter_SlowZoneIsSkippedNotStacked(t *testing.T) {
	const slowZone, fastZone = "slow.test", "fast.test"
	b := newBackend(t, slowZone, fastZone)
	gate := make(chan struct{})
	entered := make(chan struct{}, 8)
	h := &hook{Provider: b.counted, listGate: gate, listEntered: entered}
	ws, wf := newWriter(t, h, slowZone), newWriter(t, b.counted, fastZone)
	clk := testclock.NewFakeClock(t0)
	seen := newChecks(64)
	m, reg := newMetrics(t)
	r := heartbeat.New(heartbeat.Options{Interval: 2 * time.Second, Clock: clk, OnCheck: seen.onCheck, Metrics: m})
	for _, tg := range []heartbeat.Target{
		{Key: "slow", Self: self("c", "slow"), Zone: slowZone, RootHost: "app." + slowZone, Writer: ws, Write: true},
		{Key: "fast", Self: self("c", "fast"), Zone: fastZone, RootHost: "app." + fastZone, Writer: wf, Write: true},
	} {
		if err := r.Set(tg); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()

	waitEntered := func() {
		t.Helper()
		select {
		case <-entered:
		case <-time.After(30 * time.Second):
			t.Fatal("the slow zone's read did not start")
		}
	}
	waitEntered()        // tick 1 (at once): the slow zone hangs in its read
	seen.wait(t, "fast") // ... and the fast zone is done
	clk.Step(2 * time.Second)
	seen.wait(t, "fast") // tick 2: the fast zone ticks on time
	select {
	case <-entered:
		t.Fatal("tick 2 started a second concurrent tick of the slow zone")
	default:
	}
	if got := ticks(t, reg, heartbeat.ResultSkipped); got != 1 {
		t.Fatalf("skipped zone ticks = %v, want 1", got)
	}
	close(gate) // the slow read returns; its tick completes
	seen.wait(t, "slow")
	clk.Step(2 * time.Second)
	waitEntered() // tick 3: the slow zone ticks again
	seen.wait(t, "slow", "fast")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start returned %v, want nil after the context ended", err)
	}
	if _, n := seen.get("slow"); n != 2 {
		t.Fatalf("slow zone checked %d times, want 2 (ticks 1 and 3)", n)
	}
	if _, n := seen.get("fast"); n != 3 {
		t.Fatalf("fast zone checked %d times, want 3", n)
	}
}

// TestReporter_AgeGaugeFollowsOwners pins the gauge: ages in seconds, +Inf for an owner that
// never heartbeat, series deleted when an owner leaves and when the root host's last Target is
// removed.
func TestReporter_AgeGaugeFollowsOwners(t *testing.T) {
	const root = "app.shared.test"
	b := newBackend(t, zone)
	w := newWriter(t, b.counted, zone)
	clk := testclock.NewFakeClock(t0)
	m, reg := newMetrics(t)
	r := heartbeat.New(heartbeat.Options{Clock: clk, Metrics: m, Threshold: 10 * time.Second})
	ta := target("apps/app", self("cluster-a", "app"), w, root, "192.0.2.1")
	tb := target("apps/b", self("cluster-b", "app"), w, root, "192.0.2.2")
	tc := target("apps/c", self("cluster-c", "app"), w, root, "192.0.2.3")
	publish(t, b.counted, zone, ta, tb, tc)
	ctx := context.Background()

	// b heartbeats at t0 (monitored by a's cluster-b peer's reporter, here the same one).
	for _, tg := range []heartbeat.Target{ta, tb} {
		if err := r.Set(tg); err != nil {
			t.Fatal(err)
		}
	}
	r.Tick(ctx)
	r.Remove(tb.Key) // b stops
	clk.Step(12 * time.Second)
	r.Tick(ctx)
	got := gauges(t, reg)
	if got[root+" cluster-a"] != 0 || got[root+" cluster-b"] != 12 || !math.IsInf(got[root+" cluster-c"], 1) || len(got) != 3 {
		t.Fatalf("gauges %v; want cluster-a 0, cluster-b 12, cluster-c +Inf", got)
	}

	// c leaves: its registry record goes; its series goes at the next tick.
	ix := registry.NewIndex(zone, list(t, b.raw, zone))
	recs := ix.Records(tc.Self, provider.RecordSetKey{Name: root, Type: "A"})
	if err := b.counted.ApplyChanges(ctx, local.ZoneID(zone), []provider.Change{{Action: provider.ActionDelete, Before: &recs[0].Set}}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	r.Tick(ctx)
	if got := gauges(t, reg); len(got) != 2 || got[root+" cluster-b"] != 13 {
		t.Fatalf("gauges after c left: %v; want only cluster-a and cluster-b (13)", got)
	}
	r.Remove(ta.Key)
	if got := gauges(t, reg); len(got) != 0 {
		t.Fatalf("gauges after the last target of %s was removed: %v", root, got)
	}
}

func TestReporter_SetRejectsInvalidTargets(t *testing.T) {
	b := newBackend(t, zone)
	w := newWriter(t, b.counted, zone)
	r := heartbeat.New(heartbeat.Options{})
	good := target("apps/app", self("c", "app"), w, "app.shared.test", "192.0.2.1")
	for name, mutate := range map[string]func(*heartbeat.Target){
		"empty key":              func(t *heartbeat.Target) { t.Key = "" },
		"no writer":              func(t *heartbeat.Target) { t.Writer = nil },
		"no owner ID":            func(t *heartbeat.Target) { t.Self.OwnerID = "" },
		"resource not kind/ns/n": func(t *heartbeat.Target) { t.Self.Resource = "app" },
		"root host outside zone": func(t *heartbeat.Target) { t.RootHost = "app.other.test" },
		"no zone":                func(t *heartbeat.Target) { t.Zone = "" },
		"invalid desired set":    func(t *heartbeat.Target) { t.Desired = []provider.RecordSet{aSet("app.shared.test", "not-an-address")} },
	} {
		tg := good
		mutate(&tg)
		if err := r.Set(tg); !errors.Is(err, heartbeat.ErrInvalidTarget) {
			t.Errorf("%s: Set = %v, want ErrInvalidTarget", name, err)
		}
	}
	good.RootHost = "APP.Shared.Test."
	if err := r.Set(good); err != nil {
		t.Fatalf("valid target: %v", err)
	}
	bad := good
	bad.Desired = []provider.RecordSet{aSet("app.shared.test", "not-an-address")}
	if err := r.Set(bad); !errors.Is(err, provider.ErrInvalidChange) {
		t.Fatalf("invalid desired set: %v, want it to wrap provider.ErrInvalidChange too", err)
	}
}

func TestReporter_RemovedTargetIsNoLongerCheckedOrWritten(t *testing.T) {
	const root = "app.shared.test"
	b := newBackend(t, zone)
	w := newWriter(t, b.counted, zone)
	seen := newChecks(0)
	r := heartbeat.New(heartbeat.Options{Clock: testclock.NewFakeClock(t0), OnCheck: seen.onCheck})
	ta := target("apps/app", self("cluster-a", "app"), w, root, "192.0.2.1")
	publish(t, b.counted, zone, ta)
	if err := r.Set(ta); err != nil {
		t.Fatal(err)
	}
	r.Remove(ta.Key)
	b.counted.Reset()
	r.Tick(context.Background())
	if c := b.counted.Counts(); len(c) != 0 {
		t.Fatalf("a tick with no targets cost %v", c)
	}
	if _, n := seen.get(ta.Key); n != 0 {
		t.Fatalf("removed target checked %d times", n)
	}
	if !strings.HasPrefix(ta.Self.String(), "cluster-a/") {
		t.Fatal(ta.Self.String())
	}
}

// TestReporter_RemoveWaitsForARunningTick: a DNSRecord being deleted calls Remove and then
// releases its records. A tick of its zone that read the zone before must not write the
// heartbeat (or a self-heal) back afterwards, so Remove returns only once that tick has ended,
// and the ended tick's write is the last one for the Target.
func TestReporter_RemoveWaitsForARunningTick(t *testing.T) {
	b := newBackend(t, zone)
	gate := make(chan struct{})
	entered := make(chan struct{}, 8)
	h := &hook{Provider: b.counted, listGate: gate, listEntered: entered}
	w := newWriter(t, h, zone)
	r := heartbeat.New(heartbeat.Options{Clock: testclock.NewFakeClock(t0)})
	ta := target("apps/app", self("cluster-a", "app"), w, "app."+zone, "192.0.2.1")
	publish(t, b.counted, zone, ta)
	if err := r.Set(ta); err != nil {
		t.Fatal(err)
	}
	ticked := make(chan struct{})
	go func() { r.Tick(context.Background()); close(ticked) }()
	select {
	case <-entered: // the tick is reading the zone, held at the gate
	case <-time.After(30 * time.Second):
		t.Fatal("the tick's read did not start")
	}
	removed := make(chan struct{})
	go func() { r.Remove(ta.Key); close(removed) }()
	select {
	case <-removed:
		t.Fatal("Remove returned while a tick of the Target's zone was running")
	case <-time.After(200 * time.Millisecond):
	}
	close(gate)
	select {
	case <-removed:
	case <-time.After(30 * time.Second):
		t.Fatal("Remove did not return after the tick ended")
	}
	<-ticked
	b.counted.Reset()
	r.Tick(context.Background())
	if c := b.counted.Counts(); len(c) != 0 {
		t.Fatalf("a tick after Remove cost %v", c)
	}
}
