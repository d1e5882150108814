package heartbeat

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// Defaults of Options, the manager's --heartbeat-interval and --heartbeat-threshold defaults
// (dnsplane API contract, "The manager").
const (
	DefaultInterval  = 30 * time.Second
	DefaultThreshold = 5 * time.Minute
)

// ErrInvalidTarget is returned, wrapped with the reason, by Reporter.Set for a Target it cannot
// monitor.
var ErrInvalidTarget = errors.New("invalid heartbeat target")

// Target is one contributor to monitor and, when Write is set, to heartbeat: in practice one
// DNSRecord, registered by its controller after each reconcile.
type Target struct {
	// Key identifies the target for Set, Remove and Options.OnCheck; the DNSRecord controller
	// uses "namespace/name".
	Key string
	// Self is the contributor: the manager's --owner-id and "DNSRecord/<namespace>/<name>".
	Self registry.Contributor
	// Zone is the name of the hosted zone that holds RootHost, canonicalised by Set. Every
	// Target of one Writer must name the same zone.
	Zone string
	// RootHost is the name whose registry records carry the heartbeats, canonicalised by Set;
	// it must be Zone or below it.
	RootHost string
	// Writer is the zone's writer (one per hosted zone); targets are grouped by it, and each
	// group costs one read and at most one write per tick.
	Writer *zonewriter.Writer
	// Desired are the contributor's desired record sets, exactly as its last successful
	// reconcile planned them (plan.Input.Desired). Set stores them in canonical form
	// (provider.CanonicalRecordSet). The self-heal plans them against each fresh read. The
	// heartbeat lives in the contributor's registry records of the sets named RootHost, so a
	// contributor with no desired set at RootHost has no heartbeat (and is not among its owners).
	Desired []provider.RecordSet
	// DefaultTTL replaces a desired TTL of 0, in seconds, as in the reconcile's plan.Input.
	DefaultTTL int64
	// Write: the contributor heartbeats and self-heals. False for DryRun and Disabled objects and
	// after a failed reconcile: the rootHost is then only monitored (checked and reported), and
	// nothing is written for it.
	Write bool
}

// Options configures a Reporter. Zero values take the defaults.
type Options struct {
	// Interval is the tick period, --heartbeat-interval; default DefaultInterval.
	Interval time.Duration
	// Threshold is the largest healthy heartbeat age, --heartbeat-threshold (see Check); default
	// DefaultThreshold.
	Threshold time.Duration
	// Clock gives the time and the ticker; default the real clock. Tests inject
	// k8s.io/utils/clock/testing.FakeClock.
	Clock clock.WithTicker
	// Log receives errors, self-heals and, at V(1), skipped and completed zone ticks.
	Log logr.Logger
	// OnCheck receives, after each zone tick that could read the zone, the owners of every
	// Target of that zone, by Target key (Check's result): as the tick's write left the zone
	// when it succeeded (the Target's own heartbeat is then the tick's time), else as read. It is
	// called from the reporter's goroutines, never concurrently (calls are serialised across
	// zones), and not for a key removed before the report. A zone is free for its next tick
	// while its checks are reported. It must not block for long: a DNSRecord controller hands
	// the result to its status writer or workqueue.
	OnCheck func(key string, owners []Owner)
	// Metrics records the gauge and tick counters (NewMetrics); nil records nothing.
	Metrics *Metrics
}

// Reporter periodically refreshes the heartbeats of its Targets, re-reads their peers'
// heartbeats and checks them, one read and at most one write per zone per tick. It is a
// controller-runtime manager.Runnable that runs in the leader only (NeedLeaderElection). It is
// safe for concurrent use.
//
// Per zone writer and tick (tickZone):
//  1. one read: zonewriter.Writer.Reload (one ListRecordSets), which also refreshes the writer's
//     view for the reconcilers;
//  2. for every Target with Write, in key order: when one of its desired targets is missing from
//     its record set, or its registry record for a desired set is missing or names other
//     targets, the changes of plan.Compute (Mode Shared, its Desired against the zone as read
//     and as the previous heals leave it); then the heartbeat refresh of each of its registry
//     records at RootHost: an Update from the record as read to the same entry with the tick's
//     time (registry.WithHeartbeat: whole seconds, truncated). A record a heal writes carries
//     the heartbeat in that change, so no key is written twice;
//  3. at most one write: one zonewriter.Writer.Apply of all of it (nothing when nothing is
//     due, for example a second tick within the same second). Its preconditions (Before) are
//     the read, so a reconcile that wrote the same records in between fails it with
//     provider.ErrConflict: it is logged and left for the next tick, never retried within the
//     tick; any other error likewise;
//  4. the check of every Target (Write or not) against the zone as the write left it, or as
//     read when the write failed, reported through the gauge and Options.OnCheck.
//
// Heartbeat refreshes are not plan changes (plan.Compute keeps the heartbeat it finds and
// compares entries without it), so they never make a reconcile see work to do.
type Reporter struct {
	opts Options

	mu      sync.Mutex
	targets map[string]Target
	busy    map[*zonewriter.Writer]bool // a zone tick is running
	idle    *sync.Cond                  // on mu: broadcast when a zone tick ends

	// reportMu serialises reports (the gauge and OnCheck).
	reportMu sync.Mutex
}

