package scraper_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/scraper"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

var (
	parentKey = types.NamespacedName{Namespace: "dns-system", Name: "root"}
	childKey  = types.NamespacedName{Namespace: "team-a", Name: "c1"}
	linkKey   = types.NamespacedName{Namespace: "team-a", Name: "c1-parent-link"}
)

type fixture struct {
	p      *counting.Provider
	writer *zonewriter.Writer
	s      *scraper.Scraper
}

func setup(t *testing.T, parentZoneID string, rl workqueue.TypedRateLimiter[types.NamespacedName]) fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	store := zonedb.NewStore(zonedb.StoreOptions{})
	p := counting.Wrap(local.New(store, local.Options{}), "local", nil)
	if _, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "example.test", CallerReference: "root"}); err != nil {
		t.Fatal(err)
	}
	w := zonewriter.New(ctx, p, parentZoneID, zonewriter.Options{})
	s := scraper.New(scraper.Options{Interval: time.Hour, RateLimiter: rl})
	done := make(chan struct{})
	go func() { _ = s.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return fixture{p: p, writer: w, s: s}
}

func (f fixture) register() {
	f.s.Register(scraper.Parent{Key: parentKey, Zone: "example.test", Lister: f.writer},
		scraper.Child{Key: childKey, Zone: "c1.example.test", Want: []string{"ns2.c1.example.test", "ns1.c1.example.test"}, Link: linkKey})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testrun.HangTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, testrun.HangTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestScraper_SeedScrapesAtOnceAndNotifiesRepair(t *testing.T) {
	f := setup(t, "example.test", nil)
	f.register()
	// The parent lacks the delegation: the first scrape reports not linked, asks the
	// DNSEndpoint controller to re-publish the link, and tells the DNSZone controller.
	select {
	case ev := <-f.s.LinkEvents:
		if ev.Key != linkKey {
			t.Fatalf("link event for %s", ev.Key)
		}
	case <-time.After(testrun.HangTimeout):
		t.Fatal("no repair event after the seed scrape")
	}
	if ev := <-f.s.ZoneEvents; ev.Key != childKey {
		t.Fatalf("zone event for %s", ev.Key)
	}
	if linked, _, ok := f.s.Linked(childKey); !ok || linked {
		t.Fatalf("Linked = %t, %t; want scraped and not linked", linked, ok)
	}

	ns := &provider.RecordSet{Name: "c1.example.test", Type: "NS", TTL: 3600, Targets: []string{"ns1.c1.example.test", "ns2.c1.example.test"}}
	if err := f.writer.Apply(context.Background(), []provider.Change{{Action: provider.ActionCreate, After: ns}}); err != nil {
		t.Fatal(err)
	}
	f.p.Reset()
	f.s.Rescrape(childKey)
	waitFor(t, "linked after the delegation was written", func() bool {
		linked, _, _ := f.s.Linked(childKey)
		return linked
	})
	if ev := <-f.s.ZoneEvents; ev.Key != childKey {
		t.Fatalf("zone event for %s", ev.Key)
	}
	if got := f.p.Counts()[counting.OpListRecordSets]; got != 1 {
		t.Fatalf("one scrape cost %d listings, want 1", got)
	}
}

func TestScraper_ReRegisteringTheSameChildDoesNotScrape(t *testing.T) {
	f := setup(t, "example.test", nil)
	f.register()
	waitFor(t, "first scrape", func() bool { _, _, ok := f.s.Linked(childKey); return ok })
	f.p.Reset()
	for range 5 {
		f.register()
	}
	time.Sleep(200 * time.Millisecond)
	if got := f.p.Counts()[counting.OpListRecordSets]; got != 0 {
		t.Fatalf("re-registering an unchanged child scraped %d times", got)
	}
}

// countingLimiter records how often a failed scrape was retried, with no delay.
type countingLimiter struct{ failures chan int }

func (c countingLimiter) When(types.NamespacedName) time.Duration {
	select {
	case c.failures <- 1:
	default:
	}
	return 10 * time.Millisecond
}
func (countingLimiter) Forget(types.NamespacedName)          {}
func (countingLimiter) NumRequeues(types.NamespacedName) int { return 0 }

func TestScraper_FailedScrapeGoesToTheRateLimiter(t *testing.T) {
	rl := countingLimiter{failures: make(chan int, 10)}
	f := setup(t, "missing.test", rl) // the writer reads a zone that does not exist
	f.register()
	select {
	case <-rl.failures:
	case <-time.After(testrun.HangTimeout):
		t.Fatal("a failed scrape was not retried through the rate limiter")
	}
	if _, _, ok := f.s.Linked(childKey); ok {
		t.Fatal("a failed scrape reported a result")
	}
}

// TestScraper_LinkedNeedsTheWantedGlue: a child that wants glue is linked only once the parent
// serves its NS set and exactly the wanted A/AAAA sets below the cut; a changed glue set
// registers as a change and is scraped at once.
func TestScraper_LinkedNeedsTheWantedGlue(t *testing.T) {
	f := setup(t, "example.test", nil)
	want := []string{"ns1.c1.example.test"}
	glue := []provider.RecordSet{{Name: "ns1.c1.example.test", Type: "A", TTL: 3600, Targets: []string{"192.0.2.53"}}}
	register := func(glue []provider.RecordSet) {
		f.s.Register(scraper.Parent{Key: parentKey, Zone: "example.test", Lister: f.writer},
			scraper.Child{Key: childKey, Zone: "c1.example.test", Want: want, Glue: glue, Link: linkKey})
	}
	apply := func(chs ...provider.Change) {
		t.Helper()
		if err := f.writer.Apply(context.Background(), chs); err != nil {
			t.Fatal(err)
		}
	}
	apply(provider.Change{Action: provider.ActionCreate, After: &provider.RecordSet{Name: "c1.example.test", Type: "NS", TTL: 3600, Targets: want}})
	register(glue)
	waitFor(t, "first scrape", func() bool { _, _, ok := f.s.Linked(childKey); return ok })
	if linked, _, _ := f.s.Linked(childKey); linked {
		t.Fatal("linked although the parent has the NS set but not the glue")
	}
	apply(provider.Change{Action: provider.ActionCreate, After: &glue[0]})
	f.s.Rescrape(childKey)
	waitFor(t, "linked once the glue is served", func() bool { linked, _, _ := f.s.Linked(childKey); return linked })

	// New glue for the same name: a changed registration, scraped at once; not linked until the
	// parent serves it.
	glue2 := []provider.RecordSet{{Name: "ns1.c1.example.test", Type: "A", TTL: 3600, Targets: []string{"192.0.2.54"}}}
	f.p.Reset()
	register(glue2)
	waitFor(t, "the changed glue is scraped", func() bool { return f.p.Counts()[counting.OpListRecordSets] > 0 })
	if linked, _, _ := f.s.Linked(childKey); linked {
		t.Fatal("linked although the parent serves the old glue")
	}
}
