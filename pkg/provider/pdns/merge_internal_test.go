package pdns

import (
	"slices"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

func TestApplyDelta_KeepsWhatOthersWroteSinceBefore(t *testing.T) {
	key := provider.RecordSetKey{Name: "app.z.test", Type: "A"}
	set := func(ttl int64, targets ...string) *provider.RecordSet {
		return &provider.RecordSet{Name: key.Name, Type: key.Type, TTL: ttl, Targets: targets}
	}
	for _, tc := range []struct {
		name          string
		before, after *provider.RecordSet // nil before: Create; nil after: Delete
		current       *provider.RecordSet
		want          *provider.RecordSet // nil: the set is deleted
	}{
		{"update, nothing changed meanwhile: exactly After", set(60, "192.0.2.1"), set(60, "192.0.2.1", "192.0.2.2"), set(60, "192.0.2.1"), set(60, "192.0.2.1", "192.0.2.2")},
		{"update keeps a target added meanwhile", set(60, "192.0.2.1"), set(60, "192.0.2.1", "192.0.2.2"), set(60, "192.0.2.1", "192.0.2.9"), set(60, "192.0.2.1", "192.0.2.9", "192.0.2.2")},
		{"update removes only its own target", set(60, "192.0.2.1", "192.0.2.2"), set(60, "192.0.2.1"), set(60, "192.0.2.1", "192.0.2.2", "192.0.2.9"), set(60, "192.0.2.1", "192.0.2.9")},
		{"update does not restore a target removed meanwhile", set(60, "192.0.2.1", "192.0.2.2"), set(60, "192.0.2.1", "192.0.2.2", "192.0.2.3"), set(60, "192.0.2.2"), set(60, "192.0.2.2", "192.0.2.3")},
		{"update takes After's TTL", set(300, "192.0.2.1"), set(60, "192.0.2.1"), set(300, "192.0.2.1", "192.0.2.9"), set(60, "192.0.2.1", "192.0.2.9")},
		{"update whose set vanished and that only removes: deleted", set(60, "192.0.2.1", "192.0.2.2"), set(60, "192.0.2.1"), nil, nil},
		{"two leavers at once: the second deletes", set(60, "192.0.2.1", "192.0.2.2"), set(60, "192.0.2.1"), set(60, "192.0.2.2"), nil},
		{"create onto nothing", nil, set(60, "192.0.2.1"), nil, set(60, "192.0.2.1")},
		{"create onto a set created meanwhile merges", nil, set(60, "192.0.2.1"), set(300, "192.0.2.9"), set(60, "192.0.2.9", "192.0.2.1")},
		{"delete, nothing changed meanwhile: gone", nil, nil, set(60, "192.0.2.1"), nil},
		{"delete keeps a target added meanwhile, with its TTL", set(60, "192.0.2.1"), nil, set(30, "192.0.2.1", "192.0.2.9"), set(30, "192.0.2.9")},
		{"delete of a set already gone", set(60, "192.0.2.1"), nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.before
			if tc.after == nil && before == nil {
				before = tc.current // a plain delete of what is there
			}
			d := newDelta(before, tc.after)
			if d == nil {
				t.Fatal("newDelta = nil")
			}
			got := applyDelta(tc.current, key, *d)
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("got %s, want the set deleted", got)
			case tc.want != nil && got == nil:
				t.Fatalf("got the set deleted, want %s", tc.want)
			case tc.want != nil && (got.TTL != tc.want.TTL || !slices.Equal(got.Targets, tc.want.Targets)):
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestNewDelta_ComparesTargetsCanonically(t *testing.T) {
	before := &provider.RecordSet{Name: "v6.z.test", Type: "AAAA", TTL: 60, Targets: []string{"2001:DB8:0:0::1"}}
	after := &provider.RecordSet{Name: "v6.z.test", Type: "AAAA", TTL: 60, Targets: []string{"2001:db8::1", "2001:db8::2"}}
	d := newDelta(before, after)
	if d == nil || !slices.Equal(d.add, []string{"2001:db8::2"}) || len(d.remove) != 0 {
		t.Fatalf("delta = %+v, want add [2001:db8::2] and nothing removed", d)
	}
	if d := newDelta(&provider.RecordSet{Name: "x.z.test", Type: "A", Targets: []string{"not-an-address"}}, after); d != nil {
		t.Fatalf("a Before that cannot be parsed gave a delta %+v; want nil (plain REPLACE)", d)
	}
}

func TestMerged_SingleOwnerSetsRegistryRecordsAndSingleValuedTypesAreReplaced(t *testing.T) {
	regName := registry.Name("z.test", registry.Contributor{OwnerID: "c1", Resource: "DNSRecord/ns/app"}, provider.RecordSetKey{Name: "app.z.test", Type: "A"})
	for _, tc := range []struct {
		key  provider.RecordSetKey
		want bool
	}{
		{provider.RecordSetKey{Name: "app.z.test", Type: "A"}, true},
		{provider.RecordSetKey{Name: "app.z.test", Type: "AAAA"}, true},
		{provider.RecordSetKey{Name: "app.z.test", Type: "TXT"}, true},
		{provider.RecordSetKey{Name: "sub.z.test", Type: "NS"}, true},
		{provider.RecordSetKey{Name: regName, Type: "TXT"}, false},
		{provider.RecordSetKey{Name: "www.z.test", Type: "CNAME"}, false},
		{provider.RecordSetKey{Name: "www.z.test", Type: "DNAME"}, false},
		{provider.RecordSetKey{Name: "www.z.test", Type: "ALIAS"}, false},
	} {
		if got := merged(true, tc.key); got != tc.want {
			t.Errorf("merged(shared, %s) = %v, want %v", tc.key, got, tc.want)
		}
		if merged(false, tc.key) {
			t.Errorf("merged(single owner, %s) = true, want false: a set with one writer is replaced as is", tc.key)
		}
	}
}

// TestRemember_AReadOverlappingAWriteIsNotKept: a whole-zone read that was sent before a PATCH
// was sent or answered may or may not hold it, so it is not a claim check's read.
func TestRemember_AReadOverlappingAWriteIsNotKept(t *testing.T) {
	sets := []provider.RecordSet{{Name: "a.z.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}}
	claim := []change{{key: provider.RecordSetKey{Name: "a.z.test", Type: "A"}, claim: true}}
	for _, tc := range []struct {
		name     string
		between  func(p *Provider) // between the read's start and its end
		wantKept bool
	}{
		{"nothing between: kept", func(*Provider) {}, true},
		{"a PATCH sent meanwhile", func(p *Provider) { p.writing("z.test") }, false},
		{"a PATCH answered meanwhile", func(p *Provider) {
			p.wrote("z.test", nil, nil)
		}, false},
		{"a PATCH failed meanwhile", func(p *Provider) { p.forget("z.test") }, false},
		{"a PATCH of another zone meanwhile", func(p *Provider) { p.writing("other.test") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(Config{APIURL: "http://127.0.0.1:1", APIKey: "k", ClaimReadMaxAge: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			gen, at := p.readStarts("z.test.")
			tc.between(p)
			p.remember("Z.test", gen, at, sets)
			state, recent := p.claimState("z.test", claim)
			if recent != tc.wantKept {
				t.Fatalf("read kept = %v, want %v", recent, tc.wantKept)
			}
			if recent && state[claim[0].key] == nil {
				t.Fatal("the kept read lost the set it held")
			}
		})
	}
}
