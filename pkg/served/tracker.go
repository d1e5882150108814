package served

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/dnsplane/dnsplane/pkg/promreg"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Asker asks one name server for a zone's SOA serial; dnsclient.Client satisfies it.
type Asker interface {
	Serial(ctx context.Context, server, zone string) (uint32, error)
}

// Zone names a zone to check: its DNSZone and its name servers.
type Zone struct {
	// Key names the DNSZone (namespace/name).
	Key types.NamespacedName
	// Name is the zone's name (apex), e.g. "apps.example.com".
	Name string
	// Servers are host:port of every authoritative name server, the primary first: the one
	// whose serial after a write is the serial that carries it.
	Servers []string
	// Asker, when set, asks this zone's "serials" instead of Options.DNS (ChangeZone).
	Asker Asker
	// SerialMayStay: a write that changes records may keep the primary's serial
	// (provider.Resolved.SerialMayStay): Baseline reads the primary before a write, and
	// Written compares with that reading. Elsewhere a serial that stays means a write that
	// changed nothing, served where it was.
	SerialMayStay bool
	// Keys, for a signed zone, are the keys that sign its SOA (its active ZSKs and CSKs): a
	// server is asked with the DO bit set, and serves a serial only when it answers the SOA
	// signed by one of them (Reading.Unsigned). None for a zone that is not signed: the serial
	// alone is asked.
	Keys []Key
}

// ChangeZone is a zone checked through its provider's change status (provider.ChangeSync)
// instead of SOA queries: two "servers", the provider's API, whose serial after a write is the
// second it was acknowledged (Submitted), and its name servers, whose serial is the second up
// to which every write is served (InSync). zoneID is the provider's hosted zone ID.
func ChangeZone(key types.NamespacedName, name, zoneID string, cs provider.ChangeSync) Zone {
	n := cs.ChangeSyncName()
	return Zone{Key: key, Name: name, Servers: []string{n + " API", n + " name servers"},
		Asker: changeAsker{cs: cs, zoneID: zoneID, api: n + " API"}}
}

// changeAsker answers a ChangeZone's serials from its provider.
type changeAsker struct {
	cs          provider.ChangeSync
	zoneID, api string
}

// Serial is the API's Submitted (the current second when this process wrote nothing: a write
// made before a restart is not known) or the name servers' InSync.
func (a changeAsker) Serial(ctx context.Context, server, _ string) (uint32, error) {
	if server == a.api {
		if s := a.cs.Submitted(a.zoneID); s != 0 {
			return s, nil
		}
		return uint32(time.Now().Unix()), nil
	}
	return a.cs.InSync(ctx, a.zoneID)
}

// ZoneOf is the zone to check for a DNSZone key of name and hosted zone zoneID, from its
// provider's resolution: through the provider's change status when it has one, else its name
// servers (servedBy); ok is false when there is nothing to check.
func ZoneOf(key types.NamespacedName, name, zoneID string, servedBy []string, cs provider.ChangeSync) (Zone, bool) {
	switch {
	case cs != nil:
		return ChangeZone(key, name, zoneID, cs), true
	case len(servedBy) > 0:
		return Zone{Key: key, Name: name, Servers: servedBy}, true
	}
	return Zone{}, false
}

// asker is z's Asker, else the Tracker's DNS client.
func (t *Tracker) asker(z Zone) Asker {
	if z.Asker != nil {
		return z.Asker
	}
	return t.opts.DNS
}

// Precision is the resolution of a Want's times: a status keeps them as metav1.MicroTime, so a
// want read back from status after a restart equals the one recorded.
const Precision = time.Microsecond

// KindDNSZone is the kind of the zone-view notices (CheckZone): give it to New to receive them.
const KindDNSZone = "DNSZone"

// Ref names one object's interest in a zone: its kind (e.g. "DNSEndpoint") and key.
type Ref struct {
	Kind string
	Key  types.NamespacedName
	// Gone marks a deleted object's removal (Removed): no notice is sent for it.
	Gone bool
}

