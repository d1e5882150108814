package publish

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/served"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// servedWorld is Run's world for the Served condition: the embedded provider's store served
// on loopback as the zones' primary, a stand-in secondary (a second store, moved forward by
// the test as a transfer would), a real Tracker, a fake API client holding the DNSZones, and
// the providers by Secret name: "checked" (primary and secondary), "unchecked" (no name
// servers: a cloud or webhook provider).
type servedWorld struct {
	ctx       context.Context
	c         client.Client
	planner   *Planner
	tracker   *served.Tracker
	primary   *zonedb.Store
	secondary *zonedb.Store
	prov      *gate
	addrs     []string
	reg       *prometheus.Registry
}

// gate is the embedded provider, whose writes can be held (hold) until released.
type gate struct {
	*local.Provider
	mu   sync.Mutex
	hold chan struct{}
	in   chan struct{}
	// fail: a write is applied, and answered with an error (a timeout after the commit).
	fail bool
}

func (g *gate) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	g.mu.Lock()
	hold, in := g.hold, g.in
	g.mu.Unlock()
	if hold != nil {
		close(in)
		<-hold
	}
	err := g.Provider.ApplyChanges(ctx, zoneID, changes)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err == nil && g.fail {
		return errors.New("no answer within 10s")
	}
	return err
}

// byName resolves a Secret by its name.
type byName map[string]provider.Resolved

func (b byName) Resolve(_ context.Context, _, name string) (provider.Resolved, error) {
	return b[name], nil
}

// newServedWorld makes DNSZones a/<label> for each zone (label: its first label), with Secret
// secrets[i].
func newServedWorld(t *testing.T, zones, secrets []string) *servedWorld {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_000_000, 0))
	w := &servedWorld{ctx: ctx,
		primary:   zonedb.NewStore(zonedb.StoreOptions{NameServerAddrs: []netip.Addr{dnstest.Loopback}, Clock: clk}),
		secondary: zonedb.NewStore(zonedb.StoreOptions{NameServerAddrs: []netip.Addr{dnstest.Loopback}, Clock: clk})}
	w.prov = &gate{Provider: local.New(w.primary, local.Options{})}
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for i, name := range zones {
		pz, err := w.prov.EnsureZone(ctx, provider.ZoneSpec{Name: name, CallerReference: name})
		if err != nil {
			t.Fatal(err)
		}
		z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: strings.Split(name, ".")[0]},
			Spec: dnsv1.DNSZoneSpec{Zone: name, ProviderRef: dnsv1.SecretReference{Name: secrets[i]}}}
		z.Status.ZoneID = pz.ID
		z.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: metav1.ConditionTrue, Reason: dnsv1.ReasonZoneAvailable}}
		objs = append(objs, z)
	}
	w.catchUp(t)
	w.c = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(objs...).Build()
	w.addrs = []string{dnstest.Serve(t, w.primary), dnstest.Serve(t, w.secondary)}
	w.reg = prometheus.NewRegistry()
	m, err := served.NewMetrics(w.reg)
	if err != nil {
		t.Fatal(err)
	}
	w.tracker = served.New(served.Options{DNS: dnsclient.Client{Timeout: time.Second}, FirstCheck: 10 * time.Millisecond,
		Interval: 40 * time.Millisecond, StaleAfter: time.Hour, Metrics: m}, "DNSEndpoint")
	testrun.Background(t, "served: tracker", w.tracker.Start)
	w.planner = &Planner{Writers: zonewriter.NewSet(ctx, zonewriter.Options{}), Live: w.c, Providers: byName{
		"checked":   {Account: "a/checked", Provider: w.prov, ServedBy: w.addrs},
		"unchecked": {Account: "a/unchecked", Provider: w.prov},
	}}
	return w
}

