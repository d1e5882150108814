package served_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/pkg/served"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// fixedServer is an embedded server on loopback whose zone starts at serial 1,000,000 and
// moves by one per write (its store's clock stands still): servers made with it start at
// the same serial, as a secondary that transferred its primary's zone does.
func fixedServer(t *testing.T) server {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_000_000, 0))
	store := zonedb.NewStore(zonedb.StoreOptions{NameServerAddrs: []netip.Addr{dnstest.Loopback}, Clock: clk})
	if _, err := store.CreateZone(zoneName, zonedb.ZoneMeta{ID: zoneName}); err != nil {
		t.Fatal(err)
	}
	return server{store: store, addr: dnstest.Serve(t, store)}
}

func oneRef(name string) served.Ref {
	return served.Ref{Kind: "DNSEndpoint", Key: types.NamespacedName{Namespace: "a", Name: name}}
}

// quiet fails the test when asker sends any query in d.
func quiet(t *testing.T, asker *counting, d time.Duration, what string) {
	t.Helper()
	before := asker.n.Load()
	time.Sleep(d)
	if n := asker.n.Load() - before; n != 0 {
		t.Fatalf("%d SOA queries in %s %s, want 0", n, d, what)
	}
}

// A write that leaves the primary's serial where it was before the write (PowerDNS with an
// empty SOA-EDIT-API) is not served: no secondary transfers a serial it holds already. The
// change is served once the serial moves past the one read before the write and every server
// answers it.
func TestTracker_AWriteThatDoesNotMoveTheSerialIsNotServedUntilItMoves(t *testing.T) {
	primary, second := fixedServer(t), fixedServer(t)
	tr := startTracker(t, &counting{}, nil, served.Options{FirstCheck: 10 * time.Millisecond, Interval: 50 * time.Millisecond})
	zone := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{primary.addr, second.addr}, SerialMayStay: true}
	ref := oneRef("one")
	before := tr.CheckZone(context.Background(), zone)
	tr.Baseline(context.Background(), zone)
	if before.Status != served.StatusServed {
		t.Fatalf("zone view before the write %+v, want every server following", before)
	}
	submitted := time.Now()
	// The write: the provider acknowledges it, the serial does not move.
	w, err := written(t, tr, zone, ref, submitted, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	_, v, _ := tr.Verdict(zone.Key, ref)
	if v.Status == served.StatusServed {
		t.Fatalf("verdict %+v (want %+v) for a write that left the serial at %d, want not Served", v, w, before.Servers[0].Reading.Serial)
	}
	if msg := served.Describe(w, v.Behind, 3); !strings.Contains(msg, primary.addr) || !strings.Contains(msg, "did not move") {
		t.Fatalf("Describe = %q, want it to say the primary's serial did not move", msg)
	}
	s := primary.put(t, "later.served.test", "192.0.2.9")
	second.catchUp(t, s)
	until(t, tr, zone.Key, ref, served.StatusServed)
}

// Where every change moves the serial (the embedded server, RFC 2136), a write that keeps it
// changed nothing: it is served where it was, not waiting for a move that will not come.
func TestTracker_AWriteThatChangesNothingIsServedWhereTheSerialIs(t *testing.T) {
	primary, second := fixedServer(t), fixedServer(t)
	tr := startTracker(t, &counting{}, nil, served.Options{FirstCheck: 10 * time.Millisecond, Interval: 50 * time.Millisecond})
	zone := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{primary.addr, second.addr}}
	ref := oneRef("one")
	tr.CheckZone(context.Background(), zone)
	tr.Baseline(context.Background(), zone)
	if _, err := written(t, tr, zone, ref, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	until(t, tr, zone.Key, ref, served.StatusServed)
}

// A change gone Stale is not asked for again: a secondary that never catches up costs no query
// once its verdict is Stale, and neither does a zone's view whose secondary is behind past the
// deadline.
func TestTracker_AStaleChangeIsNotAskedForAgain(t *testing.T) {
	primary, second := fixedServer(t), fixedServer(t)
	asker := &counting{}
	tr := startTracker(t, asker, nil, served.Options{FirstCheck: 10 * time.Millisecond, Interval: 40 * time.Millisecond, StaleAfter: 300 * time.Millisecond})
	zone := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{primary.addr, second.addr}}
	ref := oneRef("one")
	tr.CheckZone(context.Background(), zone)
	primary.put(t, "h.served.test", "192.0.2.1")
	if _, err := written(t, tr, zone, ref, time.Now().Add(-time.Millisecond), time.Now()); err != nil {
		t.Fatal(err)
	}
	until(t, tr, zone.Key, ref, served.StatusStale)
	time.Sleep(100 * time.Millisecond) // a check in flight at the deadline ends
	quiet(t, asker, 500*time.Millisecond, "with the change Stale")
	if v := tr.CheckZone(context.Background(), zone); v.Status != served.StatusStale {
		t.Fatalf("zone view %+v, want Stale", v)
	}
	time.Sleep(100 * time.Millisecond)
	quiet(t, asker, 500*time.Millisecond, "with the zone's view Stale")
}