// Metrics are the Served check's Prometheus metrics.
type Metrics struct {
	// Propagation: dnsplane_served_propagation_seconds{zone,server}, seconds from a write's
	// acknowledgement to the first check that saw the server at the write's serial; one
	// observation per serial (a batch of many objects is one), none for the primary, whose
	// serial after the write defines the change.
	Propagation *prometheus.HistogramVec
	// Queries: dnsplane_served_soa_queries_total{result}, SOA queries sent by the check,
	// result "ok" or "error".
	Queries *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil = unregistered); a second
// registration on one registry is an error (pkg/promreg).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Propagation: promreg.HistogramVec("dnsplane_served_propagation_seconds",
			"Seconds from a write's acknowledgement to the first check that saw a name server answer its SOA serial, by zone and server.",
			prometheus.ExponentialBuckets(0.05, 2, 14), "zone", "server"),
		Queries: promreg.CounterVec("dnsplane_served_soa_queries_total",
			"SOA queries the Served check sent to name servers, by result (ok or error).", "result"),
	}
	return promreg.Registered(reg, "served", m, m.Propagation, m.Queries)
}

// Options configure a Tracker.
type Options struct {
	// DNS asks the serials (dnsclient.Client, whose Timeout bounds each attempt).
	DNS Asker
	// FirstCheck is the wait from a write to the first check of its zone, a time.Duration;
	// default 250ms. Each further check of a zone still behind waits twice as long, up to
	// Interval.
	FirstCheck time.Duration
	// Interval is the longest wait between two checks of a zone with a change not yet served,
	// a time.Duration (--served-check-interval); default 10s.
	Interval time.Duration
	// StaleAfter is how long a change may take to reach every server before its verdict is
	// Stale, a time.Duration (--served-stale-after); default 5m.
	StaleAfter time.Duration
	// Timeout bounds one check of a zone (every server asked at once), a time.Duration;
	// default 10s.
	Timeout time.Duration
	// Coalesce is how long Written waits before it asks a zone's primary, a time.Duration;
	// default 20ms. The objects of one batch return from their write at about the same moment,
	// and every one that calls Written before the query starts shares its answer: a batch of
	// 1,000 objects costs one or two primary queries, not 1,000.
	Coalesce time.Duration
	// Metrics, when set, records propagation times and queries (NewMetrics).
	Metrics *Metrics
	Log     logr.Logger
}

// zoneState is what the Tracker knows of one zone.
type zoneState struct {
	zone     Zone
	readings map[string]Reading
	wants    map[Ref]Want
	// notified is the last verdict each ref was notified of (or judged at registration), as
	// its signature, so that a check notifies a ref only when its verdict's status or the
	// servers behind change.
	notified map[Ref]string
	// primary serialises the primary's SOA queries of Written, so that a burst of objects
	// written in one batch costs one query.
	primary sync.Mutex
	// log holds the primary's last successful readings, oldest first (at most logLen): the
	// reading before a write, against which Written tells whether the write moved the serial.
	log []Reading
	// behind holds, per server, when it was first seen below the primary's last serial since
	// it last answered it (ZoneView's BehindSince).
	behind map[string]time.Time
	// watched: a DNSZone asked for the zone's view (CheckZone), so the zone is kept without
	// wants; zoneSig is the view's signature last notified.
	watched bool
	zoneSig string
}

// Tracker follows the serials of the zones that objects wrote to, and notifies an object when
// its change's verdict changes (Served, or Stale). It is safe for concurrent use; Start runs
// its checks.
type Tracker struct {
	opts   Options
	queue  workqueue.TypedRateLimitingInterface[types.NamespacedName]
	mu     sync.Mutex
	zones  map[types.NamespacedName]*zoneState
	events map[string]chan types.NamespacedName
	now    func() time.Time
}

