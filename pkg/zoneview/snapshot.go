package zoneview

import (
	"cmp"
	"slices"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// Snapshot is one read of a zone's record sets, indexed for planning: its
// registry (registry.NewIndex), its sets by key and by name, and its
// delegation points. Building it is linear in the zone's size; Compute with
// a Snapshot is then linear in what the contributor desires and holds, so
// the zone writer builds one per zone read and shares it among every
// contributor that plans against that read. It is immutable and safe for
// concurrent use.
type Snapshot struct {
	zone  string
	index *registry.Index
	// sets is current as given to New, kept (not copied); all is each key's first position in
	// it, registry records included: one copy of the zone, where a map of sets would be a
	// second (and a map of the managed ones a third).
	sets []provider.RecordSet
	all  map[provider.RecordSetKey]int32
	// names holds the keys of managed sets and of registry entries, sorted by name, type and
	// set identifier, unique; byName is each owner name's run of it (one slice for the zone,
	// not one per name).
	names  []provider.RecordSetKey
	byName map[string]keySpan
	// cuts: the names of non-apex NS sets, sorted.
	cuts []string
}

// keySpan is a run [start, start+n) of Snapshot.names.
type keySpan struct{ start, n int32 }

// New indexes current, every record set of zone (registry TXT
// records included). When a key appears twice, the first set is used. The
// snapshot keeps current, not a copy: callers must not modify it afterwards.
func New(zone string, current []provider.RecordSet) *Snapshot {
	s := &Snapshot{
		zone: dnswire.Dotless(zone),
		sets: current,
		all:  make(map[provider.RecordSetKey]int32, len(current)),
	}
	s.index = registry.NewIndex(s.zone, current)
	regKeys := s.index.Keys()
	s.names = make([]provider.RecordSetKey, 0, len(current)+len(regKeys))
	for i, rs := range current {
		k := rs.Key()
		if _, dup := s.all[k]; dup {
			continue
		}
		s.all[k] = int32(i)
		if isRegistry(k) {
			continue
		}
		s.names = append(s.names, k)
		if k.Type == "NS" && dnswire.IsStrictSubdomain(k.Name, s.zone) {
			s.cuts = append(s.cuts, k.Name)
		}
	}
	s.names = append(s.names, regKeys...)
	slices.SortFunc(s.names, compareKeys)
	s.names = slices.Compact(s.names)
	s.byName = make(map[string]keySpan, len(s.names))
	for i := 0; i < len(s.names); {
		j := i + 1
		for j < len(s.names) && s.names[j].Name == s.names[i].Name {
			j++
		}
		s.byName[s.names[i].Name] = keySpan{int32(i), int32(j - i)}
		i = j
	}
	slices.Sort(s.cuts)
	s.cuts = slices.Compact(s.cuts)
	return s
}

// isRegistry reports whether k is a registry record's key (a TXT set at a registry name).
func isRegistry(k provider.RecordSetKey) bool {
	return k.Type == "TXT" && registry.IsRegistryName(k.Name)
}

// Zone returns the snapshot's zone, canonical.
func (s *Snapshot) Zone() string { return s.zone }

// Index returns the snapshot's registry index.
func (s *Snapshot) Index() *registry.Index { return s.index }

// Managed returns the set at k that is not a registry record, if the zone holds one.
func (s *Snapshot) Managed(k provider.RecordSetKey) (provider.RecordSet, bool) {
	if isRegistry(k) {
		return provider.RecordSet{}, false
	}
	return s.Lookup(k)
}

// Lookup returns the set at k, registry records included, if the zone holds one.
func (s *Snapshot) Lookup(k provider.RecordSetKey) (provider.RecordSet, bool) {
	i, ok := s.all[k]
	if !ok {
		return provider.RecordSet{}, false
	}
	return s.sets[i], true
}

// KeysAt returns the keys at owner name (canonical) of managed sets and of registry entries,
// sorted by name, type and set identifier, unique. The slice is shared: do not modify it.
func (s *Snapshot) KeysAt(name string) []provider.RecordSetKey {
	sp, ok := s.byName[name]
	if !ok {
		return nil
	}
	return s.names[sp.start : sp.start+sp.n : sp.start+sp.n]
}

// Keys returns the keys of every managed set and registry entry of the zone, sorted by name,
// type and set identifier, unique. The slice is shared: do not modify it.
func (s *Snapshot) Keys() []provider.RecordSetKey { return s.names }

// Cuts returns the zone's delegation points, the names of its non-apex NS sets, sorted and
// unique. The slice is shared: do not modify it.
func (s *Snapshot) Cuts() []string { return s.cuts }

// compareKeys orders keys by name, type, then set identifier.
func compareKeys(a, b provider.RecordSetKey) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Type, b.Type), cmp.Compare(a.SetIdentifier, b.SetIdentifier))
}
