package pdns_test

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// TestRealServer_ACreateMeetsAnotherOwnersSet: PowerDNS has no conditional
// write, so ApplyChanges reads the names of the sets it creates just before its PATCH. A Create
// of a set another owner created after the caller's read (here external-dns: its registry TXT
// and its set in one PATCH) fails with provider.ErrConflict, Shared or not, and nothing of the
// call is written: the other owner's set keeps its value and the caller's registry record does
// not land. Counted at the HTTP client, per call: 1 GET (filtered to the name when the Creates
// are at one name, else of the whole zone) before the 1 PATCH; none for Updates, Deletes and
// registry records (the zero-read spec change and heartbeat).
func TestRealServer_ACreateMeetsAnotherOwnersSet(t *testing.T) {
	srv := startPDNS(t)
	counter := &methodCounter{next: http.DefaultTransport, n: map[string]int{}}
	p, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key, Timeout: 20 * time.Second, HTTPClient: &http.Client{Transport: counter}})
	if err != nil {
		t.Fatal(err)
	}
	ext := newProvider(t, srv, srv.Key)
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "claim.test", CallerReference: "claim"})
	if err != nil {
		t.Fatal(err)
	}
	set := func(name string, targets ...string) *provider.RecordSet {
		return &provider.RecordSet{Name: name + ".claim.test", Type: "A", TTL: 60, Targets: targets}
	}
	reg := func(name string, targets ...string) *provider.RecordSet {
		e := registry.Entry{OwnerID: "c1", Resource: "DNSEndpoint/ns/" + name, Name: name + ".claim.test", Type: "A", TTL: 60, Targets: targets}
		rs := registry.RecordSet("claim.test", e)
		return &rs
	}
	create := func(rs *provider.RecordSet) provider.Change {
		return provider.Change{Action: provider.ActionCreate, After: rs}
	}
	zone := func() map[provider.RecordSetKey][]string {
		t.Helper()
		sets, err := ext.ListRecordSets(ctx(t), z.ID)
		if err != nil {
			t.Fatal(err)
		}
		out := map[provider.RecordSetKey][]string{}
		for _, rs := range sets {
			out[rs.Key()] = slices.Sorted(slices.Values(rs.Targets))
		}
		return out
	}
	// externalDNS writes what external-dns writes for name: its registry TXT and its set.
	externalDNS := func(name string) {
		t.Helper()
		txt := provider.RecordSet{Name: "a-" + name + ".claim.test", Type: "TXT", TTL: 300,
			Targets: []string{"heritage=external-dns,external-dns/owner=ext,external-dns/resource=service/default/" + name}}
		if err := ext.ApplyChanges(ctx(t), z.ID, []provider.Change{create(&txt), create(set(name, "198.51.100.7"))}); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name    string
		claimed []string // names external-dns claims after the caller's read
		changes []provider.Change
		// conflict: the create of this set fails the call; "" the call succeeds.
		conflict string
		sent     map[string]int
	}{
		{name: "a new name, one set: the GET is filtered to it",
			changes: []provider.Change{create(reg("one", "192.0.2.1")), create(set("one", "192.0.2.1"))},
			sent:    map[string]int{http.MethodGet: 1, http.MethodPatch: 1}},
		{name: "new names, several: one GET of the zone",
			changes: []provider.Change{create(reg("two", "192.0.2.1")), create(set("two", "192.0.2.1")),
				create(reg("three", "192.0.2.1")), create(set("three", "192.0.2.1"))},
			sent: map[string]int{http.MethodGet: 1, http.MethodPatch: 1}},
		{name: "external-dns claimed the name after the caller's read: refused, nothing sent",
			claimed:  []string{"www"},
			changes:  []provider.Change{create(reg("www", "192.0.2.1")), create(set("www", "192.0.2.1"))},
			conflict: "www.claim.test/A", sent: map[string]int{http.MethodGet: 1}},
		{name: "a shared create of external-dns' set: refused too, not merged",
			claimed:  []string{"shared"},
			changes:  []provider.Change{create(reg("shared", "192.0.2.1")), {Action: provider.ActionCreate, After: set("shared", "192.0.2.1"), Shared: true}},
			conflict: "shared.claim.test/A", sent: map[string]int{http.MethodGet: 1}},
		{name: "one claimed name among free ones fails the whole call",
			claimed:  []string{"mixed"},
			changes:  []provider.Change{create(set("free", "192.0.2.1")), create(set("mixed", "192.0.2.1"))},
			conflict: "mixed.claim.test/A", sent: map[string]int{http.MethodGet: 1}},
		{name: "a spec change of a held set: no read",
			changes: []provider.Change{{Action: provider.ActionUpdate, Before: set("one", "192.0.2.1"), After: set("one", "192.0.2.2")},
				{Action: provider.ActionUpdate, Before: reg("one", "192.0.2.1"), After: reg("one", "192.0.2.2")}},
			sent: map[string]int{http.MethodPatch: 1}},
		{name: "a heartbeat (a registry record created or updated): no read",
			changes: []provider.Change{create(reg("four", "192.0.2.4"))},
			sent:    map[string]int{http.MethodPatch: 1}},
		{name: "a set deleted and created again in one call: the earlier change wrote it",
			changes: []provider.Change{{Action: provider.ActionDelete, Before: set("two", "192.0.2.1")}, create(set("two", "192.0.2.5"))},
			sent:    map[string]int{http.MethodGet: 1, http.MethodPatch: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range tc.claimed {
				externalDNS(n)
			}
			before := zone()
			counter.take()
			err := p.ApplyChanges(ctx(t), z.ID, tc.changes)
			sent := counter.take()
			t.Logf("sent %v", sent)
			if tc.conflict == "" && err != nil {
				t.Fatalf("ApplyChanges: %v", err)
			}
			if tc.conflict != "" && (!errors.Is(err, provider.ErrConflict) || !strings.Contains(err.Error(), tc.conflict)) {
				t.Fatalf("ApplyChanges = %v; want ErrConflict naming %s", err, tc.conflict)
			}
			if len(sent) != len(tc.sent) || sent[http.MethodGet] != tc.sent[http.MethodGet] || sent[http.MethodPatch] != tc.sent[http.MethodPatch] {
				t.Errorf("sent %v, want %v", sent, tc.sent)
			}
			after := zone()
			if tc.conflict != "" {
				if !maps.EqualFunc(before, after, slices.Equal) {
					t.Errorf("a refused call changed the zone:\nbefore %v\nafter  %v", before, after)
				}
				return
			}
			for _, ch := range tc.changes {
				if ch.After != nil && !registry.IsRegistryName(ch.After.Name) && !slices.Equal(after[ch.After.Key()], ch.After.Targets) {
					t.Errorf("%s = %v, want %v", ch.After.Key(), after[ch.After.Key()], ch.After.Targets)
				}
			}
		})
	}
}