// New returns a Tracker whose notices go to a channel per kind in kinds (Events); call Start
// to run its checks.
func New(opts Options, kinds ...string) *Tracker {
	if opts.FirstCheck <= 0 {
		opts.FirstCheck = 250 * time.Millisecond
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	if opts.Interval < opts.FirstCheck {
		opts.FirstCheck = opts.Interval
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = 5 * time.Minute
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Coalesce <= 0 {
		opts.Coalesce = 20 * time.Millisecond
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](opts.FirstCheck, opts.Interval)
	t := &Tracker{
		opts:   opts,
		queue:  workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "served"}),
		zones:  map[types.NamespacedName]*zoneState{},
		events: map[string]chan types.NamespacedName{},
		now:    time.Now,
	}
	for _, k := range kinds {
		t.events[k] = make(chan types.NamespacedName, 1024)
	}
	return t
}

// judge is Judge of w over the zone's servers and readings. A zone checked through its
// provider's change status (Zone.Asker) has no serial line to be ahead of: its "serials" are
// seconds of this process's clock and of the provider's sync. Called with t.mu held.
func (zs *zoneState) judge(w Want, now time.Time, staleAfter time.Duration) Verdict {
	return judge(w, zs.zone.Servers, zs.readings, now, staleAfter, zs.zone.Asker == nil)
}

// logLen is how many of a primary's readings a zone keeps (zoneState.log).
const logLen = 8

// put records r as server's reading; a primary's successful one joins the log too. Called with
// t.mu held.
func (zs *zoneState) put(server string, r Reading) {
	zs.readings[server] = r
	if len(zs.zone.Servers) == 0 || server != zs.zone.Servers[0] || r.Err != "" {
		return
	}
	if len(zs.log) == logLen {
		zs.log = slices.Delete(zs.log, 0, 1)
	}
	zs.log = append(zs.log, r)
}

// before returns the primary's last successful reading begun before t; ok is false when there
// is none (t zero: the caller wrote nothing). Called with t.mu held.
func (zs *zoneState) before(t time.Time) (Reading, bool) {
	for i := len(zs.log) - 1; i >= 0 && !t.IsZero(); i-- {
		if zs.log[i].At.Before(t) {
			return zs.log[i], true
		}
	}
	return Reading{}, false
}

// signature identifies a verdict for notices: its status, and each server behind with how it is
// behind (not asked, failing, ahead, answering unsigned, or at an older serial), so that an
// object's message is rewritten when that changes, and not at every check.
func (v Verdict) signature() string {
	var b strings.Builder
	b.WriteString(string(v.Status))
	for _, x := range v.Behind {
		how := "older"
		switch {
		case x.Reading.At.IsZero():
			how = "unasked"
		case x.Reading.Err != "":
			how = "failing"
		case x.Ahead:
			how = "ahead"
		case x.Reading.Unsigned != "":
			how = "unsigned"
		}
		b.WriteString("|" + x.Server + "=" + how)
	}
	return b.String()
}

// Events carries the keys of kind's objects whose verdict changed, to reconcile them again;
// nil for a kind not given to New. Buffered (1024); a check blocks while it is full, until the
// Tracker's context ends.
func (t *Tracker) Events(kind string) <-chan types.NamespacedName { return t.events[kind] }

// StaleAfter is the Tracker's stale deadline.
func (t *Tracker) StaleAfter() time.Duration { return t.opts.StaleAfter }

// state returns z's state, created or with its servers updated.
func (t *Tracker) state(z Zone) *zoneState {
	t.mu.Lock()
	defer t.mu.Unlock()
	zs, ok := t.zones[z.Key]
	if !ok {
		zs = &zoneState{readings: map[string]Reading{}, wants: map[Ref]Want{}, notified: map[Ref]string{}, behind: map[string]time.Time{}}
		t.zones[z.Key] = zs
	}
	if zs.zone.Name != z.Name || !slices.Equal(zs.zone.Servers, z.Servers) {
		zs.servers(z)
	}
	if !slices.Equal(zs.zone.Keys, z.Keys) {
		// A reading says whether the SOA came signed by the keys of its time.
		zs.zone.Keys = slices.Clone(z.Keys)
		clear(zs.readings)
	}
	zs.zone.Asker = z.Asker
	return zs
}