// New returns a Reporter with no Targets.
func New(opts Options) *Reporter {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Threshold <= 0 {
		opts.Threshold = DefaultThreshold
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	r := &Reporter{opts: opts, targets: map[string]Target{}, busy: map[*zonewriter.Writer]bool{}}
	r.idle = sync.NewCond(&r.mu)
	return r
}

// Set adds the Target or replaces the one with the same Key; it takes effect at the next tick.
// It returns an error wrapping ErrInvalidTarget, and changes nothing, when Key is empty, Writer
// is nil, Self lacks an owner ID or a "kind/namespace/name" resource, RootHost is not in Zone, or
// a desired set is invalid (the error then also wraps provider.ErrInvalidChange).
func (r *Reporter) Set(t Target) error {
	t.Zone, t.RootHost = dnswire.Dotless(t.Zone), dnswire.Dotless(t.RootHost)
	switch {
	case t.Key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidTarget)
	case t.Writer == nil:
		return fmt.Errorf("%w: %s: no zone writer", ErrInvalidTarget, t.Key)
	case t.Self.OwnerID == "" || t.Self.Kind() == "":
		return fmt.Errorf("%w: %s: contributor %q needs an owner ID and kind/namespace/name", ErrInvalidTarget, t.Key, t.Self.String())
	case t.Zone == "" || !dnswire.IsSubdomain(t.RootHost, t.Zone):
		return fmt.Errorf("%w: %s: root host %q is not in zone %q", ErrInvalidTarget, t.Key, t.RootHost, t.Zone)
	}
	desired := make([]provider.RecordSet, len(t.Desired))
	for i, d := range t.Desired {
		c, err := provider.CanonicalRecordSet(d)
		if err != nil {
			return fmt.Errorf("%w: %s: desired set %s: %w", ErrInvalidTarget, t.Key, d.Key(), err)
		}
		desired[i] = c
	}
	t.Desired = desired
	r.mu.Lock()
	old, had := r.targets[t.Key]
	r.targets[t.Key] = t
	gone := had && old.RootHost != t.RootHost && !r.namedLocked(old.RootHost)
	r.mu.Unlock()
	if gone {
		r.opts.Metrics.forget(old.RootHost)
	}
	return nil
}

// Remove drops the Target with that key, if any, and the gauge series of its root host when no
// other Target names it. If a tick of its zone is running, Remove waits for it to end (at most
// the zone writer's call timeouts), so that nothing is written for the Target once Remove has
// returned: a DNSRecord being deleted releases its records after Remove, and a heartbeat or
// self-heal that read the zone before could otherwise write them back.
func (r *Reporter) Remove(key string) {
	r.mu.Lock()
	old, had := r.targets[key]
	delete(r.targets, key)
	gone := had && !r.namedLocked(old.RootHost)
	for had && r.busy[old.Writer] {
		r.idle.Wait()
	}
	r.mu.Unlock()
	if gone {
		r.opts.Metrics.forget(old.RootHost)
	}
}

// namedLocked reports whether a Target names rootHost; r.mu must be held.
func (r *Reporter) namedLocked(rootHost string) bool {
	for _, t := range r.targets {
		if t.RootHost == rootHost {
			return true
		}
	}
	return false
}

// NeedLeaderElection makes the manager run the Reporter in the leader only: only the leader
// writes (dnsplane API contract, "Only the leader writes").
func (r *Reporter) NeedLeaderElection() bool { return true }

// Start ticks once at once, then every Options.Interval at a fixed rate, until ctx ends; then
// it waits for the zone ticks still running and returns nil. It implements
// controller-runtime's manager.Runnable.
//
// The rate is fixed (docs/api.md, "Heartbeats"): each tick starts the zones' work in goroutines and returns at
// once, so a slow zone never delays the next tick. Ticks never pile up: the loop never blocks
// (a ticker drops the ticks nobody takes, but none goes untaken), and a zone whose previous tick
// is still running when the next one fires is skipped for that tick (logged at V(1), counted as
// ResultSkipped) instead of starting a second concurrent tick for it; the other zones tick as
// usual, and the slow zone ticks again at the first tick after its running one ends.
func (r *Reporter) Start(ctx context.Context) error {
	ticker := r.opts.Clock.NewTicker(r.opts.Interval)
	defer ticker.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	r.tick(ctx, &wg)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			r.tick(ctx, &wg)
		}
	}
}