// endpoint is a DNSEndpoint a/name publishing each name as an A record.
func endpoint(name string, names ...string) *dnsv1.DNSEndpoint {
	ep := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, Generation: 1}}
	for _, n := range names {
		ep.Spec.Endpoints = append(ep.Spec.Endpoints, dnsv1.Endpoint{DNSName: n, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}})
	}
	return ep
}

// options are the DNSEndpoint controller's Run options for ep.
func (w *servedWorld) options(ep *dnsv1.DNSEndpoint) Options {
	self := registry.Contributor{OwnerID: "cluster-a", Resource: registry.Resource("DNSEndpoint", ep.Namespace, ep.Name)}
	return Options{Self: self, Mode: plan.SingleOwner, DefaultTTL: 300, Published: "published", Served: w.tracker, Kind: "DNSEndpoint"}
}

// run runs ep's reconcile body as the DNSEndpoint controller does (synchronous writes).
func (w *servedWorld) run(t *testing.T, ep *dnsv1.DNSEndpoint) {
	t.Helper()
	if _, _, err := w.planner.Run(w.ctx, w.c, nil, ep, w.options(ep)); err != nil {
		t.Fatal(err)
	}
}

// catchUp makes the secondary serve each zone as the primary does (a transfer).
func (w *servedWorld) catchUp(t *testing.T) {
	t.Helper()
	for _, info := range w.primary.Zones() {
		w.install(t, info.Origin)
	}
}

// install makes the secondary serve zone as the primary does (a transfer of that zone only).
func (w *servedWorld) install(t *testing.T, zone string) {
	t.Helper()
	v, err := w.primary.Version(zone)
	if err != nil {
		t.Fatal(err)
	}
	w.secondary.Install(v)
}

// servedOnceCaughtUp makes the secondary catch up and waits for ep to be Served.
func (w *servedWorld) servedOnceCaughtUp(t *testing.T, ep *dnsv1.DNSEndpoint) {
	t.Helper()
	w.catchUp(t)
	w.servedCond(t, ep, dnsv1.ReasonServed)
}

// wantNotServed fails the test, saying when, unless ep has a Served condition that is not True.
func wantNotServed(t *testing.T, ep *dnsv1.DNSEndpoint, when string) {
	t.Helper()
	if c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionServed); c == nil || c.Status == metav1.ConditionTrue {
		t.Fatalf("%s: Served %+v, want not True", when, c)
	}
}

