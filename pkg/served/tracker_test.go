package served_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/metrictest"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
	"github.com/dnsplane/dnsplane/pkg/served"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

const zoneName = "served.test"

// counting is dnsclient.Client with a count of the SOA queries it sent.
type counting struct {
	dnsclient.Client
	n atomic.Int64
}

func (c *counting) Serial(ctx context.Context, server, zone string) (uint32, error) {
	c.n.Add(1)
	return c.Client.Serial(ctx, server, zone)
}

// server is one embedded authoritative server on loopback, serving zoneName from its own store:
// a primary, or a stand-in secondary whose store a test updates when it wants it to catch up.
type server struct {
	store *zonedb.Store
	addr  string
}

func newServer(t *testing.T) server {
	store := zonedb.NewStore(zonedb.StoreOptions{NameServerAddrs: []netip.Addr{dnstest.Loopback}})
	if _, err := store.CreateZone(zoneName, zonedb.ZoneMeta{ID: zoneName}); err != nil {
		t.Fatal(err)
	}
	return server{store: store, addr: dnstest.Serve(t, store)}
}

// put writes name A ip, moving the zone's serial forward.
func (s server) put(t *testing.T, name, ip string) uint32 {
	t.Helper()
	rr, err := dns.NewRR(name + ". 60 IN A " + ip)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.store.Update(zoneName, func(tx *zonedb.Tx) error {
		return tx.Put(zonedb.RRSet{Name: name + ".", Type: dns.TypeA, TTL: 60, RRs: []dns.RR{rr}})
	}); err != nil {
		t.Fatal(err)
	}
	info, err := s.store.Zone(zoneName)
	if err != nil {
		t.Fatal(err)
	}
	return info.Serial
}

// catchUp makes s serve at least serial: a stand-in for a secondary's transfer.
func (s server) catchUp(t *testing.T, serial uint32) {
	t.Helper()
	for i := 0; ; i++ {
		info, _ := s.store.Zone(zoneName)
		if served.Reached(info.Serial, serial) {
			return
		}
		s.put(t, "catchup.served.test", "192.0.2.250")
		if i > 3 {
			t.Fatalf("the stand-in secondary's serial %d does not reach %d", info.Serial, serial)
		}
	}
}

func startTracker(t *testing.T, dns served.Asker, reg prometheus.Registerer, opts served.Options) *served.Tracker {
	t.Helper()
	m, err := served.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	opts.DNS, opts.Metrics = dns, m
	tr := served.New(opts, "DNSEndpoint")
	testrun.Background(t, "served: tracker", tr.Start)
	return tr
}

// until takes the tracker's notices until ref's verdict is st, and returns it; it fails after a
// minute (a hang). Each notice must be for a tracked object.
func until(t *testing.T, tr *served.Tracker, zone types.NamespacedName, ref served.Ref, st served.Status) served.Verdict {
	t.Helper()
	for {
		if _, v, _ := tr.Verdict(zone, ref); v.Status == st {
			return v
		}
		next(t, tr)
	}
}

// next waits for the tracker's next notice of kind, or fails after a minute (a hang).
func next(t *testing.T, tr *served.Tracker) types.NamespacedName {
	t.Helper()
	select {
	case k := <-tr.Events("DNSEndpoint"):
		return k
	case <-time.After(time.Minute):
		t.Fatal("no notice within a minute")
		return types.NamespacedName{}
	}
}