// Tick runs one tick and returns when every zone's work for it is done. Start calls the same
// tick without waiting; Tick is exported for tests and tools. A zone whose previous tick is
// still running is skipped, as in Start.
func (r *Reporter) Tick(ctx context.Context) {
	var wg sync.WaitGroup
	r.tick(ctx, &wg)
	wg.Wait()
}

// tick starts, for every zone writer with Targets and no tick running, one zone tick in its own
// goroutine, counted in wg.
func (r *Reporter) tick(ctx context.Context, wg *sync.WaitGroup) {
	r.mu.Lock()
	groups := map[*zonewriter.Writer][]Target{}
	for _, t := range r.targets {
		groups[t.Writer] = append(groups[t.Writer], t)
	}
	var start [][]Target
	for w, g := range groups {
		if r.busy[w] {
			r.opts.Log.V(1).Info("heartbeat tick skipped: the zone's previous tick is still running", "zone", g[0].Zone, "zoneID", w.ZoneID())
			r.opts.Metrics.tick(ResultSkipped)
			continue
		}
		r.busy[w] = true
		slices.SortFunc(g, func(a, b Target) int { return cmp.Compare(a.Key, b.Key) })
		start = append(start, g)
	}
	r.mu.Unlock()
	for _, g := range start {
		wg.Add(1)
		go func() {
			defer wg.Done()
			result, now, checked := r.tickZone(ctx, g)
			// Reports never overlap, and a zone is free for its next tick by the time its
			// checks are reported.
			r.reportMu.Lock()
			defer r.reportMu.Unlock()
			r.mu.Lock()
			delete(r.busy, g[0].Writer)
			r.idle.Broadcast()
			r.mu.Unlock()
			r.opts.Metrics.tick(result)
			r.report(checked, now)
		}()
	}
}

// checked is one Target's check result.
type checked struct {
	target Target
	owners []Owner
}

// tickZone reads one zone, checks its Targets and writes their heartbeats and self-heals in one
// Apply. It returns the tick's Result*, the tick's time and the checks to report (none when the
// zone could not be read).
func (r *Reporter) tickZone(ctx context.Context, targets []Target) (string, time.Time, []checked) {
	w, zone := targets[0].Writer, targets[0].Zone
	log := r.opts.Log.WithValues("zone", zone, "zoneID", w.ZoneID())
	now := r.opts.Clock.Now()
	sets, err := w.Reload(ctx)
	if err != nil {
		log.Error(err, "heartbeat tick: cannot read the zone; nothing checked or written")
		return ResultReadError, now, nil
	}
	snap := plan.NewSnapshot(zone, sets)
	view, changes := r.writes(log, zone, sets, snap, targets, now)
	if len(changes) == 0 {
		log.V(1).Info("heartbeat tick done", "targets", len(targets), "changes", 0)
		return ResultOK, now, r.check(snap.Index(), targets, now)
	}
	err = w.Apply(ctx, changes)
	switch {
	case errors.Is(err, provider.ErrConflict):
		log.Info("heartbeat tick: the zone changed since it was read; left for the next tick", "changes", len(changes), "error", err.Error())
		return ResultConflict, now, r.check(snap.Index(), targets, now)
	case err != nil:
		log.Error(err, "heartbeat tick: write failed", "changes", len(changes))
		return ResultWriteError, now, r.check(snap.Index(), targets, now)
	}
	log.V(1).Info("heartbeat tick done", "targets", len(targets), "changes", len(changes))
	// Check the zone as this tick left it: own heartbeats refreshed, heals applied.
	return ResultOK, now, r.check(registry.NewIndex(zone, slices.Collect(maps.Values(view))), targets, now)
}

// check runs Check for every Target against ix.
func (r *Reporter) check(ix *registry.Index, targets []Target, now time.Time) []checked {
	roots := map[string]bool{}
	for _, t := range targets {
		roots[t.RootHost] = true
	}
	// One pass over the index for every root host of the zone.
	atRoot := map[string][]registry.Entry{}
	for _, k := range ix.Keys() {
		if roots[k.Name] {
			atRoot[k.Name] = append(atRoot[k.Name], ix.Entries(k)...)
		}
	}
	out := make([]checked, 0, len(targets))
	for _, t := range targets {
		kind := t.Self.Kind()
		var entries []registry.Entry
		for _, e := range atRoot[t.RootHost] {
			if e.Contributor().Kind() == kind {
				entries = append(entries, e)
			}
		}
		out = append(out, checked{target: t, owners: Check(entries, t.RootHost, now, r.opts.Threshold)})
	}
	return out
}