// servedCond is ep's Served condition after reconciles until it has one of reasons (the
// Tracker's notices say when to reconcile again; here the test polls), or fails after a minute.
func (w *servedWorld) servedCond(t *testing.T, ep *dnsv1.DNSEndpoint, reasons ...string) metav1.Condition {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		w.run(t, ep)
		c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionServed)
		if c != nil && (len(reasons) == 0 || slices.Contains(reasons, c.Reason)) {
			return *c
		}
		if time.Now().After(deadline) {
			t.Fatalf("Served %+v, want one of %v", c, reasons)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An object whose names another owner holds wrote nothing: its last change is not answered
// by any name server, and Served is not True.
func TestRunServed_AnObjectInConflictIsNotServed(t *testing.T) {
	w := newServedWorld(t, []string{"one.test"}, []string{"checked"})
	first := endpoint("first", "www.one.test")
	w.run(t, first)
	w.catchUp(t)
	if c := w.servedCond(t, first, dnsv1.ReasonServed); c.Status != metav1.ConditionTrue {
		t.Fatalf("first: Served %+v", c)
	}
	second := endpoint("second", "www.one.test")
	w.run(t, second)
	if r := meta.FindStatusCondition(second.Status.Conditions, dnsv1.ConditionReady); r == nil || r.Reason != dnsv1.ReasonOwnershipConflict {
		t.Fatalf("second: Ready %+v, want OwnershipConflict", r)
	}
	c := meta.FindStatusCondition(second.Status.Conditions, dnsv1.ConditionServed)
	if c == nil || c.Status == metav1.ConditionTrue {
		t.Fatalf("second, in conflict: Served %+v, want not True", c)
	}
	t.Logf("second: Served=%s %s: %s", c.Status, c.Reason, c.Message)
}

// An object with a zone whose name servers are not checked is not Served: Served=True says
// every zone is; the condition names the zones not checked.
func TestRunServed_AZoneNotCheckedKeepsServedUnknown(t *testing.T) {
	w := newServedWorld(t, []string{"one.test", "two.test"}, []string{"checked", "unchecked"})
	ep := endpoint("web", "www.one.test", "www.two.test")
	w.run(t, ep)
	w.catchUp(t)
	c := w.servedCond(t, ep, dnsv1.ReasonServed, dnsv1.ReasonNotChecked)
	if c.Status == metav1.ConditionTrue || c.Reason != dnsv1.ReasonNotChecked || !strings.Contains(c.Message, "two.test") || strings.Contains(c.Message, "one.test (") {
		t.Fatalf("Served %+v, want Unknown NotChecked naming two.test", c)
	}
	t.Logf("Served=%s %s: %s", c.Status, c.Reason, c.Message)
}

// Removals are changes: an object emptied, and a zone an object left, are checked until every
// name server answers the removal.
func TestRunServed_RemovalsAreChecked(t *testing.T) {
	w := newServedWorld(t, []string{"one.test", "two.test"}, []string{"checked", "checked"})
	ep := endpoint("web", "www.one.test")
	w.run(t, ep)
	w.servedOnceCaughtUp(t, ep)

	// The object moves to two.test: one.test's removal is not on the secondary yet.
	ep.Spec.Endpoints[0].DNSName = "www.two.test"
	ep.Generation++
	w.run(t, ep)
	c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionServed)
	if c == nil || c.Status == metav1.ConditionTrue || !strings.Contains(c.Message, "one.test") {
		t.Fatalf("after leaving one.test, before the secondary has the removal: Served %+v, want not True, naming one.test", c)
	}
	w.catchUp(t)
	// Served follows the removal's check. The message counts the zones still in status.served:
	// both when two.test and the removal turn served in one reconcile, two.test alone when the
	// removal turned served (and left status.served) a reconcile before.
	w.servedCond(t, ep, dnsv1.ReasonServed)
	w.run(t, ep)
	if got := ep.Status.Served; len(got) != 1 || got[0].Zone != "two.test" {
		t.Errorf("status.served %+v once the removal was served, want two.test alone", got)
	}

	// The object empties: the removal from two.test is checked.
	ep.Spec.Endpoints = nil
	ep.Generation++
	w.run(t, ep)
	c = meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionServed)
	if c == nil || c.Reason != dnsv1.ReasonPropagating || !strings.Contains(c.Message, "two.test") {
		t.Fatalf("emptied, before the secondary has the removal: Served %+v, want Propagating naming two.test", c)
	}
	w.servedOnceCaughtUp(t, ep)
}

// The serial that carries a write is read after the write: a primary reading taken while the
// write waited in its zone writer (another object's) is not the write's.
func TestRunServed_AReadingTakenWhileTheWriteWaitedIsNotReused(t *testing.T) {
	w := newServedWorld(t, []string{"one.test"}, []string{"checked"})
	zone := served.Zone{Key: client.ObjectKey{Namespace: "a", Name: "one"}, Name: "one.test", Servers: w.addrs}
	hold, in := make(chan struct{}), make(chan struct{})
	w.prov.mu.Lock()
	w.prov.hold, w.prov.in = hold, in
	w.prov.mu.Unlock()
	ep := endpoint("web", "www.one.test")
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(t, ep)
	}()
	<-in
	// Another object's write is acknowledged now; its reading of the primary comes while this
	// one's write is still held.
	if _, err := w.tracker.Written(w.ctx, zone, served.Ref{Kind: "DNSEndpoint", Key: client.ObjectKey{Namespace: "a", Name: "other"}}, time.Time{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	w.prov.mu.Lock()
	w.prov.hold = nil
	w.prov.mu.Unlock()
	close(hold)
	<-done
	info, err := w.primary.Zone("one.test")
	if err != nil {
		t.Fatal(err)
	}
	if got := ep.Status.Served; len(got) != 1 || got[0].Serial != int64(info.Serial) {
		t.Fatalf("status.served %+v, want the primary's serial after the write, %d", got, info.Serial)
	}
	time.Sleep(200 * time.Millisecond) // the secondary is asked, and answers the serial before
	w.run(t, ep)
	if c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionServed); c == nil || c.Status == metav1.ConditionTrue {
		t.Fatalf("Served %+v with the secondary not having the write, want not True", c)
	}
}