func TestTracker_ServedOnlyOnceEveryServerAnswersTheWritesSerial(t *testing.T) {
	primary, second := newServer(t), newServer(t)
	asker := &counting{}
	reg := prometheus.NewRegistry()
	tr := startTracker(t, asker, reg, served.Options{FirstCheck: 10 * time.Millisecond, Interval: 50 * time.Millisecond})
	zone := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{primary.addr, second.addr}}
	refs := []served.Ref{
		{Kind: "DNSEndpoint", Key: types.NamespacedName{Namespace: "a", Name: "one"}},
		{Kind: "DNSEndpoint", Key: types.NamespacedName{Namespace: "a", Name: "two"}},
	}

	serial := primary.put(t, "h.served.test", "192.0.2.1")
	written := time.Now()
	for _, ref := range refs {
		w, err := tr.Written(context.Background(), zone, ref, time.Time{}, written)
		if err != nil {
			t.Fatal(err)
		}
		if w.Serial != serial {
			t.Fatalf("want serial %d, the primary's after the write is %d", w.Serial, serial)
		}
	}
	// One batch, two objects: one primary query.
	if got := asker.n.Load(); got != 1 {
		t.Fatalf("%d SOA queries for two objects of one write, want 1", got)
	}
	// The stand-in secondary has not transferred: every check finds it behind.
	time.Sleep(200 * time.Millisecond)
	_, v, ok := tr.Verdict(zone.Key, refs[0])
	if !ok || v.Status != served.StatusPropagating || v.Slowest != second.addr {
		t.Fatalf("verdict %+v (tracked %t), want Propagating with %s behind", v, ok, second.addr)
	}
	if msg := served.Describe(served.Want{Serial: serial}, v.Behind, 3); !strings.Contains(msg, second.addr+" answers serial") {
		t.Fatalf("Describe = %q, want it to name %s and its serial", msg, second.addr)
	}
	second.catchUp(t, serial)
	for _, ref := range refs {
		until(t, tr, zone.Key, ref, served.StatusServed)
		w, v, _ := tr.Verdict(zone.Key, ref)
		if v.Status != served.StatusServed || w.ServedAt.IsZero() || w.Slowest != second.addr {
			t.Fatalf("%s: verdict %+v, want %+v Served with %s the slowest", ref.Key, v, w, second.addr)
		}
	}
	// Steady state: nothing waits, nothing is asked.
	before := asker.n.Load()
	time.Sleep(300 * time.Millisecond)
	if after := asker.n.Load(); after != before {
		t.Fatalf("%d SOA queries with every change served, want 0", after-before)
	}
	// One observation for the server that caught up (one serial: the objects' one batch); the
	// primary's serial defines the change, so it has none.
	for srv, want := range map[string]int{primary.addr: 0, second.addr: 1} {
		if _, n, err := metrictest.Sum(reg, "dnsplane_served_propagation_seconds", map[string]string{"zone": zoneName, "server": srv}); err != nil || n != want {
			t.Errorf("propagation series for %s: %d (%v), want %d", srv, n, err, want)
		}
	}
	if q := metrictest.Value(t, reg, "dnsplane_served_soa_queries_total", map[string]string{"result": "ok"}); q != float64(before) {
		t.Errorf("dnsplane_served_soa_queries_total{result=ok} = %v, want the %d sent", q, before)
	}
}

func TestTracker_AServerThatStopsAnsweringIsPropagatingThenStale(t *testing.T) {
	primary := newServer(t)
	dead := ports.Dead(t)
	tr := startTracker(t, dnsclient.Client{Timeout: 200 * time.Millisecond}, nil,
		served.Options{FirstCheck: 10 * time.Millisecond, Interval: 50 * time.Millisecond, StaleAfter: 500 * time.Millisecond})
	zone := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{primary.addr, dead}}
	ref := served.Ref{Kind: "DNSEndpoint", Key: types.NamespacedName{Namespace: "a", Name: "one"}}
	primary.put(t, "h.served.test", "192.0.2.1")
	if _, err := tr.Written(context.Background(), zone, ref, time.Time{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	_, v, _ := tr.Verdict(zone.Key, ref)
	if v.Status != served.StatusPropagating {
		t.Fatalf("verdict at the write %+v, want Propagating", v)
	}
	v = until(t, tr, zone.Key, ref, served.StatusStale)
	if v.Status != served.StatusStale || v.Slowest != dead || v.Behind[0].Reading.Err == "" {
		t.Fatalf("verdict past the deadline %+v, want Stale naming %s and its error", v, dead)
	}
}

func TestTracker_APrimaryThatDoesNotAnswerRecordsNothing(t *testing.T) {
	tr := startTracker(t, dnsclient.Client{Timeout: 200 * time.Millisecond}, nil, served.Options{})
	zone := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{ports.Dead(t)}}
	ref := served.Ref{Kind: "DNSEndpoint", Key: types.NamespacedName{Namespace: "a", Name: "one"}}
	if _, err := tr.Written(context.Background(), zone, ref, time.Time{}, time.Now()); err == nil {
		t.Fatal("Written with a dead primary: no error")
	}
	if _, _, ok := tr.Verdict(zone.Key, ref); ok {
		t.Fatal("a want was recorded without the primary's serial")
	}
}

func TestTracker_AWantServedBeforeARestartNeedsNoQuery(t *testing.T) {
	asker := &counting{}
	tr := startTracker(t, asker, nil, served.Options{FirstCheck: 10 * time.Millisecond, Interval: 50 * time.Millisecond})
	zone := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{ports.Dead(t)}}
	ref := served.Ref{Kind: "DNSEndpoint", Key: types.NamespacedName{Namespace: "a", Name: "one"}}
	since := time.Now().Add(-time.Hour)
	tr.Track(zone, ref, served.Want{Serial: 7, Since: since, ServedAt: since.Add(time.Second), Slowest: "x"})
	time.Sleep(200 * time.Millisecond)
	if _, v, ok := tr.Verdict(zone.Key, ref); !ok || v.Status != served.StatusServed || v.Lag != time.Second {
		t.Fatalf("verdict %+v (tracked %t), want Served with its 1 s lag", v, ok)
	}
	if n := asker.n.Load(); n != 0 {
		t.Fatalf("%d queries for a want served before, want 0", n)
	}
	tr.Forget(ref)
	if _, _, ok := tr.Verdict(zone.Key, ref); ok {
		t.Fatal("a forgotten want is still tracked")
	}
}

