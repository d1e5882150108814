package zonedb

import (
	"maps"
	"slices"

	"github.com/miekg/dns"
)

// Snapshot is one immutable state of every zone a Store serves. Readers take it with
// Store.Snapshot, without a lock, and see no later write; each write publishes a new one, so a
// reader may key what it derives from the zones (the server's answer cache) by the *Snapshot.
type Snapshot struct {
	zones map[string]*zoneData // origin -> zone
}

// Snapshot returns what the store serves now.
func (s *Store) Snapshot() *Snapshot { return s.snap.Load() }

// Zone returns the served version of the zone with exactly that origin: a lower-case FQDN
// (dnswire.Fqdn); false when no zone has it.
func (s *Snapshot) Zone(origin string) (ZoneVersion, bool) {
	z := s.zones[origin]
	return ZoneVersion{z: z}, z != nil
}

// Enclosing returns the served zone with the longest origin that is qname (a lower-case FQDN)
// or an ancestor of it; false when there is none.
func (s *Snapshot) Enclosing(qname string) (ZoneVersion, bool) {
	for off, end := 0, false; !end; off, end = dns.NextLabel(qname, off) {
		if z := s.zones[qname[off:]]; z != nil {
			return ZoneVersion{z: z}, true
		}
	}
	return ZoneVersion{}, false
}

// The read side of a ZoneVersion. What it returns is the version's own data, shared with every
// reader: callers must not modify it (dns.Copy a record first).

// SOA is the version's SOA record.
func (v ZoneVersion) SOA() *dns.SOA { return v.z.soa }

// Node returns the node of owner name (a lower-case FQDN): a name that exists in the zone, with
// record sets or as an empty non-terminal (RFC 8020 §2), the apex included; nil when name does
// not exist.
func (v ZoneVersion) Node(name string) *Node { return v.z.nodes[name] }

// Sets returns every record set but the SOA, by owner in canonical order (RFC 4034 §6.1), type
// and set identifier: the order of a full zone transfer.
func (v ZoneVersion) Sets() []*RRSet { return v.z.sortedSets() }

// JournalSince returns the change from the version with SOA serial serial to this one,
// condensed (RFC 1995 §5: each record at most once, deleted or added), and the SOA of the
// version at serial; ok is false when the zone's IXFR journal does not reach back to serial.
func (v ZoneVersion) JournalSince(serial uint32) (from *dns.SOA, deleted, added []dns.RR, ok bool) {
	return v.z.journal.since(serial)
}

// Node is one owner name of a zone version. A node with no sets is an empty non-terminal
// (RFC 8020 §2: it exists, so queries for it get NODATA). The apex node holds the SOA.
type Node struct {
	sets map[uint16][]*RRSet // each slice sorted by SetIdentifier
}

// Sets returns the node's record sets of type t, sorted by set identifier (nil when none).
func (n *Node) Sets(t uint16) []*RRSet { return n.sets[t] }

// Types returns the types of the node's record sets, ascending.
func (n *Node) Types() []uint16 { return slices.Sorted(maps.Keys(n.sets)) }