// A deleted object has no condition, but its removal is checked as any change: the secondary's
// propagation of the removal is observed once it answers it.
func TestRunServed_ADeletedObjectsRemovalIsChecked(t *testing.T) {
	w := newServedWorld(t, []string{"one.test"}, []string{"checked"})
	ep := endpoint("web", "www.one.test")
	w.run(t, ep)
	w.servedOnceCaughtUp(t, ep)
	observed := func() uint64 {
		fams, err := w.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, f := range fams {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if f.GetName() == "dnsplane_served_propagation_seconds" && l.GetName() == "server" && l.GetValue() == w.addrs[1] {
						n += m.GetHistogram().GetSampleCount()
					}
				}
			}
		}
		return n
	}
	if n := observed(); n != 1 {
		t.Fatalf("%d propagation observations for the secondary after the write, want 1", n)
	}
	if done, err := w.planner.Release(w.ctx, w.c, nil, ep, w.options(ep)); err != nil || !done {
		t.Fatalf("Release = %v, %v", done, err)
	}
	time.Sleep(200 * time.Millisecond) // the removal is checked: the secondary is behind
	w.catchUp(t)
	deadline := time.Now().Add(time.Minute)
	for observed() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d propagation observations for the secondary after the removal was transferred, want 2: the removal is not checked", observed())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The documented limit of a serial check: a hand edit after Served (the record deleted at the
// provider) is not watched: Served says the object's last change reached every server. The
// object's resync, planning against a fresh view, writes the record again: a new change,
// judged again (Propagating until the secondary has it).
func TestRunServed_AHandEditIsNotWatchedAndTheResyncIsJudged(t *testing.T) {
	w := newServedWorld(t, []string{"one.test"}, []string{"checked"})
	ep := endpoint("web", "www.one.test")
	w.run(t, ep)
	w.servedOnceCaughtUp(t, ep)
	if err := w.primary.Update("one.test", func(tx *zonedb.Tx) error {
		tx.Delete(zonedb.SetKey{Name: "www.one.test.", Type: dns.TypeA})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w.run(t, ep) // the writer's view is fresh: nothing to write
	if c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionServed); c == nil || c.Reason != dnsv1.ReasonServed {
		t.Fatalf("after a hand edit, with nothing written: Served %+v, want Served (not watched)", c)
	}
	w.planner.MaxViewAge = time.Nanosecond // a resync's fresh view
	w.run(t, ep)
	w.planner.MaxViewAge = 0
	if c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionServed); c == nil || c.Reason != dnsv1.ReasonPropagating {
		t.Fatalf("after the resync wrote the record again: Served %+v, want Propagating", c)
	}
	w.servedOnceCaughtUp(t, ep)
}

