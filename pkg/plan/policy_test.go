package plan

import (
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// policyCases is the full matrix of the three policies over every kind of record-set change a
// SingleOwner plan makes (create, update, delete, release, recreate, registry-only release, no
// change), plus the Shared rewrite of a set Self leaves. external-dns' meaning: sync writes
// everything, upsert-only never deletes, create-only never updates or deletes.
func policyCases() []planCase {
	www := func(ttl int64, targets ...string) provider.RecordSet {
		return set("www.example.test", "A", ttl, targets...)
	}
	wwwClaim := func(ttl int64, targets ...string) provider.RecordSet {
		return claim(self, "www.example.test", "A", ttl, targets...)
	}
	type scenario struct {
		name     string
		desired  []provider.RecordSet
		current  []provider.RecordSet
		release  bool
		want     map[Policy][]provider.Change
		skipped  map[Policy][]provider.Change
		keptWhen map[Policy]bool
	}
	all := func(cs ...provider.Change) map[Policy][]provider.Change {
		return map[Policy][]provider.Change{PolicySync: cs, PolicyUpsertOnly: cs, PolicyCreateOnly: cs}
	}
	deleted := []provider.Change{del(www(300, "192.0.2.1")), del(wwwClaim(300, "192.0.2.1"))}
	scenarios := []scenario{
		{name: "create", desired: []provider.RecordSet{www(300, "192.0.2.1")},
			want: all(create(wwwClaim(300, "192.0.2.1")), create(www(300, "192.0.2.1")))},
		{name: "update", desired: []provider.RecordSet{www(60, "192.0.2.3")}, current: []provider.RecordSet{www(300, "192.0.2.1"), wwwClaim(300, "192.0.2.1")},
			want: map[Policy][]provider.Change{
				PolicySync:       {update(wwwClaim(300, "192.0.2.1"), wwwClaim(60, "192.0.2.3")), update(www(300, "192.0.2.1"), www(60, "192.0.2.3"))},
				PolicyUpsertOnly: {update(wwwClaim(300, "192.0.2.1"), wwwClaim(60, "192.0.2.3")), update(www(300, "192.0.2.1"), www(60, "192.0.2.3"))},
			},
			skipped: map[Policy][]provider.Change{PolicyCreateOnly: {update(www(300, "192.0.2.1"), www(60, "192.0.2.3"))}}},
		{name: "delete", current: []provider.RecordSet{www(300, "192.0.2.1"), wwwClaim(300, "192.0.2.1")},
			want:    map[Policy][]provider.Change{PolicySync: deleted},
			skipped: map[Policy][]provider.Change{PolicyUpsertOnly: deleted[:1], PolicyCreateOnly: deleted[:1]}},
		{name: "release", release: true, current: []provider.RecordSet{www(300, "192.0.2.1"), wwwClaim(300, "192.0.2.1")},
			want:     map[Policy][]provider.Change{PolicySync: deleted},
			skipped:  map[Policy][]provider.Change{PolicyUpsertOnly: deleted[:1], PolicyCreateOnly: deleted[:1]},
			keptWhen: map[Policy]bool{PolicyUpsertOnly: true, PolicyCreateOnly: true}},
		{name: "recreate a lost set", desired: []provider.RecordSet{www(300, "192.0.2.1")}, current: []provider.RecordSet{wwwClaim(300, "192.0.2.1")},
			want: all(create(www(300, "192.0.2.1")))},
		{name: "release a claim whose set is gone", current: []provider.RecordSet{wwwClaim(300, "192.0.2.1")},
			want: all(del(wwwClaim(300, "192.0.2.1")))},
		{name: "in sync", desired: []provider.RecordSet{www(300, "192.0.2.1")}, current: []provider.RecordSet{www(300, "192.0.2.1"), wwwClaim(300, "192.0.2.1")}},
	}
	var out []planCase
	for _, sc := range scenarios {
		for _, pol := range []Policy{PolicySync, PolicyUpsertOnly, PolicyCreateOnly, ""} {
			eff := pol
			if eff == "" {
				eff = PolicySync
			}
			tc := planCase{name: "policy " + string(pol) + ": " + sc.name, policy: pol, desired: sc.desired, current: sc.current,
				release: sc.release, want: sc.want[eff], skipped: sc.skipped[eff]}
			if sc.keptWhen[eff] {
				tc.kept = map[string]string{"www.example.test/A": "policy " + string(eff) + " never deletes"}
			}
			out = append(out, tc)
		}
	}
	// Shared: Self leaves a set a peer still holds; the set is rewritten without Self's
	// targets (an Update), which create-only withholds, keeping Self's registry record.
	leave := planCase{mode: Shared,
		current: []provider.RecordSet{
			set("app.example.test", "A", 60, "192.0.2.1", "192.0.2.2"),
			claim(rec, "app.example.test", "A", 60, "192.0.2.1"),
			claim(peer, "app.example.test", "A", 60, "192.0.2.2"),
		}}
	for _, pol := range []Policy{PolicySync, PolicyUpsertOnly, PolicyCreateOnly} {
		tc := leave
		tc.name, tc.policy = "policy "+string(pol)+": shared set left by Self", pol
		rewrite := update(set("app.example.test", "A", 60, "192.0.2.1", "192.0.2.2"), set("app.example.test", "A", 60, "192.0.2.2"))
		rewrite.Shared = true
		if pol == PolicyCreateOnly {
			tc.skipped = []provider.Change{rewrite}
		} else {
			tc.want = []provider.Change{rewrite, del(claim(rec, "app.example.test", "A", 60, "192.0.2.1"))}
		}
		out = append(out, tc)
	}
	return out
}

func TestPlan_PolicyRestrictsRecordSetChanges(t *testing.T) { runCases(t, policyCases()) }

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Policy
		ok   bool
	}{
		{"", PolicySync, true}, {"sync", PolicySync, true}, {"upsert-only", PolicyUpsertOnly, true},
		{"create-only", PolicyCreateOnly, true}, {"Sync", "", false}, {"upsert", "", false},
	} {
		got, err := ParsePolicy(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParsePolicy(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
