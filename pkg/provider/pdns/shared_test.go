package pdns_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// methodCounter is an http.RoundTripper that counts the requests it sends by method.
type methodCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (c *methodCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n[r.Method]++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

// take returns the counts since the last take and resets them.
func (c *methodCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[string]int{}
	return out
}

// TestRealServer_SingleOwnerChangesAreWrittenWithoutARead pins the cost of ApplyChanges
// against a real PowerDNS, counted at the HTTP client: updates and deletes of sets with one
// writer (Change.Shared false: DNSEndpoint sets and their registry records) cost one PATCH and
// no GET, and replace the set as they come (the one writer's After is the set); creates of sets
// (new claims) cost one GET of their names before the PATCH, which sees that the sets are still
// absent (TestRealServer_ACreateMeetsAnotherOwnersSet); a Shared change (a
// DNSRecord set) keeps read-merge-write, one GET filtered to its name, the PATCH, and the same
// GET again to see that its targets stayed, and keeps a target another writer added meanwhile.
// A Shared Create of a set another writer created meanwhile is refused with ErrConflict, as a
// provider with conditional writes refuses it: the caller re-plans it as an Update.
func TestRealServer_SingleOwnerChangesAreWrittenWithoutARead(t *testing.T) {
	srv := startPDNS(t)
	counter := &methodCounter{next: http.DefaultTransport, n: map[string]int{}}
	p, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key, Timeout: 20 * time.Second,
		HTTPClient: &http.Client{Transport: counter}})
	if err != nil {
		t.Fatal(err)
	}
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "owner.test", CallerReference: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	set := func(name string, targets ...string) *provider.RecordSet {
		return &provider.RecordSet{Name: name + ".owner.test", Type: "A", TTL: 60, Targets: targets}
	}
	reg := func(name string, targets ...string) *provider.RecordSet {
		e := registry.Entry{OwnerID: "c1", Resource: "DNSEndpoint/ns/" + name, Name: name + ".owner.test", Type: "A", TTL: 60, Targets: targets}
		rs := registry.RecordSet("owner.test", e)
		return &rs
	}
	served := func(name string) []string {
		t.Helper()
		sets, err := p.ListRecordSets(ctx(t), z.ID)
		if err != nil {
			t.Fatal(err)
		}
		counter.take()
		for _, rs := range sets {
			if rs.Key() == set(name).Key() {
				out := slices.Clone(rs.Targets)
				slices.Sort(out)
				return out
			}
		}
		return nil
	}
	apply := func(what string, wantGET int, chs ...provider.Change) {
		t.Helper()
		counter.take()
		if err := p.ApplyChanges(ctx(t), z.ID, chs); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := counter.take(); got[http.MethodGet] != wantGET || got[http.MethodPatch] != 1 || len(got) != 1+min(wantGET, 1) {
			t.Fatalf("%s sent %v, want 1 PATCH and %d GET", what, got, wantGET)
		}
	}

	// A first sync: creations of many single-owner sets with their registry records, checked
	// absent by one GET (of the zone: they are at several names).
	var creates []provider.Change
	for _, n := range []string{"a", "b", "c"} {
		creates = append(creates, provider.Change{Action: provider.ActionCreate, After: reg(n, "192.0.2.1")},
			provider.Change{Action: provider.ActionCreate, After: set(n, "192.0.2.1")})
	}
	apply("single-owner creates", 1, creates...)
	if got := served("b"); !slices.Equal(got, []string{"192.0.2.1"}) {
		t.Fatalf("b = %q, want [192.0.2.1]", got)
	}

	// An update and a delete of single-owner sets: REPLACE and DELETE as they come, no read.
	apply("single-owner update and delete", 0,
		provider.Change{Action: provider.ActionUpdate, Before: set("a", "192.0.2.1"), After: set("a", "192.0.2.2", "192.0.2.3")},
		provider.Change{Action: provider.ActionDelete, Before: set("c", "192.0.2.1")})
	if got := served("a"); !slices.Equal(got, []string{"192.0.2.2", "192.0.2.3"}) {
		t.Fatalf("a = %q, want [192.0.2.2 192.0.2.3]", got)
	}
	if got := served("c"); got != nil {
		t.Fatalf("c = %q, want deleted", got)
	}

	// A shared set keeps read-merge-write: a target another writer added after our read stays.
	apply("another writer's shared create", 2, provider.Change{Action: provider.ActionCreate, After: set("s", "192.0.2.9"), Shared: true})
	counter.take()
	err = p.ApplyChanges(ctx(t), z.ID, []provider.Change{{Action: provider.ActionCreate, After: set("s", "192.0.2.1"), Shared: true}})
	if got := counter.take(); !errors.Is(err, provider.ErrConflict) || got[http.MethodGet] != 1 || len(got) != 1 {
		t.Fatalf("a shared create from a view without the set: %v, sent %v; want ErrConflict after 1 GET and no PATCH", err, got)
	}
	apply("the same target, re-planned as an update from a fresh read", 2,
		provider.Change{Action: provider.ActionUpdate, Before: set("s", "192.0.2.9"), After: set("s", "192.0.2.1", "192.0.2.9"), Shared: true})
	apply("another writer's target added after that read", 2,
		provider.Change{Action: provider.ActionUpdate, Before: set("s", "192.0.2.1", "192.0.2.9"), After: set("s", "192.0.2.1", "192.0.2.8", "192.0.2.9"), Shared: true})
	apply("an update from a view without the other writer's target", 2,
		provider.Change{Action: provider.ActionUpdate, Before: set("s", "192.0.2.1", "192.0.2.9"), After: set("s", "192.0.2.1", "192.0.2.7", "192.0.2.9"), Shared: true})
	if got := served("s"); !slices.Equal(got, []string{"192.0.2.1", "192.0.2.7", "192.0.2.8", "192.0.2.9"}) {
		t.Fatalf("s = %q, want every writer's targets", got)
	}
}