// A change written by a reconcile whose status write was lost (a conflict, an API error, the
// manager stopped between the write and the status write) leaves status.served describing the
// change before it. The next reconcile writes nothing (the provider holds the records), and its
// verdict is about the last change: not Served until every name server answers it.
func TestRunServed_AChangeWhoseStatusWriteWasLostIsNotServedByTheOldEntry(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "same manager", true: "restarted manager"}[restart], func(t *testing.T) {
			w := newServedWorld(t, []string{"one.test"}, []string{"checked"})
			ep := endpoint("web", "www.one.test")
			w.run(t, ep)
			w.servedOnceCaughtUp(t, ep)
			saved := ep.Status.DeepCopy()

			ep.Spec.Endpoints[0].Targets = dnsv1.Targets{"192.0.2.2"}
			ep.Generation++
			w.run(t, ep)
			wantNotServed(t, ep, "after the change, before the secondary has it")
			ep.Status = *saved // the status write is lost
			if restart {
				w.tracker = served.New(served.Options{DNS: dnsclient.Client{Timeout: time.Second}, FirstCheck: 10 * time.Millisecond,
					Interval: 40 * time.Millisecond, StaleAfter: time.Hour}, "DNSEndpoint")
				testrun.Background(t, "served: restarted tracker", w.tracker.Start)
			}
			w.run(t, ep)
			wantNotServed(t, ep, "the secondary does not have the change, status.served is the one before it")
			w.servedOnceCaughtUp(t, ep)
		})
	}
}

// A removal whose serial could not be read (the primary gave no SOA answer to the check just
// after the write) is still a change to judge: once the primary answers again, the object is
// not Served until every name server answers the removal.
func TestRunServed_ARemovalWhosePrimaryDidNotAnswerIsStillChecked(t *testing.T) {
	w := newServedWorld(t, []string{"one.test", "two.test"}, []string{"checked", "checked"})
	var mu sync.Mutex
	down := false
	primary := w.addrs[0]
	proxy := dnstest.Handle(t, func(rw dns.ResponseWriter, q *dns.Msg) {
		mu.Lock()
		d := down
		mu.Unlock()
		if d {
			m := new(dns.Msg)
			m.SetRcode(q, dns.RcodeRefused)
			_ = rw.WriteMsg(m)
			return
		}
		a, err := dns.Exchange(q, primary)
		if err != nil {
			return
		}
		_ = rw.WriteMsg(a)
	})
	w.addrs[0] = proxy
	w.planner.Providers = byName{"checked": {Account: "a/checked", Provider: w.prov, ServedBy: w.addrs}}
	ep := endpoint("web", "www.one.test")
	w.run(t, ep)
	w.servedOnceCaughtUp(t, ep)

	// The object moves to two.test while the primary gives no SOA answer to the check.
	mu.Lock()
	down = true
	mu.Unlock()
	ep.Spec.Endpoints[0].DNSName = "www.two.test"
	ep.Generation++
	w.run(t, ep)
	if c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionServed); c == nil || c.Reason != dnsv1.ReasonUnreachable {
		t.Fatalf("primary not answering: Served %+v, want Unreachable", c)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	// The secondary transfers two.test; it still serves www.one.test, removed.
	w.install(t, "two.test")
	w.run(t, ep)
	time.Sleep(200 * time.Millisecond)
	c := w.servedCond(t, ep)
	if c.Status == metav1.ConditionTrue {
		t.Fatalf("the secondary still serves the record removed from one.test: Served %+v, want not True", c)
	}
	w.servedOnceCaughtUp(t, ep)
}

