package zonewriter_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// lockingProxy stands in front of a real PowerDNS API as its sqlite backend behaves under
// concurrent writes: a PATCH that arrives while another is in flight is answered HTTP 500
// "database is locked", and so are the next outage PATCHes whatever else is in flight (another
// client holding the lock). It counts every request it sees.
type lockingProxy struct {
	next http.Handler

	mu           sync.Mutex
	patching     int // PATCHes in flight at PowerDNS
	maxPatching  int
	outage       int // PATCHes still to answer 500
	counts       map[string]int
	locked       int // 500s answered
	zoneListings int // GETs of a whole zone (no rrset_name)
}

func newLockingProxy(t *testing.T, target string) (*lockingProxy, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	lp := &lockingProxy{next: httputil.NewSingleHostReverseProxy(u), counts: map[string]int{}}
	ts := httptest.NewServer(lp)
	t.Cleanup(ts.Close)
	return lp, ts.URL
}

func (lp *lockingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lp.mu.Lock()
	lp.counts[r.Method]++
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/zones/") && !r.URL.Query().Has("rrset_name") {
		lp.zoneListings++
	}
	if r.Method != http.MethodPatch {
		lp.mu.Unlock()
		lp.next.ServeHTTP(w, r)
		return
	}
	if lp.patching > 0 || lp.outage > 0 {
		lp.outage = max(lp.outage-1, 0)
		lp.locked++
		lp.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error": "Updating RRsets: database is locked"}`)
		return
	}
	lp.patching++
	lp.maxPatching = max(lp.maxPatching, lp.patching)
	lp.mu.Unlock()
	lp.next.ServeHTTP(w, r)
	lp.mu.Lock()
	lp.patching--
	lp.mu.Unlock()
}

type proxyFigures struct {
	requests, gets, patches, locked, zoneListings, maxPatching int
	reads                                                      int // the writers' reads of a whole zone (ListRecordSets), attempts included
}

func (lp *lockingProxy) figures() proxyFigures {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	n := 0
	for _, c := range lp.counts {
		n += c
	}
	return proxyFigures{requests: n, gets: lp.counts[http.MethodGet], patches: lp.counts[http.MethodPatch],
		locked: lp.locked, zoneListings: lp.zoneListings, maxPatching: lp.maxPatching}
}

// stormRun writes perZone record sets into each of zones fresh PowerDNS zones through one
// zonewriter.Set over the guarded pdns provider behind a lockingProxy, as reconcilers do: every
// set its own submission, all at once, each submitter retrying its own error after a pause. It
// returns the proxy's figures once every set is served by PowerDNS.
func stormRun(t *testing.T, srv pdnstest.Server, run string, zones, perZone, outage, writesInFlight int) proxyFigures {
	t.Helper()
	ctx := ctxT(t)
	direct, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range zones {
		z, err := direct.EnsureZone(ctx, provider.ZoneSpec{Name: fmt.Sprintf("z%d.%s.storm.test", i, run), CallerReference: run})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, z.ID)
	}
	lp, proxyURL := newLockingProxy(t, srv.APIURL)
	lp.outage = outage
	inner, err := pdns.New(pdns.Config{APIURL: proxyURL, APIKey: srv.Key, MaxWritesInFlight: writesInFlight})
	if err != nil {
		t.Fatal(err)
	}
	counted := counting.Wrap(inner, "pdns", nil)
	p := guard.New(counted, guard.Options{BaseDelay: 20 * time.Millisecond, MaxDelay: 500 * time.Millisecond})
	set := zonewriter.NewSet(ctx, zonewriter.Options{})
	var wg sync.WaitGroup
	for zi, id := range ids {
		w := set.For(zonewriter.Key{Account: "ns/pdns", ZoneID: id}, p)
		for j := range perZone {
			rs := aSet(fmt.Sprintf("h%d.%s", j, dnswire.Dotless(id)), fmt.Sprintf("192.0.2.%d", zi+1))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for attempt := 0; ; attempt++ {
					err := w.Apply(ctx, []provider.Change{create(rs)})
					if err == nil {
						return
					}
					if attempt == 20 || ctx.Err() != nil {
						t.Errorf("%s: %v (attempt %d)", rs.Name, err, attempt)
						return
					}
					time.Sleep(50 * time.Millisecond) // the reconciler's requeue
				}
			}()
		}
	}
	wg.Wait()
	for zi, id := range ids {
		sets, err := direct.ListRecordSets(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, rs := range sets {
			if rs.Type == "A" && len(rs.Targets) == 1 && rs.Targets[0] == fmt.Sprintf("192.0.2.%d", zi+1) {
				n++
			}
		}
		if n != perZone {
			t.Errorf("%s: zone %s holds %d of the %d sets", run, id, n, perZone)
		}
	}
	f := lp.figures()
	f.reads = counted.Counts()[counting.OpListRecordSets]
	t.Logf("%s (%d zones x %d submissions, outage %d PATCHes, %d writes in flight allowed): %d requests (%d GET, %d PATCH), %d answered 500, %d whole-zone GETs (%d of them the writers' reads), at most %d PATCHes in flight",
		run, zones, perZone, outage, writesInFlight, f.requests, f.gets, f.patches, f.locked, f.zoneListings, f.reads, f.maxPatching)
	return f
}