// servers sets the zone's name and servers, and forgets what it knew of the servers it no
// longer has: their readings, whether they were behind, and the primary's log when the
// primary changed. Called with t.mu held.
func (zs *zoneState) servers(z Zone) {
	if len(zs.zone.Servers) == 0 || len(z.Servers) == 0 || zs.zone.Servers[0] != z.Servers[0] || zs.zone.Name != z.Name {
		zs.log = nil
	}
	zs.zone = Zone{Key: z.Key, Name: z.Name, Servers: slices.Clone(z.Servers), Keys: zs.zone.Keys}
	for s := range zs.readings {
		if !slices.Contains(z.Servers, s) {
			delete(zs.readings, s)
		}
	}
	for s := range zs.behind {
		if !slices.Contains(z.Servers, s) {
			delete(zs.behind, s)
		}
	}
}

// Written records that ref's change to zone, submitted to the provider at submitted, was
// acknowledged at at: the primary's serial is read (one SOA query, shared by every object
// acknowledged before the last query began), and the zone is checked soon. The want is returned
// to be kept in the object's status. An error (the primary gave no serial) leaves no want of
// ref in zone, not even an earlier change's; the caller's verdict is Unreachable.
//
// The serial that carries the change is the primary's after the write, unless that is not
// after the primary's last reading begun before submitted (Baseline's) in a zone whose serial
// may stay (Zone.SerialMayStay): the write did not move the serial, as with a PowerDNS zone
// whose SOA-EDIT-API is empty. Then it is the serial after that reading, which no server
// answers until the serial moves and every server transfers it. A zero submitted
// (the caller keeps track of an earlier change, and wrote nothing) compares with nothing. A
// zone checked through its provider's change status, or served by its primary alone, wants the
// primary's serial as read.
func (t *Tracker) Written(ctx context.Context, zone Zone, ref Ref, submitted, at time.Time) (Want, error) {
	if len(zone.Servers) == 0 {
		return Want{}, fmt.Errorf("zone %s: no name servers to check", zone.Name)
	}
	zs := t.state(zone)
	r := t.primaryAfter(ctx, zs, zone, at, t.opts.Coalesce)
	if r.Err != "" {
		// The want of an earlier change is no verdict on this one.
		t.mu.Lock()
		delete(zs.wants, ref)
		delete(zs.notified, ref)
		t.mu.Unlock()
		return Want{}, fmt.Errorf("primary %s: %s", zone.Servers[0], r.Err)
	}
	w := Want{Serial: r.Serial, Since: at.Truncate(Precision)}
	t.mu.Lock()
	if b, ok := zs.before(submitted); ok && zone.SerialMayStay && zone.Asker == nil && len(zone.Servers) > 1 && !Reached(r.Serial, b.Serial+1) {
		w.Serial = b.Serial + 1
	}
	v := zs.judge(w, t.now(), t.opts.StaleAfter)
	if v.Status == StatusServed {
		// Every server has it already (a zone served by its primary alone): served now, so
		// that status records it and a restarted manager need not ask again.
		w.ServedAt, w.Slowest = t.now().Truncate(Precision), zone.Servers[0]
	}
	zs.wants[ref] = w
	zs.notified[ref] = v.signature()
	t.mu.Unlock()
	if w.ServedAt.IsZero() {
		t.queue.AddAfter(zone.Key, t.opts.FirstCheck)
	}
	return w, nil
}

// Baseline reads zone's primary before a write is submitted to it: the reading Written
// compares the serial after the write with. Call it just before submitting; the objects of one
// batch share a reading begun within Options.Coalesce. A zone whose serial moves with every
// change (not Zone.SerialMayStay), served by its primary alone, or checked through its
// provider's change status, needs none (no query).
func (t *Tracker) Baseline(ctx context.Context, zone Zone) {
	if len(zone.Servers) < 2 || zone.Asker != nil || !zone.SerialMayStay {
		return
	}
	t.primaryAfter(ctx, t.state(zone), zone, t.now().Add(-t.opts.Coalesce), 0)
}