// Two quick changes through the zone writers (Options.Async, as the DNSEndpoint controller
// runs): the second lands after the first is written and before the reconcile that would
// judge it, so that reconcile submits the second instead and writes no status. The first
// change's zone is judged all the same: Served waits until every server answers it.
func TestRunServed_TwoQuickChangesJudgeTheFirstZoneToo(t *testing.T) {
	w := newServedWorld(t, []string{"one.test", "two.test"}, []string{"checked", "checked"})
	ep := endpoint("web", "www.one.test", "www.two.test")
	run := w.asyncRun(t, ep)

	ep.Spec.Endpoints[0].Targets = dnsv1.Targets{"192.0.2.2"} // one.test
	ep.Generation++
	if !run() {
		t.Fatal("the first change was not submitted")
	}
	ep.Spec.Endpoints[1].Targets = dnsv1.Targets{"192.0.2.2"} // two.test, before the first is judged
	ep.Generation++
	if !run() {
		t.Fatal("the second change was not submitted")
	}
	// The secondary transfers two.test only: it does not serve the first change.
	w.install(t, "two.test")
	for range 5 {
		if run() {
			t.Fatal("nothing more to submit")
		}
		c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionServed)
		if c == nil || c.Status == metav1.ConditionTrue {
			t.Fatalf("the secondary does not serve the first change in one.test: Served %+v, want not True", c)
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.catchUp(t)
	w.asyncServed(t, ep, run)
}

// asyncRun returns a runner of ep's reconcile through the zone writers (Options.Async, FullSync,
// as the DNSEndpoint controller runs), which waits until its submission is answered and reports
// whether it was deferred; ep is published and Served first.
func (w *servedWorld) asyncRun(t *testing.T, ep *dnsv1.DNSEndpoint) func() bool {
	t.Helper()
	inflight := NewInflight()
	ep.Spec.Strategy = dnsv1.StrategyFullSync
	key := client.ObjectKeyFromObject(ep)
	run := func() bool {
		opts := w.options(ep)
		opts.Async = inflight
		out, _, err := w.planner.Run(w.ctx, w.c, nil, ep, opts)
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for inflight.Pending(key) {
			if time.Now().After(deadline) {
				t.Fatal("the submission is still pending after a minute")
			}
			time.Sleep(5 * time.Millisecond)
		}
		return out.Verdict.SkipsStatus()
	}
	for run() {
	}
	w.catchUp(t)
	w.asyncServed(t, ep, run)
	return run
}

// asyncServed runs ep until it is Served, or fails after a minute.
func (w *servedWorld) asyncServed(t *testing.T, ep *dnsv1.DNSEndpoint, run func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		run()
		if c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionServed); c != nil && c.Reason == dnsv1.ReasonServed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not Served after a minute: %+v", ep.Status.Conditions)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An object moved twice in quick succession through the zone writers: the second move lands
// after the first is written and before the reconcile that records it, so status.zones never
// names the zone of the first move. That zone's records go with the second move all the
// same, and Served waits until every server answers their removal.
func TestRunServed_AZoneHeldOnlyBetweenTwoQuickMovesIsReleasedAndJudged(t *testing.T) {
	w := newServedWorld(t, []string{"one.test", "two.test", "three.test"}, []string{"checked", "checked", "checked"})
	ep := endpoint("web", "www.one.test")
	run := w.asyncRun(t, ep)

	ep.Spec.Endpoints[0].DNSName = "www.two.test"
	ep.Generation++
	if !run() {
		t.Fatal("the first move was not submitted")
	}
	ep.Spec.Endpoints[0].DNSName = "www.three.test"
	ep.Generation++
	if !run() {
		t.Fatal("the second move was not submitted")
	}
	for run() {
	}
	w.catchUp(t)
	w.asyncServed(t, ep, run)
	if a := dnstest.Ask(t, w.addrs[0], "www.two.test.", dns.TypeA); len(a.Answer) != 0 {
		t.Fatalf("Served, and the primary still answers the first move's record: %v", a.Answer)
	}
}

// A resync's write (the same generation) whose status write was lost: the next reconcile
// writes nothing and finds status.served of the change before; the check, which saw the later
// write, judges that one: not Served until every server answers it.
func TestRunServed_AResyncWriteWhoseStatusWriteWasLostIsStillJudged(t *testing.T) {
	w := newServedWorld(t, []string{"one.test"}, []string{"checked"})
	ep := endpoint("web", "www.one.test")
	w.run(t, ep)
	w.servedOnceCaughtUp(t, ep)
	saved := ep.Status.DeepCopy()
	if err := w.primary.Update("one.test", func(tx *zonedb.Tx) error {
		tx.Delete(zonedb.SetKey{Name: "www.one.test.", Type: dns.TypeA})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w.planner.MaxViewAge = time.Nanosecond // a resync's fresh view: the record is written again
	w.run(t, ep)
	w.planner.MaxViewAge = 0
	if c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionServed); c == nil || c.Reason != dnsv1.ReasonPropagating {
		t.Fatalf("after the resync wrote the record again: Served %+v, want Propagating", c)
	}
	ep.Status = *saved // the status write is lost
	w.run(t, ep)
	wantNotServed(t, ep, "the secondary does not have the record written again")
	w.servedOnceCaughtUp(t, ep)
}

// A zone the object left, whose removal is not served yet, and whose DNSZone stops being
// available for a while: the removal stays to judge (status.served keeps its entry), and once
// the zone is back the object is not Served until every server answers it.
func TestRunServed_ARemovalWhoseZoneIsUnavailableForAWhileStaysToJudge(t *testing.T) {
	w := newServedWorld(t, []string{"one.test", "two.test"}, []string{"checked", "checked"})
	ep := endpoint("web", "www.one.test")
	w.run(t, ep)
	w.servedOnceCaughtUp(t, ep)
	ep.Spec.Endpoints[0].DNSName = "www.two.test"
	ep.Generation++
	w.run(t, ep)
	available := func(ok bool) {
		var z dnsv1.DNSZone
		if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: "a", Name: "one"}, &z); err != nil {
			t.Fatal(err)
		}
		st := metav1.ConditionFalse
		if ok {
			st = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&z.Status.Conditions, metav1.Condition{Type: dnsv1.ConditionZoneAvailable, Status: st, Reason: dnsv1.ReasonZoneAvailable})
		if err := w.c.Status().Update(w.ctx, &z); err != nil {
			t.Fatal(err)
		}
	}
	available(false)
	w.run(t, ep)
	t.Logf("one.test unavailable: Served %+v, status.served %+v", meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionServed), ep.Status.Served)
	available(true)
	// The secondary transfers two.test only: it still serves www.one.test, removed.
	w.install(t, "two.test")
	for range 5 {
		w.run(t, ep)
		wantNotServed(t, ep, "the secondary still serves the record removed from one.test")
		time.Sleep(50 * time.Millisecond)
	}
	w.servedOnceCaughtUp(t, ep)
}

