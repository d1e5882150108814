package zoneview

import (
	"cmp"
	"slices"

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
	zone    string
	index   *registry.Index
	managed map[provider.RecordSetKey]provider.RecordSet // every set but registry records
	all     map[provider.RecordSetKey]provider.RecordSet // every set
	// byName: per owner name, the keys of managed sets and of registry
	// entries there, sorted and unique.
	byName map[string][]provider.RecordSetKey
	// cuts: the names of non-apex NS sets, sorted.
	cuts []string
}

// New indexes current, every record set of zone (registry TXT
// records included). When a key appears twice, the first set is used.
func New(zone string, current []provider.RecordSet) *Snapshot {
	s := &Snapshot{
		zone:    provider.CanonicalName(zone),
		managed: make(map[provider.RecordSetKey]provider.RecordSet, len(current)),
		all:     make(map[provider.RecordSetKey]provider.RecordSet, len(current)),
		byName:  make(map[string][]provider.RecordSetKey, len(current)),
	}
	s.index = registry.NewIndex(s.zone, current)
	for _, rs := range current {
		k := rs.Key()
		if _, dup := s.all[k]; dup {
			continue
		}
		s.all[k] = rs
		if rs.Type == "TXT" && registry.IsRegistryName(rs.Name) {
			continue
		}
		s.managed[k] = rs
		s.byName[k.Name] = append(s.byName[k.Name], k)
		if k.Type == "NS" && provider.IsStrictSubdomain(k.Name, s.zone) {
			s.cuts = append(s.cuts, k.Name)
		}
	}
	for _, k := range s.index.Keys() {
		s.byName[k.Name] = append(s.byName[k.Name], k)
	}
	for n, ks := range s.byName {
		slices.SortFunc(ks, compareKeys)
		s.byName[n] = slices.Compact(ks)
	}
	slices.Sort(s.cuts)
	s.cuts = slices.Compact(s.cuts)
	return s
}

// Zone returns the snapshot's zone, canonical.
func (s *Snapshot) Zone() string { return s.zone }

// Index returns the snapshot's registry index.
func (s *Snapshot) Index() *registry.Index { return s.index }

// Managed returns the set at k that is not a registry record, if the zone holds one.
func (s *Snapshot) Managed(k provider.RecordSetKey) (provider.RecordSet, bool) {
	rs, ok := s.managed[k]
	return rs, ok
}

// Lookup returns the set at k, registry records included, if the zone holds one.
func (s *Snapshot) Lookup(k provider.RecordSetKey) (provider.RecordSet, bool) {
	rs, ok := s.all[k]
	return rs, ok
}

// KeysAt returns the keys at owner name (canonical) of managed sets and of registry entries,
// sorted by name, type and set identifier, unique. The slice is shared: do not modify it.
func (s *Snapshot) KeysAt(name string) []provider.RecordSetKey { return s.byName[name] }

// Cuts returns the zone's delegation points, the names of its non-apex NS sets, sorted and
// unique. The slice is shared: do not modify it.
func (s *Snapshot) Cuts() []string { return s.cuts }

// compareKeys orders keys by name, type, then set identifier.
func compareKeys(a, b provider.RecordSetKey) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Type, b.Type), cmp.Compare(a.SetIdentifier, b.SetIdentifier))
}