// failingPatches fails every PATCH with a transport error while on is set (the request is not
// sent), and passes everything else to next.
type failingPatches struct {
	next http.RoundTripper
	on   atomic.Bool
}

func (f *failingPatches) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.on.Load() && r.Method == http.MethodPatch {
		return nil, errors.New("connection reset (test)")
	}
	return f.next.RoundTrip(r)
}

// TestRealServer_ACreateIsCheckedAgainstARecentRead (calls at the floor): with
// Config.ClaimReadMaxAge set, a write that creates sets checks their absence against the
// provider's last whole-zone read of the zone while it is that young (plus the provider's own
// writes since), and sends no GET of its own; a set that read holds still fails the Create with
// ErrConflict and nothing sent. A failed PATCH drops the read, a read older than the age is not
// used, and a change applied by read-merge-write (a Shared set) always reads. The age here is an
// hour, or a nanosecond, so that no step depends on the machine's speed.
func TestRealServer_ACreateIsCheckedAgainstARecentRead(t *testing.T) {
	srv := startPDNS(t)
	ext := newProvider(t, srv, srv.Key)
	z, err := ext.EnsureZone(ctx(t), provider.ZoneSpec{Name: "recent.test", CallerReference: "recent"})
	if err != nil {
		t.Fatal(err)
	}
	set := func(name string, targets ...string) *provider.RecordSet {
		return &provider.RecordSet{Name: name + ".recent.test", Type: "A", TTL: 60, Targets: targets}
	}
	create := func(rs *provider.RecordSet) provider.Change {
		return provider.Change{Action: provider.ActionCreate, After: rs}
	}
	if err := ext.ApplyChanges(ctx(t), z.ID, []provider.Change{create(set("held", "198.51.100.7"))}); err != nil {
		t.Fatal(err)
	}
	newCounted := func(age time.Duration) (*pdns.Provider, *methodCounter, *failingPatches) {
		fail := &failingPatches{next: http.DefaultTransport}
		counter := &methodCounter{next: fail, n: map[string]int{}}
		p, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key, Timeout: 20 * time.Second,
			HTTPClient: &http.Client{Transport: counter}, ClaimReadMaxAge: age})
		if err != nil {
			t.Fatal(err)
		}
		return p, counter, fail
	}
	expect := func(t *testing.T, counter *methodCounter, want map[string]int) {
		t.Helper()
		if got := counter.take(); !maps.Equal(got, want) {
			t.Errorf("sent %v, want %v", got, want)
		}
	}

	p, counter, fail := newCounted(time.Hour)
	if _, _, err := p.ReadZone(ctx(t), z.ID); err != nil {
		t.Fatal(err)
	}
	expect(t, counter, map[string]int{http.MethodGet: 1})

	// Two writes of new names after the read: no GET, each one PATCH (the second checks against
	// the read with the first write applied).
	for _, names := range [][]string{{"a1", "a2"}, {"b1", "b2"}} {
		if err := p.ApplyChanges(ctx(t), z.ID, []provider.Change{create(set(names[0], "192.0.2.1")), create(set(names[1], "192.0.2.1"))}); err != nil {
			t.Fatalf("create %v: %v", names, err)
		}
		expect(t, counter, map[string]int{http.MethodPatch: 1})
	}
	// A Create of a set the read held: refused, nothing sent.
	err = p.ApplyChanges(ctx(t), z.ID, []provider.Change{create(set("c1", "192.0.2.1")), create(set("held", "192.0.2.1"))})
	if !errors.Is(err, provider.ErrConflict) || !strings.Contains(err.Error(), "held.recent.test/A") {
		t.Fatalf("create of a held set = %v; want ErrConflict naming it", err)
	}
	expect(t, counter, map[string]int{})
	// A Create of a set this provider wrote since the read (a1): refused too.
	if err := p.ApplyChanges(ctx(t), z.ID, []provider.Change{create(set("a1", "192.0.2.9"))}); !errors.Is(err, provider.ErrConflict) {
		t.Fatalf("create of a set written since the read = %v; want ErrConflict", err)
	}
	expect(t, counter, map[string]int{})
	// A Shared change is applied by read-merge-write: it reads, fresh read or not.
	if err := p.ApplyChanges(ctx(t), z.ID, []provider.Change{{Action: provider.ActionCreate, After: set("shared1", "192.0.2.1"), Shared: true}, create(set("shared2", "192.0.2.1"))}); err != nil {
		t.Fatal(err)
	}
	expect(t, counter, map[string]int{http.MethodGet: 2, http.MethodPatch: 1}) // merge's read, verify's read
	// A PATCH that fails drops the read: the next Create reads before it writes.
	fail.on.Store(true)
	if err := p.ApplyChanges(ctx(t), z.ID, []provider.Change{create(set("d1", "192.0.2.1")), create(set("d2", "192.0.2.1"))}); err == nil {
		t.Fatal("a PATCH that failed in transport returned no error")
	}
	fail.on.Store(false)
	counter.take()
	if err := p.ApplyChanges(ctx(t), z.ID, []provider.Change{create(set("e1", "192.0.2.1")), create(set("e2", "192.0.2.1"))}); err != nil {
		t.Fatal(err)
	}
	expect(t, counter, map[string]int{http.MethodGet: 1, http.MethodPatch: 1})
	// That GET was of the whole zone: it is the next write's read.
	if err := p.ApplyChanges(ctx(t), z.ID, []provider.Change{create(set("f1", "192.0.2.1"))}); err != nil {
		t.Fatal(err)
	}
	expect(t, counter, map[string]int{http.MethodPatch: 1})

	// A read older than the age is not used: every Create reads.
	old, oldCounter, _ := newCounted(time.Nanosecond)
	if _, err := old.ListRecordSets(ctx(t), z.ID); err != nil {
		t.Fatal(err)
	}
	oldCounter.take()
	if err := old.ApplyChanges(ctx(t), z.ID, []provider.Change{create(set("g1", "192.0.2.1")), create(set("g2", "192.0.2.1"))}); err != nil {
		t.Fatal(err)
	}
	expect(t, oldCounter, map[string]int{http.MethodGet: 1, http.MethodPatch: 1})

	// The window this buys, stated: a set another owner creates after the read and before the
	// write is not seen by a check against the read (it is by a GET; see
	// TestRealServer_ACreateMeetsAnotherOwnersSet).
	fresh, freshCounter, _ := newCounted(time.Hour)
	if _, _, err := fresh.ReadZone(ctx(t), z.ID); err != nil {
		t.Fatal(err)
	}
	if err := ext.ApplyChanges(ctx(t), z.ID, []provider.Change{create(set("late", "198.51.100.8"))}); err != nil {
		t.Fatal(err)
	}
	freshCounter.take()
	if err := fresh.ApplyChanges(ctx(t), z.ID, []provider.Change{create(set("late", "192.0.2.1"))}); err != nil {
		t.Fatalf("create within the window: %v", err)
	}
	expect(t, freshCounter, map[string]int{http.MethodPatch: 1})
}
