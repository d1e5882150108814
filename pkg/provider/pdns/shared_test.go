package pdns_test

import (
	"net/http"
	"slices"
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
// against a real PowerDNS, counted at the HTTP client: changes to sets with one writer
// (Change.Shared false: DNSEndpoint sets and their registry records) cost one PATCH and no
// GET, and replace the set as they come (the one writer's After is the set); a Shared change
// (a DNSRecord set) keeps read-merge-write, one GET filtered to its name then the PATCH, and
// keeps a target another writer added meanwhile.
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

	// A first sync: creations of many single-owner sets with their registry records.
	var creates []provider.Change
	for _, n := range []string{"a", "b", "c"} {
		creates = append(creates, provider.Change{Action: provider.ActionCreate, After: reg(n, "192.0.2.1")},
			provider.Change{Action: provider.ActionCreate, After: set(n, "192.0.2.1")})
	}
	apply("single-owner creates", 0, creates...)
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
	apply("another writer's shared create", 1, provider.Change{Action: provider.ActionCreate, After: set("s", "192.0.2.9"), Shared: true})
	apply("a shared create from a view without the set", 1, provider.Change{Action: provider.ActionCreate, After: set("s", "192.0.2.1"), Shared: true})
	if got := served("s"); !slices.Equal(got, []string{"192.0.2.1", "192.0.2.9"}) {
		t.Fatalf("s = %q, want both writers' targets", got)
	}
}