// Removed records that a deleted object's removal from zone, submitted at submitted, was
// acknowledged at at: it is checked as a change is (Written), under ref marked Gone, with no
// notice (no object is left to reconcile). Once every server answers it, or past the stale
// deadline, it is logged ("removal served", or "removal stale" with the servers behind) and
// dropped. A primary that gives no serial is logged.
func (t *Tracker) Removed(ctx context.Context, zone Zone, ref Ref, submitted, at time.Time) {
	ref.Gone = true
	w, err := t.Written(ctx, zone, ref, submitted, at)
	if err != nil {
		t.opts.Log.Info("removal of a deleted object not checked: the primary gave no serial", "zone", zone.Name, "object", ref.Key, "error", err.Error())
		return
	}
	if !w.ServedAt.IsZero() {
		t.mu.Lock()
		if zs, ok := t.zones[zone.Key]; ok {
			t.gone(zs, ref, w, Verdict{Status: StatusServed})
		}
		t.mu.Unlock()
	}
}

// gone logs a deleted object's removal, served or stale, and drops it. Called with t.mu held.
func (t *Tracker) gone(zs *zoneState, ref Ref, w Want, v Verdict) {
	if v.Status == StatusServed {
		t.opts.Log.Info("removal served", "zone", zs.zone.Name, "object", ref.Key, "kind", ref.Kind, "serial", w.Serial)
	} else {
		t.opts.Log.Info("removal stale", "zone", zs.zone.Name, "object", ref.Key, "kind", ref.Kind, "serial", w.Serial,
			"behind", Describe(w, v.Behind, 5))
	}
	delete(zs.wants, ref)
	delete(zs.notified, ref)
}

// primaryAfter returns a reading of zone's primary begun at or after at: the last one when it
// is, else a fresh one, asked after waiting coalesce (zs.primary held while it waits and asks,
// so that the objects of one batch share it).
func (t *Tracker) primaryAfter(ctx context.Context, zs *zoneState, zone Zone, at time.Time, coalesce time.Duration) Reading {
	primary := zone.Servers[0]
	zs.primary.Lock()
	defer zs.primary.Unlock()
	t.mu.Lock()
	r, ok := zs.readings[primary]
	t.mu.Unlock()
	// A reading begun after the write serves every object of it, a failed one too: the objects
	// of a batch whose primary does not answer share one failure, not one timeout each.
	if ok && !r.At.Before(at) {
		return r
	}
	// Wait, holding the zone's primary lock, so that the objects of the same batch queue
	// behind it and find this answer fresh (Options.Coalesce).
	if coalesce > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(coalesce):
		}
	}
	// The reading is dated when the query began: a write acknowledged after that may not be
	// in it.
	r = t.read(ctx, zone, primary)
	t.mu.Lock()
	zs.put(primary, r)
	t.mu.Unlock()
	return r
}

// Track registers a want kept in ref's status (a restarted manager, or a reconcile that wrote
// nothing): a served want stays served without a query; one not served yet is checked soon.
// A want already tracked with the same serial and time is left as it is, and so is one written
// after w (its status write was lost: w is the change before it); times are compared to
// Precision.
func (t *Tracker) Track(zone Zone, ref Ref, w Want) {
	zs := t.state(zone)
	t.mu.Lock()
	old, had := zs.wants[ref]
	oldSince, since := old.Since.Truncate(Precision), w.Since.Truncate(Precision)
	if had && (old.Serial == w.Serial && oldSince.Equal(since) || oldSince.After(since)) {
		t.mu.Unlock()
		return
	}
	zs.wants[ref] = w
	zs.notified[ref] = zs.judge(w, t.now(), t.opts.StaleAfter).signature()
	t.mu.Unlock()
	if w.ServedAt.IsZero() {
		t.queue.AddAfter(zone.Key, t.opts.FirstCheck)
	}
}

// Verdict judges ref's want in zone now; ok is false when none is tracked (never written, or
// forgotten). The want is returned with it, ServedAt and Slowest set once served.
func (t *Tracker) Verdict(zone types.NamespacedName, ref Ref) (Want, Verdict, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	zs, ok := t.zones[zone]
	if !ok {
		return Want{}, Verdict{}, false
	}
	w, ok := zs.wants[ref]
	if !ok {
		return Want{}, Verdict{}, false
	}
	return w, zs.judge(w, t.now(), t.opts.StaleAfter), true
}