// A secondary removed from a zone while behind is no reason to ask again: the zone's view
// forgets it.
func TestTracker_ASecondaryRemovedWhileBehindIsNotFollowed(t *testing.T) {
	primary, second := fixedServer(t), fixedServer(t)
	asker := &counting{}
	tr := startTracker(t, asker, nil, served.Options{FirstCheck: 10 * time.Millisecond, Interval: 40 * time.Millisecond, StaleAfter: time.Hour})
	both := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{primary.addr, second.addr}}
	primary.put(t, "h.served.test", "192.0.2.1")
	if v := tr.CheckZone(context.Background(), both); v.Status != served.StatusPropagating {
		t.Fatalf("zone view %+v, want the secondary behind", v)
	}
	alone := both
	alone.Servers = []string{primary.addr}
	if v := tr.CheckZone(context.Background(), alone); v.Status != served.StatusServed || len(v.Servers) != 1 {
		t.Fatalf("zone view without the secondary %+v, want the primary alone, following", v)
	}
	time.Sleep(50 * time.Millisecond)
	quiet(t, asker, 400*time.Millisecond, "after the secondary behind was removed")
}

// A secondary that answers a serial ahead of its primary's serves the zone from elsewhere (a
// zone recreated at a lower serial, or a second primary): its serial says nothing of the
// change, and it is not counted as serving it.
func TestTracker_ASecondaryAheadOfItsPrimaryIsNotServed(t *testing.T) {
	primary, second := fixedServer(t), fixedServer(t)
	tr := startTracker(t, &counting{}, nil, served.Options{FirstCheck: 10 * time.Millisecond, Interval: 40 * time.Millisecond, StaleAfter: time.Hour})
	zone := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{primary.addr, second.addr}}
	ref := oneRef("one")
	for range 5 {
		second.put(t, "elsewhere.served.test", "192.0.2.99")
	}
	primary.put(t, "h.served.test", "192.0.2.1")
	w, err := written(t, tr, zone, ref, time.Now().Add(-time.Millisecond), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	_, v, _ := tr.Verdict(zone.Key, ref)
	if v.Status == served.StatusServed || len(v.Behind) != 1 || v.Behind[0].Server != second.addr {
		t.Fatalf("verdict %+v, want %s behind: it is ahead of its primary", v, second.addr)
	}
	if msg := served.Describe(w, v.Behind, 3); !strings.Contains(msg, "ahead of the primary") {
		t.Fatalf("Describe = %q, want it to say the secondary is ahead of the primary", msg)
	}
}

// written records ref's write to zone, submitted at submitted and acknowledged at at.
func written(t *testing.T, tr *served.Tracker, zone served.Zone, ref served.Ref, submitted, at time.Time) (served.Want, error) {
	t.Helper()
	return tr.Written(context.Background(), zone, ref, submitted, at)
}

// insync is a provider.ChangeSync whose one write was acknowledged at second 100 and is in
// sync: its name servers' "serial" is the second before now, after the write's.
type insync struct{}

func (insync) Submitted(string) uint32 { return 100 }
func (insync) InSync(context.Context, string) (uint32, error) {
	return uint32(time.Now().Unix()) - 1, nil
}
func (insync) ChangeSyncName() string { return "Route 53" }

// A zone checked through its provider's change status has no serial line: its name servers'
// "serial" (a second) is after the API's, and that is served, not ahead.
func TestTracker_AChangeStatusZoneIsNotJudgedAhead(t *testing.T) {
	tr := startTracker(t, &counting{}, nil, served.Options{FirstCheck: 10 * time.Millisecond, Interval: 40 * time.Millisecond})
	zone := served.ChangeZone(types.NamespacedName{Namespace: "a", Name: "r53"}, "r53.test", "Z1", insync{})
	ref := oneRef("one")
	tr.Baseline(context.Background(), zone)
	if _, err := written(t, tr, zone, ref, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	until(t, tr, zone.Key, ref, served.StatusServed)
}
