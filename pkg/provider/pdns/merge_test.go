package pdns_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// TestRealServer_StaleWritersKeepEachOthersTargets pins read-merge-write
// against a real PowerDNS: writers of a shared set (Change.Shared) whose
// Before is stale (they read the set before another writer changed it) add
// and remove only their own targets.
func TestRealServer_StaleWritersKeepEachOthersTargets(t *testing.T) {
	srv := startPDNS(t)
	p := newProvider(t, srv, srv.Key)
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "merge.test", CallerReference: "merge"})
	if err != nil {
		t.Fatal(err)
	}
	a := func(targets ...string) provider.RecordSet {
		return provider.RecordSet{Name: "app.merge.test", Type: "A", TTL: 60, Targets: targets}
	}
	apply := func(chs ...provider.Change) {
		t.Helper()
		if err := p.ApplyChanges(ctx(t), z.ID, chs); err != nil {
			t.Fatal(err)
		}
	}
	served := func() []string {
		t.Helper()
		sets, err := p.ListRecordSets(ctx(t), z.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, rs := range sets {
			if rs.Key() == a().Key() {
				out := slices.Clone(rs.Targets)
				slices.Sort(out)
				return out
			}
		}
		return nil
	}
	expect := func(want ...string) {
		t.Helper()
		if got := served(); !slices.Equal(got, want) {
			t.Fatalf("app.merge.test A = %q, want %q", got, want)
		}
	}

	// Two writers create the set "at once": both saw no set. The second Create meets the first
	// one's set and is refused (ErrConflict, nothing written), as on a provider with conditional
	// writes: a set created since the read may be another owner's. Its writer
	// re-reads and joins with an Update.
	apply(provider.Change{Action: provider.ActionCreate, After: ptr(a("192.0.2.1")), Shared: true})
	if err := p.ApplyChanges(ctx(t), z.ID, []provider.Change{{Action: provider.ActionCreate, After: ptr(a("192.0.2.2")), Shared: true}}); !errors.Is(err, provider.ErrConflict) {
		t.Fatalf("a second Create of the set: %v, want ErrConflict", err)
	}
	expect("192.0.2.1")
	apply(provider.Change{Action: provider.ActionUpdate, Before: ptr(a("192.0.2.1")), After: ptr(a("192.0.2.1", "192.0.2.2")), Shared: true})
	expect("192.0.2.1", "192.0.2.2")

	// A third joins from a view that only held .1.
	apply(provider.Change{Action: provider.ActionUpdate, Before: ptr(a("192.0.2.1")), After: ptr(a("192.0.2.1", "192.0.2.3")), Shared: true})
	expect("192.0.2.1", "192.0.2.2", "192.0.2.3")

	// The first leaves from the same stale view: only .1 goes.
	apply(provider.Change{Action: provider.ActionUpdate, Before: ptr(a("192.0.2.1", "192.0.2.3")), After: ptr(a("192.0.2.3")), Shared: true})
	expect("192.0.2.2", "192.0.2.3")

	// The second believes it is the last and deletes the set: .3 stays.
	apply(provider.Change{Action: provider.ActionDelete, Before: ptr(a("192.0.2.2")), Shared: true})
	expect("192.0.2.3")

	// The last one leaves: the set is gone.
	apply(provider.Change{Action: provider.ActionDelete, Before: ptr(a("192.0.2.3")), Shared: true})
	expect()

	// Registry records are replaced whole: never two values.
	c := registry.Contributor{OwnerID: "c1", Resource: "DNSRecord/ns/app"}
	e := registry.Entry{OwnerID: c.OwnerID, Resource: c.Resource, Name: "app.merge.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	r1 := registry.RecordSet("merge.test", e)
	stale := registry.RecordSet("merge.test", registry.WithHeartbeat(e, e.Heartbeat.AddDate(2000, 0, 0)))
	r2 := registry.RecordSet("merge.test", registry.WithHeartbeat(e, e.Heartbeat.AddDate(2001, 0, 0)))
	apply(provider.Change{Action: provider.ActionCreate, After: &r1, Shared: true})
	apply(provider.Change{Action: provider.ActionUpdate, Before: &stale, After: &r2, Shared: true})
	sets, err := p.ListRecordSets(ctx(t), z.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range sets {
		if rs.Key() == r2.Key() && !rs.Equal(r2) {
			t.Fatalf("registry record = %s, want exactly %s", rs, r2)
		}
	}
}

func ptr(rs provider.RecordSet) *provider.RecordSet { return &rs }

// TestReadMergeWrite_RequestsSent pins what ApplyChanges sends: registry
// records alone cost one PATCH and no read; a shared set (Change.Shared) costs one GET
// filtered to its name, the PATCH, and the same GET again (the re-read that sees a lost
// update); several names cost one GET of the zone, and the re-read is of the names whose
// targets were added.
func TestReadMergeWrite_RequestsSent(t *testing.T) {
	type rrset struct {
		Name       string `json:"name"`
		Type       string `json:"type"`
		TTL        int    `json:"ttl"`
		ChangeType string `json:"changetype,omitempty"`
		Records    []struct {
			Content  string `json:"content"`
			Disabled bool   `json:"disabled"`
		} `json:"records"`
	}
	var mu sync.Mutex
	var reqs []string
	var patches []string
	// The zone as the fake holds it: app.z.test. holds .9, a target another writer added.
	var zone []rrset
	if err := json.Unmarshal([]byte(`[
		{"name":"app.z.test.","type":"A","ttl":60,"records":[{"content":"192.0.2.1","disabled":false},{"content":"192.0.2.9","disabled":false}]},
		{"name":"other.z.test.","type":"A","ttl":60,"records":[{"content":"192.0.2.7","disabled":false}]}]`), &zone); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		reqs = append(reqs, r.Method+" "+r.URL.RequestURI())
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "z.test.", "name": "z.test.", "rrsets": zone})
		case http.MethodPatch:
			b, _ := io.ReadAll(r.Body)
			patches = append(patches, string(b))
			var patch struct {
				RRSets []rrset `json:"rrsets"`
			}
			if err := json.Unmarshal(b, &patch); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			for _, ch := range patch.RRSets {
				zone = slices.DeleteFunc(zone, func(rs rrset) bool { return rs.Name == ch.Name && rs.Type == ch.Type })
				if ch.ChangeType == "REPLACE" {
					ch.ChangeType = ""
					zone = append(zone, ch)
				}
			}
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(ts.Close)
	p, err := pdns.New(pdns.Config{APIURL: ts.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	take := func() ([]string, []string) {
		mu.Lock()
		defer mu.Unlock()
		r, pt := reqs, patches
		reqs, patches = nil, nil
		return r, pt
	}
	c := registry.Contributor{OwnerID: "c1", Resource: "DNSRecord/ns/app"}
	e := registry.Entry{OwnerID: c.OwnerID, Resource: c.Resource, Name: "app.z.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	r1 := registry.RecordSet("z.test", e)
	r2 := r1.Clone()
	r2.TTL = 120

	if err := p.ApplyChanges(ctx(t), "z.test.", []provider.Change{{Action: provider.ActionUpdate, Before: &r1, After: &r2}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := take(); len(got) != 1 || !strings.HasPrefix(got[0], "PATCH ") {
		t.Fatalf("a registry-only batch sent %q, want one PATCH", got)
	}

	before := provider.RecordSet{Name: "app.z.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	after := provider.RecordSet{Name: "app.z.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1", "192.0.2.2"}}
	if err := p.ApplyChanges(ctx(t), "z.test.", []provider.Change{{Action: provider.ActionUpdate, Before: &before, After: &after, Shared: true}, {Action: provider.ActionUpdate, Before: &r1, After: &r2}}); err != nil {
		t.Fatal(err)
	}
	got, pt := take()
	if filtered := "GET /api/v1/servers/localhost/zones/z.test.?rrset_name=app.z.test."; len(got) != 3 || got[0] != filtered || !strings.HasPrefix(got[1], "PATCH ") || got[2] != filtered {
		t.Fatalf("a shared-set update sent %q, want one filtered GET, one PATCH and the filtered GET again", got)
	}
	for _, want := range []string{`"192.0.2.9"`, `"192.0.2.2"`, `"192.0.2.1"`} {
		if !strings.Contains(pt[0], want) {
			t.Errorf("PATCH %s lacks %s (the target added meanwhile must be kept)", pt[0], want)
		}
	}

	other := provider.RecordSet{Name: "other.z.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.7"}}
	if err := p.ApplyChanges(ctx(t), "z.test.", []provider.Change{{Action: provider.ActionUpdate, Before: &before, After: &after, Shared: true}, {Action: provider.ActionDelete, Before: &other, Shared: true}}); err != nil {
		t.Fatal(err)
	}
	// The re-read is of the names whose targets were added: app.z.test. only.
	whole, filtered := "GET /api/v1/servers/localhost/zones/z.test.", "GET /api/v1/servers/localhost/zones/z.test.?rrset_name=app.z.test."
	if got, _ := take(); len(got) != 3 || got[0] != whole || !strings.HasPrefix(got[1], "PATCH ") || got[2] != filtered {
		t.Fatalf("changes at two names sent %q, want one GET of the zone, one PATCH and a GET of app.z.test.", got)
	}
}