// Forget drops ref's wants in every zone but keep (an object deleted, or no longer holding
// records there); a zone left without wants is forgotten too.
func (t *Tracker) Forget(ref Ref, keep ...types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, zs := range t.zones {
		if slices.Contains(keep, k) {
			continue
		}
		delete(zs.wants, ref)
		delete(zs.notified, ref)
		if len(zs.wants) == 0 && !zs.watched {
			delete(t.zones, k)
		}
	}
}

// NeedLeaderElection: only the leader writes, so only it checks.
func (t *Tracker) NeedLeaderElection() bool { return true }

// Start runs the checks until ctx ends.
func (t *Tracker) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		t.queue.ShutDown()
	}()
	for {
		key, shutdown := t.queue.Get()
		if shutdown {
			return nil
		}
		if t.check(ctx, key) {
			t.queue.AddRateLimited(key)
		} else {
			t.queue.Forget(key)
		}
		t.queue.Done(key)
	}
}

// check asks every server of zone key that is below the highest serial wanted by a change
// within its stale deadline, once each, at once, and the primary again when a secondary answers
// a serial after the primary's last one (it may be ahead: Judge); records the answers, marks the
// wants now served, and notifies each ref whose verdict changed. A change past its stale
// deadline is judged (its Stale notice) and not asked for again, nor is a server behind its
// primary past the deadline: a zone whose changes are all served or stale costs no query. It
// reports whether a change or a server behind is still within its deadline (the zone is checked
// again).
func (t *Tracker) check(ctx context.Context, key types.NamespacedName) bool {
	t.mu.Lock()
	zs, ok := t.zones[key]
	if !ok {
		t.mu.Unlock()
		return false
	}
	zone := zs.zone
	now := t.now()
	top, live, pending := zs.top(now, t.opts.StaleAfter)
	// A watched zone with a server seen behind its primary is followed up too, with the
	// primary asked again: a server read in the moment between a change and its transfer
	// catches up at the next check, and is not left "behind since" until it goes stale.
	following := zs.watched && zs.following(now, t.opts.StaleAfter)
	var ask []string
	for i, s := range zone.Servers {
		r, ok := zs.readings[s]
		since, behind := zs.behind[s]
		behind = behind && now.Sub(since) < t.opts.StaleAfter
		if (live && (!ok || r.Err != "" || r.Unsigned != "" || !Reached(r.Serial, top))) || (following && (i == 0 || behind)) {
			ask = append(ask, s)
		}
	}
	judge := pending || (zs.watched && len(zs.behind) > 0)
	t.mu.Unlock()
	if !judge {
		return false
	}
	return t.record(ctx, key, zone, t.confirm(ctx, zone, t.ask(ctx, zone, ask)), true)
}

// top is the highest serial wanted by a change not served and within staleAfter of its write
// (live: there is one); pending: some change is not served. Called with t.mu held.
func (zs *zoneState) top(now time.Time, staleAfter time.Duration) (top uint32, live, pending bool) {
	for _, w := range zs.wants {
		if !w.ServedAt.IsZero() {
			continue
		}
		pending = true
		if now.Sub(w.Since) < staleAfter && (!live || Reached(w.Serial, top)) {
			top, live = w.Serial, true
		}
	}
	return top, live, pending
}

// following reports whether a server has been behind its primary for less than staleAfter.
// Called with t.mu held.
func (zs *zoneState) following(now time.Time, staleAfter time.Duration) bool {
	for _, since := range zs.behind {
		if now.Sub(since) < staleAfter {
			return true
		}
	}
	return false
}

