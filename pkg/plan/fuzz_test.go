package plan

import (
	"slices"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// fuzzBytes reads a fuzz input one byte at a time, 0 once it is exhausted.
type fuzzBytes []byte

func (b *fuzzBytes) next() int {
	if len(*b) == 0 {
		return 0
	}
	v := (*b)[0]
	*b = (*b)[1:]
	return int(v)
}

func (b *fuzzBytes) pick(n int) int { return b.next() % n }

var (
	fuzzNames   = []string{"www.example.test", "api.example.test", zone, "*.w.example.test", "a.b.example.test"}
	fuzzTypes   = []string{"A", "AAAA", "TXT", "CNAME"}
	fuzzTargets = map[string][]string{
		"A":     {"192.0.2.1", "192.0.2.2", "192.0.2.3"},
		"AAAA":  {"2001:db8::1", "2001:db8::2"},
		"TXT":   {"v=spf1 -all", "x"},
		"CNAME": {"target.other.test", "www.example.test"},
	}
	fuzzTTLs = []int64{0, 60, 300}
)

// fuzzSet is a set of name and type with one or two targets of the type's pool (one for CNAME).
func fuzzSet(b *fuzzBytes, ttl int64) provider.RecordSet {
	name, typ := fuzzNames[b.pick(len(fuzzNames))], fuzzTypes[b.pick(len(fuzzTypes))]
	pool := fuzzTargets[typ]
	targets := []string{pool[b.pick(len(pool))]}
	if t := pool[b.pick(len(pool))]; typ != "CNAME" && !slices.Contains(targets, t) {
		targets = append(targets, t)
	}
	return provider.RecordSet{Name: name, Type: typ, TTL: ttl, Targets: targets}
}

// fuzzInput builds a plan Input from data: the mode, a zone of record sets that Self holds
// (with a registry record, matching or drifted, or only the record), that another contributor
// holds, that an external-dns owner claims, or that no registry holds, and Self's desired sets.
func fuzzInput(data []byte) Input {
	b := fuzzBytes(data)
	in := Input{Zone: zone, Self: self, DefaultTTL: 300, Current: []provider.RecordSet{apexSOA, apexNS}}
	if b.next()&1 == 1 {
		in.Mode, in.Self = Shared, rec
	}
	others := []registry.Contributor{sibling, stranger, rec, peer, peer2, self}
	seen := map[provider.RecordSetKey]bool{apexSOA.Key(): true, apexNS.Key(): true}
	add := func(rs provider.RecordSet) {
		if !seen[rs.Key()] {
			seen[rs.Key()] = true
			in.Current = append(in.Current, rs)
		}
	}
	claimOf := func(c registry.Contributor, rs provider.RecordSet) provider.RecordSet {
		return registry.RecordSet(zone, entryOf(c, rs.Name, rs.Type, rs.TTL, rs.Targets...))
	}
	for range b.pick(7) {
		rs := fuzzSet(&b, fuzzTTLs[1+b.pick(2)])
		if seen[rs.Key()] {
			continue
		}
		switch b.pick(6) {
		case 0: // Self's
			add(rs)
			add(claimOf(in.Self, rs))
		case 1: // another contributor's, or a same-kind one's
			add(rs)
			add(claimOf(others[b.pick(len(others))], rs))
		case 2: // no registry record: foreign
			add(rs)
		case 3: // an external-dns owner's
			add(rs)
			add(provider.RecordSet{Name: registry.ExternalNaming{}.TXTName(rs.Name, rs.Type), Type: "TXT", TTL: 300,
				Targets: []string{"heritage=external-dns,external-dns/owner=ext1"}})
		case 4: // Self's record only: the set is gone
			add(claimOf(in.Self, rs))
		case 5: // Self's, drifted from its record
			add(rs)
			drift := rs.Clone()
			drift.Targets = []string{fuzzTargets[rs.Type][0]}
			add(claimOf(in.Self, drift))
		}
	}
	desired := map[provider.RecordSetKey]bool{}
	for range b.pick(5) {
		rs := fuzzSet(&b, fuzzTTLs[b.pick(len(fuzzTTLs))])
		if !desired[rs.Key()] {
			desired[rs.Key()] = true
			in.Desired = append(in.Desired, rs)
		}
	}
	return in
}

// FuzzCompute checks plan.Compute as a property over small random zones (fuzzInput): applying
// its Changes to Current as a provider with conditional writes would (apply: every Before is
// exactly the current set, no Create of an existing key) yields a zone where
//   - every desired set that is not a conflict is present as desired (SingleOwner: exactly
//     its targets and TTL, DefaultTTL for 0; Shared: at least its targets, at most its TTL),
//     with Self's registry record holding it;
//   - every set Self does not hold (no registry record of Self's, nor in Shared mode of Self's
//     kind: another owner's, an external-dns owner's, one no registry holds) and every other
//     contributor's registry record is exactly as it was;
//
// and Compute on that zone plans nothing more (idempotence), with the same conflicts. The
// table tests' invariants (TestPlan_WritesOnlyWhatSelfHolds, TestPlan_IsIdempotent) hold over
// the cases written by hand; this searches the zones nobody wrote.
func FuzzCompute(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 3, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 2, 1, 1, 0, 0, 0, 3, 2, 0, 0, 1, 2, 0, 0, 0, 1})
	f.Add([]byte{1, 4, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 3, 1, 1, 1, 0, 0, 4, 2, 0, 0, 0, 2, 1, 2, 3, 0, 0, 0})
	f.Add([]byte{0, 2, 0, 3, 0, 1, 1, 5, 2, 0, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 2, 1, 0, 3, 0})
	f.Add([]byte{1, 6, 0, 0, 1, 0, 2, 1, 3, 1, 0, 1, 0, 0, 1, 1, 4, 4, 1, 0, 1, 1, 5, 2, 0, 0, 0, 1, 1, 1, 1, 4, 0, 0, 0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		res := Compute(in)
		after := apply(t, in.Current, res.Changes)
		ix, afterIx := registry.NewIndex(zone, in.Current), registry.NewIndex(zone, after)
		holds := func(k provider.RecordSetKey) bool {
			for _, e := range ix.Entries(k) {
				if e.Contributor() == in.Self || (in.Mode == Shared && e.Contributor().Kind() == in.Self.Kind()) {
					return true
				}
			}
			return false
		}
		find := func(sets []provider.RecordSet, k provider.RecordSetKey) (provider.RecordSet, bool) {
			i := slices.IndexFunc(sets, func(rs provider.RecordSet) bool { return rs.Key() == k })
			if i < 0 {
				return provider.RecordSet{}, false
			}
			return sets[i], true
		}
		for _, rs := range in.Current {
			if registry.IsRegistryName(rs.Name) {
				if e, err := registry.Parse(rs.Targets[0]); err == nil && e.Contributor() == in.Self {
					continue
				}
			} else if holds(rs.Key()) {
				continue
			}
			if got, ok := find(after, rs.Key()); !ok || !got.Equal(rs) || !slices.Equal(got.Targets, rs.Targets) {
				t.Fatalf("%s, not Self's, changed: %v -> %v (present %v)\nchanges:\n%s", rs.Key(), setString(&rs), setString(&got), ok, render(res.Changes))
			}
		}
		conflicted := map[provider.RecordSetKey]bool{}
		for _, c := range res.Conflicts {
			conflicted[c.Key] = true
		}
		for _, d := range in.Desired {
			if conflicted[d.Key()] {
				continue
			}
			got, ok := find(after, d.Key())
			wantTTL := d.TTL
			if wantTTL == 0 {
				wantTTL = in.DefaultTTL
			}
			switch {
			case !ok:
				t.Fatalf("desired %s, no conflict, is not in the zone\nchanges:\n%s", d.Key(), render(res.Changes))
			case in.Mode == SingleOwner && (!sameTargets(got.Targets, d.Targets) || got.TTL != wantTTL):
				t.Fatalf("desired %v, the zone holds %v", setString(&d), setString(&got))
			case in.Mode == Shared && (!containsAll(got.Targets, d.Targets) || got.TTL > wantTTL):
				t.Fatalf("desired %v (shared), the zone holds %v", setString(&d), setString(&got))
			}
			if !slices.ContainsFunc(afterIx.Entries(d.Key()), func(e registry.Entry) bool {
				return e.Contributor() == in.Self && sameTargets(e.Targets, d.Targets)
			}) {
				t.Fatalf("desired %s is written without Self's registry record: %+v", d.Key(), afterIx.Entries(d.Key()))
			}
		}
		in.Current = after
		again := Compute(in)
		if len(again.Changes) != 0 || conflictKeys(again) != conflictKeys(res) {
			t.Fatalf("a second Compute planned\n%s(conflicts %s, first %s)", render(again.Changes), conflictKeys(again), conflictKeys(res))
		}
	})
}

func sameTargets(a, b []string) bool {
	return containsAll(a, b) && containsAll(b, a)
}

func containsAll(a, b []string) bool {
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}