// report hands checks to the gauge (once per root host) and to OnCheck (for keys still set).
func (r *Reporter) report(checks []checked, now time.Time) {
	observed := map[string]bool{}
	for _, c := range checks {
		if !observed[c.target.RootHost] && r.registered(c.target) {
			observed[c.target.RootHost] = true
			r.opts.Metrics.observe(c.target.RootHost, c.owners, now)
		}
		if r.opts.OnCheck != nil && r.registered(c.target) {
			r.opts.OnCheck(c.target.Key, c.owners)
		}
	}
}

// registered reports whether t's key is still set for the same writer.
func (r *Reporter) registered(t Target) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, ok := r.targets[t.Key]
	return ok && cur.Writer == t.Writer
}

// writes returns the zone's writes for this tick, consistent with one read (sets, snap): first
// the self-heals of the writing Targets whose own targets or registry records are missing, each
// planned against the zone as the previous ones leave it; then the heartbeat refresh of every
// writing Target's registry records at its root host. A registry record a self-heal writes gets
// its heartbeat in that same change, so no key is written twice. It also returns the zone's
// record sets as they are once the changes are applied.
func (r *Reporter) writes(log logr.Logger, zone string, sets []provider.RecordSet, snap *plan.Snapshot, targets []Target, now time.Time) (map[provider.RecordSetKey]provider.RecordSet, []provider.Change) {
	view := make(map[provider.RecordSetKey]provider.RecordSet, len(sets))
	for _, rs := range sets {
		if _, dup := view[rs.Key()]; !dup {
			view[rs.Key()] = rs
		}
	}
	var changes []provider.Change
	written := map[provider.RecordSetKey]int{} // key -> index in changes of its last write with an After
	for _, t := range targets {
		if !t.Write || !needsHeal(view, snap.Index(), t) {
			continue
		}
		res := plan.Compute(plan.Input{
			Zone: zone, Self: t.Self, Mode: plan.Shared,
			Desired: t.Desired, DefaultTTL: t.DefaultTTL, Snapshot: snap,
		})
		if len(res.Changes) == 0 {
			// Held by someone else or malformed: the reconcile reports the conflict.
			log.V(1).Info("heartbeat self-heal: nothing to write", "key", t.Key, "conflicts", len(res.Conflicts))
			continue
		}
		next := maps.Clone(view)
		if err := zonewriter.ApplyTo(next, res.Changes); err != nil {
			log.Error(err, "heartbeat self-heal: the plan does not apply to the zone as read; skipped", "key", t.Key)
			continue
		}
		log.Info("heartbeat self-heal: restoring missing targets or registry records", "key", t.Key, "changes", len(res.Changes))
		for _, ch := range res.Changes {
			if ch.After != nil {
				written[ch.After.Key()] = len(changes)
			} else {
				delete(written, ch.Key())
			}
			changes = append(changes, ch)
		}
		view = next
		snap = plan.NewSnapshot(zone, slices.Collect(maps.Values(view)))
	}
	ix := snap.Index()
	for _, t := range targets {
		if !t.Write {
			continue
		}
		// A registry record a self-heal writes carries its heartbeat in that same change.
		changes = Stamp(changes, t.Self, t.RootHost, now)
		for _, e := range ix.Of(t.Self) {
			if e.Name != t.RootHost {
				continue
			}
			for _, rec := range ix.Records(t.Self, e.Key()) {
				if _, healed := written[rec.Set.Key()]; healed {
					continue // stamped above
				}
				stamped := registry.WithHeartbeat(rec.Entry, now)
				if stamped.Heartbeat.Equal(rec.Entry.Heartbeat) {
					continue
				}
				after := rec.Set.Clone()
				after.Targets = []string{stamped.Encode()}
				before := rec.Set.Clone()
				written[after.Key()] = len(changes)
				changes = append(changes, provider.Change{Action: provider.ActionUpdate, Before: &before, After: &after})
			}
		}
	}
	for _, ch := range changes {
		if ch.After != nil {
			view[ch.After.Key()] = *ch.After
		}
	}
	return view, changes
}

// needsHeal reports whether t's own state is missing from the zone: a desired target absent from
// its record set, or no registry record of t for a desired set carrying exactly its desired
// targets.
func needsHeal(view map[provider.RecordSetKey]provider.RecordSet, ix *registry.Index, t Target) bool {
	for _, d := range t.Desired {
		if len(d.Targets) == 0 {
			continue
		}
		cur, ok := view[d.Key()]
		if !ok {
			return true
		}
		for _, target := range d.Targets {
			if !slices.Contains(cur.Targets, target) {
				return true
			}
		}
		want := slices.Sorted(slices.Values(d.Targets))
		want = slices.Compact(want)
		found := false
		for _, rec := range ix.Records(t.Self, d.Key()) {
			if slices.Equal(rec.Entry.Targets, want) {
				found = true
				break
			}
		}
		if !found {
			return true
		}
	}
	return false
}