func TestTracker_AZoneServedByItsPrimaryAloneIsServedAtTheWrite(t *testing.T) {
	primary := newServer(t)
	asker := &counting{}
	tr := startTracker(t, asker, nil, served.Options{FirstCheck: 10 * time.Millisecond, Interval: 50 * time.Millisecond})
	zone := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{primary.addr}}
	ref := served.Ref{Kind: "DNSEndpoint", Key: types.NamespacedName{Namespace: "a", Name: "one"}}
	primary.put(t, "h.served.test", "192.0.2.1")
	w, err := tr.Written(context.Background(), zone, ref, time.Time{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if w.ServedAt.IsZero() || w.Slowest != primary.addr {
		t.Fatalf("want %+v, want it served at the write by %s", w, primary.addr)
	}
	time.Sleep(200 * time.Millisecond)
	if n := asker.n.Load(); n != 1 {
		t.Fatalf("%d SOA queries, want the primary's one", n)
	}
}

func TestTracker_ABatchOfObjectsWrittenAtOnceSharesOnePrimaryQuery(t *testing.T) {
	primary := newServer(t)
	asker := &counting{}
	tr := startTracker(t, asker, nil, served.Options{FirstCheck: time.Hour, Interval: time.Hour})
	zone := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{primary.addr}}
	primary.put(t, "h.served.test", "192.0.2.1")
	// 100 objects whose write returned together call Written at about the same moment, each
	// with its own time, as the publish code does.
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			ref := served.Ref{Kind: "DNSEndpoint", Key: types.NamespacedName{Namespace: "a", Name: fmt.Sprint(i)}}
			if _, err := tr.Written(context.Background(), zone, ref, time.Time{}, time.Now()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// The exact count depends on scheduling; a few rounds, not one per object.
	if n := asker.n.Load(); n > 10 {
		t.Fatalf("%d primary queries for 100 objects of one batch, want a few", n)
	}
	t.Logf("%d primary queries for 100 objects", asker.n.Load())
}

func TestTracker_ABatchWhosePrimaryDoesNotAnswerSharesOneFailure(t *testing.T) {
	asker := &counting{Client: dnsclient.Client{Timeout: 100 * time.Millisecond}}
	tr := startTracker(t, asker, nil, served.Options{FirstCheck: time.Hour, Interval: time.Hour})
	zone := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{ports.Dead(t)}}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			ref := served.Ref{Kind: "DNSEndpoint", Key: types.NamespacedName{Namespace: "a", Name: fmt.Sprint(i)}}
			if _, err := tr.Written(context.Background(), zone, ref, time.Time{}, time.Now()); err == nil {
				t.Error("Written with a dead primary: no error")
			}
		})
	}
	wg.Wait()
	if n := asker.n.Load(); n > 10 {
		t.Fatalf("%d primary queries for 50 objects of one batch with a dead primary, want a few", n)
	}
}

// A secondary that answers a serial ahead of its primary's serves the zone from elsewhere: it
// does not follow its primary, and the zone's view does not say it does. Past the stale
// deadline it is named Stale.
func TestTracker_AZoneViewDoesNotCountASecondaryAheadOfItsPrimaryAsFollowing(t *testing.T) {
	primary, second := newServer(t), newServer(t)
	second.put(t, "elsewhere.served.test", "192.0.2.9")
	second.put(t, "elsewhere.served.test", "192.0.2.10")
	tr := startTracker(t, &counting{Client: dnsclient.Client{Timeout: time.Second}}, nil,
		served.Options{StaleAfter: 100 * time.Millisecond, FirstCheck: 10 * time.Millisecond, Interval: 20 * time.Millisecond})
	zone := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{primary.addr, second.addr}}
	if v := tr.CheckZone(context.Background(), zone); v.Status == served.StatusServed {
		t.Fatalf("view %+v with the secondary ahead of its primary, want not Served", v)
	}
	time.Sleep(150 * time.Millisecond)
	if v := tr.CheckZone(context.Background(), zone); v.Status != served.StatusStale || len(v.Named) != 1 || v.Named[0].Server != second.addr {
		t.Fatalf("view %+v past the stale deadline, want Stale naming %s", v, second.addr)
	}
}