// afterPatch is an http.RoundTripper that runs then, once, right after the first PATCH it sent
// got its answer, before the caller reads that answer.
type afterPatch struct {
	mu   sync.Mutex
	then func()
}

func (a *afterPatch) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == http.MethodPatch {
		a.mu.Lock()
		then := a.then
		a.then = nil
		a.mu.Unlock()
		if then != nil {
			then()
		}
	}
	return resp, err
}

// TestRealServer_LostUpdateIsSeenByTheReadAfterThePATCH: PowerDNS has no
// conditional write, so another writer's read-merge-write that read a shared set before this
// writer's PATCH and writes after it drops this writer's target. On a real PowerDNS, that other
// PATCH is sent right after ours lands: ApplyChanges fails with provider.ErrConflict naming the
// lost target (its own PATCH landed, the re-read after it misses the target), so the caller
// writes again at once; the second write, merged onto the fresh set, keeps both writers' targets.
func TestRealServer_LostUpdateIsSeenByTheReadAfterThePATCH(t *testing.T) {
	srv := startPDNS(t)
	hook := &afterPatch{}
	p, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key, Timeout: 20 * time.Second, HTTPClient: &http.Client{Transport: hook}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "lost.test", CallerReference: "lost"})
	if err != nil {
		t.Fatal(err)
	}
	set := func(targets ...string) *provider.RecordSet {
		return &provider.RecordSet{Name: "app.lost.test", Type: "A", TTL: 60, Targets: targets}
	}
	served := func() []string {
		t.Helper()
		sets, err := other.ListRecordSets(ctx(t), z.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, rs := range sets {
			if rs.Key() == set().Key() {
				out := slices.Clone(rs.Targets)
				slices.Sort(out)
				return out
			}
		}
		return nil
	}
	if err := other.ApplyChanges(ctx(t), z.ID, []provider.Change{{Action: provider.ActionCreate, After: set("192.0.2.9"), Shared: true}}); err != nil {
		t.Fatal(err)
	}
	// The other writer read the set as [192.0.2.9] and adds 192.0.2.8: what its read-merge-write
	// PATCHes, a REPLACE of the set as it read it, lands right after our PATCH.
	hook.then = func() {
		if err := other.ApplyChanges(ctx(t), z.ID, []provider.Change{{Action: provider.ActionUpdate, Before: set("192.0.2.9"), After: set("192.0.2.8", "192.0.2.9")}}); err != nil {
			t.Errorf("the other writer's stale write: %v", err)
		}
	}
	err = p.ApplyChanges(ctx(t), z.ID, []provider.Change{{Action: provider.ActionUpdate, Before: set("192.0.2.9"), After: set("192.0.2.1", "192.0.2.9"), Shared: true}})
	if !errors.Is(err, provider.ErrConflict) || !strings.Contains(err.Error(), "192.0.2.1") {
		t.Fatalf("a write whose target was dropped right after its PATCH: %v; want ErrConflict naming 192.0.2.1", err)
	}
	if got := served(); !slices.Equal(got, []string{"192.0.2.8", "192.0.2.9"}) {
		t.Fatalf("after the lost update: %q, want [192.0.2.8 192.0.2.9] (the test's race did not happen)", got)
	}
	// The caller re-plans from a fresh read and writes again.
	if err := p.ApplyChanges(ctx(t), z.ID, []provider.Change{{Action: provider.ActionUpdate, Before: set("192.0.2.8", "192.0.2.9"), After: set("192.0.2.1", "192.0.2.8", "192.0.2.9"), Shared: true}}); err != nil {
		t.Fatalf("the write again: %v", err)
	}
	if got := served(); !slices.Equal(got, []string{"192.0.2.1", "192.0.2.8", "192.0.2.9"}) {
		t.Fatalf("after the write again: %q, want every writer's target", got)
	}
}