// confirm asks zone's primary again when a secondary of fresh answered a serial after the
// primary's last reading (fresh's, else the one kept) and that reading did not begin after the
// secondary's: the primary may have moved since, and Judge counts a secondary as ahead only
// against a primary reading taken after it.
func (t *Tracker) confirm(ctx context.Context, zone Zone, fresh map[string]Reading) map[string]Reading {
	if zone.Asker != nil {
		return fresh
	}
	primary := zone.Servers[0]
	p, ok := fresh[primary]
	if !ok {
		t.mu.Lock()
		if zs, tracked := t.zones[zone.Key]; tracked {
			p, ok = zs.readings[primary]
		}
		t.mu.Unlock()
	}
	if !ok || p.Err != "" {
		return fresh
	}
	for s, r := range fresh {
		if s != primary && r.Err == "" && r.Serial != p.Serial && Reached(r.Serial, p.Serial) && p.At.Before(r.At) {
			for s, r := range t.ask(ctx, zone, []string{primary}) {
				fresh[s] = r
			}
			return fresh
		}
	}
	return fresh
}

// record keeps readings, fresh answers of some servers of zone key: it marks the wants they
// serve, follows which servers are behind the primary, observes the propagation metric, and
// notifies each ref whose verdict changed and the zone's DNSZone when its view's signature
// changed (unless !notifyZone: the caller is the DNSZone, and takes the view). It reports
// whether a change not served, or a server behind its primary, is still within its stale
// deadline: past it, the zone is not checked again for its sake.
func (t *Tracker) record(ctx context.Context, key types.NamespacedName, zone Zone, readings map[string]Reading, notifyZone bool) bool {
	now := t.now()
	var notify []Ref
	t.mu.Lock()
	zs, ok := t.zones[key]
	if !ok {
		t.mu.Unlock()
		return false
	}
	lags := propagated(zs.wants, zs.readings, readings)
	for s, r := range readings {
		if slices.Contains(zs.zone.Servers, s) {
			zs.put(s, r)
		}
	}
	zs.follow()
	open := false
	for ref, w := range zs.wants {
		if !w.ServedAt.IsZero() {
			continue
		}
		v := zs.judge(w, now, t.opts.StaleAfter)
		switch {
		case ref.Gone && (v.Status == StatusServed || v.Lag >= t.opts.StaleAfter):
			t.gone(zs, ref, w, v)
			continue
		case v.Status == StatusServed:
			w.ServedAt, w.Slowest = now.Truncate(Precision), t.slowest(zs, w, readings)
			zs.wants[ref] = w
		case v.Lag < t.opts.StaleAfter:
			open = true
		}
		if sig := v.signature(); zs.notified[ref] != sig {
			zs.notified[ref] = sig
			notify = append(notify, ref)
		}
	}
	open = open || (zs.watched && zs.following(now, t.opts.StaleAfter))
	zoneChanged := false
	if zs.watched && notifyZone {
		if sig := JudgeZone(zs.zone.Servers, zs.readings, zs.behind, now, t.opts.StaleAfter).signature(); sig != zs.zoneSig {
			zs.zoneSig, zoneChanged = sig, true
		}
	}
	t.mu.Unlock()
	if t.opts.Metrics != nil {
		for s, ds := range lags {
			for _, d := range ds {
				t.opts.Metrics.Propagation.WithLabelValues(zone.Name, s).Observe(d.Seconds())
			}
		}
	}
	for _, ref := range notify {
		t.send(ctx, ref)
	}
	if zoneChanged {
		t.send(ctx, Ref{Kind: KindDNSZone, Key: key})
	}
	return open
}

// follow updates behind from the readings: a server that answers a serial below the primary's
// last one is behind from its first such reading, and so is one ahead of it (Judge's ahead: it
// serves the zone from elsewhere, and does not follow its primary); one that answers it, or a
// later serial its primary answered since, is not. Called with t.mu held.
func (zs *zoneState) follow() {
	p, ok := zs.readings[zs.zone.Servers[0]]
	if !ok || p.Err != "" {
		return
	}
	for _, s := range zs.zone.Servers[1:] {
		r, ok := zs.readings[s]
		switch {
		case !ok || r.Err != "":
		case Reached(r.Serial, p.Serial) && (zs.zone.Asker != nil || !ahead(r, p)):
			delete(zs.behind, s)
		default:
			if _, was := zs.behind[s]; !was {
				zs.behind[s] = r.At
			}
		}
	}
}