// A write applied at the provider and answered with an error (a timeout after the commit): the
// next reconcile finds nothing to write, and the change it made is judged, not the one before
// it that status.served keeps.
func TestRunServed_AWriteAnsweredWithAnErrorButAppliedIsJudged(t *testing.T) {
	w := newServedWorld(t, []string{"one.test"}, []string{"checked"})
	ep := endpoint("web", "www.one.test")
	w.run(t, ep)
	w.servedOnceCaughtUp(t, ep)
	ep.Spec.Endpoints[0].Targets = dnsv1.Targets{"192.0.2.2"}
	ep.Generation++
	w.prov.mu.Lock()
	w.prov.fail = true
	w.prov.mu.Unlock()
	if _, _, err := w.planner.Run(w.ctx, w.c, nil, ep, w.options(ep)); err == nil {
		t.Fatal("the write's error was not reported")
	}
	w.prov.mu.Lock()
	w.prov.fail = false
	w.prov.mu.Unlock()
	if a := dnstest.Ask(t, w.addrs[0], "www.one.test.", dns.TypeA); len(a.Answer) != 1 || !strings.Contains(a.Answer[0].String(), "192.0.2.2") {
		t.Fatalf("the primary answers %v, want the new target (the write was applied)", a.Answer)
	}
	for range 3 {
		w.run(t, ep)
		wantNotServed(t, ep, "the secondary does not have the change")
		time.Sleep(50 * time.Millisecond)
	}
	w.servedOnceCaughtUp(t, ep)
}