// TestSet_PowerDNSBusyUnderConcurrentWrites_RequestsStayBounded: the storm
// at 50k endpoints started with PowerDNS on sqlite answering 500 "database is locked" to
// overlapping PATCHes, and each failure was retried per submission, each with a read of the
// whole zone. Against a real PowerDNS behind a proxy that answers 500 to any PATCH that
// overlaps another (and to the first ones, an outage), the writers of one account send one
// PATCH at a time, back the 500s off, converge once the server recovers, and spend at most 2x
// the requests of a clean run, with no per-submission re-read of a zone.
func TestSet_PowerDNSBusyUnderConcurrentWrites_RequestsStayBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PowerDNS")
	}
	srv := pdnstest.Start(t)
	const zones, perZone = 5, 40
	clean := stormRun(t, srv, "clean", zones, perZone, 0, 0)
	if clean.locked != 0 || clean.maxPatching != 1 {
		t.Fatalf("clean run: %d answered 500, %d PATCHes in flight at once; want 0 and 1", clean.locked, clean.maxPatching)
	}
	busy := stormRun(t, srv, "busy", zones, perZone, zones, 0)
	if busy.requests > 2*clean.requests {
		t.Errorf("busy run: %d requests, more than 2x the clean run's %d", busy.requests, clean.requests)
	}
	if busy.locked != zones || busy.maxPatching != 1 {
		t.Errorf("busy run: %d answered 500 (want only the %d of the outage), %d PATCHes in flight at once (want 1)", busy.locked, zones, busy.maxPatching)
	}
	// Even a server that takes several writes at once (PDNS_MAX_WRITES_IN_FLIGHT raised, but
	// still locking here) costs a bounded number of requests: every 500 is backed off and never
	// split into one retry, and one zone read, per submission.
	parallel := stormRun(t, srv, "parallel", zones, perZone, zones, zones)
	if parallel.reads > 2*zones {
		t.Errorf("parallel run: the writers read a whole zone %d times for %d zones; want at most 2 per zone (no re-read per submission)", parallel.reads, zones)
	}
	if clean.reads != zones || busy.reads > 2*zones {
		t.Errorf("the writers read whole zones %d times clean and %d times busy, for %d zones; want %d and at most %d", clean.reads, busy.reads, zones, zones, 2*zones)
	}
	if parallel.patches-parallel.locked > zones*perZone/4 {
		t.Errorf("parallel run: %d accepted PATCHes for %d submissions: submissions were sent alone", parallel.patches-parallel.locked, zones*perZone)
	}
}