// CheckZone asks every name server of zone for its serial now, all at once (one query each),
// records the answers as a check does (wants served by them are marked and notified), and
// returns the zone's view. From then on the zone is watched: the Tracker keeps it without wants,
// and notifies KindDNSZone with zone.Key when its view's signature changes (a server starts or
// stops failing, or goes past the stale deadline). The DNSZone controller calls it at each
// reconcile of a zone whose provider has name servers to check.
func (t *Tracker) CheckZone(ctx context.Context, zone Zone) ZoneView {
	if len(zone.Servers) == 0 {
		return ZoneView{}
	}
	zs := t.state(zone)
	t.mu.Lock()
	zs.watched = true
	t.mu.Unlock()
	open := t.record(ctx, zone.Key, zone, t.confirm(ctx, zone, t.ask(ctx, zone, zone.Servers)), false)
	if open {
		t.queue.AddAfter(zone.Key, t.opts.FirstCheck)
	}
	view, _ := t.View(zone.Key)
	t.mu.Lock()
	if zs, ok := t.zones[zone.Key]; ok {
		zs.zoneSig = view.signature()
	}
	t.mu.Unlock()
	return view
}

// View is zone key's view as of its last readings; ok is false when the zone is not tracked.
func (t *Tracker) View(key types.NamespacedName) (ZoneView, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	zs, ok := t.zones[key]
	if !ok {
		return ZoneView{}, false
	}
	return JudgeZone(zs.zone.Servers, zs.readings, zs.behind, t.now(), t.opts.StaleAfter), true
}

// ForgetZone drops zone key and every want in it (its DNSZone is gone).
func (t *Tracker) ForgetZone(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.zones, key)
}

// slowest names the server that reached w's serial last: a secondary that reached it in this
// check (the last of the zone's order: those of one check are not told apart), else the primary.
func (t *Tracker) slowest(zs *zoneState, w Want, fresh map[string]Reading) string {
	name := zs.zone.Servers[0]
	for _, s := range zs.zone.Servers[1:] {
		if r, ok := fresh[s]; ok && r.Err == "" && r.Unsigned == "" && Reached(r.Serial, w.Serial) {
			name = s
		}
	}
	return name
}

// ask queries servers at once (read), each bounded by Options.Timeout.
func (t *Tracker) ask(ctx context.Context, zone Zone, servers []string) map[string]Reading {
	out := make(map[string]Reading, len(servers))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() {
			r := t.read(ctx, zone, s)
			mu.Lock()
			out[s] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// propagated returns, for the metric, each server of fresh that reached an open want's serial in
// this check (its previous reading did not): the time from the earliest write of that serial to
// the reading, per server. A batch of many objects is one serial, so one observation.
func propagated(wants map[Ref]Want, prev, fresh map[string]Reading) map[string][]time.Duration {
	earliest := map[uint32]time.Time{}
	for _, w := range wants {
		if e, ok := earliest[w.Serial]; w.ServedAt.IsZero() && (!ok || w.Since.Before(e)) {
			earliest[w.Serial] = w.Since
		}
	}
	out := map[string][]time.Duration{}
	for s, r := range fresh {
		if r.Err != "" || r.Unsigned != "" {
			continue
		}
		for serial, since := range earliest {
			p, had := prev[s]
			if Reached(r.Serial, serial) && (!had || p.Err != "" || p.Unsigned != "" || !Reached(p.Serial, serial)) {
				out[s] = append(out[s], max(r.At.Sub(since), 0))
			}
		}
	}
	return out
}

func (t *Tracker) countQuery(err error) {
	if t.opts.Metrics == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	t.opts.Metrics.Queries.WithLabelValues(result).Inc()
}

// send notifies ref's kind, unless the kind has no channel.
func (t *Tracker) send(ctx context.Context, ref Ref) {
	ch, ok := t.events[ref.Kind]
	if !ok || ref.Gone {
		return
	}
	select {
	case ch <- ref.Key:
	case <-ctx.Done():
	}
}
