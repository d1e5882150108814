package zonedb

import (
	"cmp"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// Bounds of a zone's IXFR journal (StoreOptions.JournalDeltas, JournalRecords).
const (
	// DefaultJournalDeltas is how many changes a zone's journal keeps.
	DefaultJournalDeltas = 100
	// DefaultJournalRecords is how many added plus deleted records a zone's journal keeps in
	// all changes together.
	DefaultJournalRecords = 10000
)

// Change is what Store.OnChange hooks receive after a zone version is installed or a zone is
// removed.
type Change struct {
	// Zone is the origin (lower-case FQDN).
	Zone string
	// Serial is the installed version's SOA serial; 0 when Deleted.
	Serial uint32
	// Deleted: the zone is no longer served.
	Deleted bool
	// JournalDeltas is how many changes the zone's IXFR journal now holds.
	JournalDeltas int
}

// OnChange registers fn, called after every installed zone version (one call per Update,
// CreateZone or other install, not per record) and every deleted zone. fn runs under the
// store's write lock, in the writer's goroutine: it must not block nor call the store's
// writers (queue the work instead, as the NOTIFY sender, xfr.Notifier, does).
func (s *Store) OnChange(fn func(Change)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, fn)
}

// changed runs the hooks for the installed version z of origin (nil = removed). Callers hold
// s.mu.
func (s *Store) changed(origin string, z *zoneData) {
	c := Change{Zone: origin, Deleted: z == nil}
	if z != nil {
		c.Serial, c.JournalDeltas = z.soa.Serial, z.journal.len()
	}
	for _, fn := range s.hooks {
		fn(c)
	}
}

// delta is one journalled change of a zone: the version with SOA from became the version with
// SOA to by deleting, then adding, records (RFC 1995 §4). Immutable.
type delta struct {
	from, to       *dns.SOA
	deleted, added []dns.RR
}

func (d *delta) records() int { return len(d.deleted) + len(d.added) }

// journal is an immutable list of consecutive changes, oldest first: deltas[i].to has the
// serial of deltas[i+1].from, and the last one's to is the serial of the version holding the
// journal. A new version gets a new journal; a nil *journal is empty.
type journal struct {
	deltas  []*delta
	records int // sum of the deltas' records()
}

func (j *journal) len() int {
	if j == nil {
		return 0
	}
	return len(j.deltas)
}

// nextJournal returns the journal of version z, installed over old (nil = a new zone): old's
// journal plus the change old -> z, trimmed to the store's bounds. A new zone, a serial that
// does not move forward (RFC 1982) or a journal turned off gives an empty journal; a version
// with old's serial and old's data keeps old's journal (the same version installed again).
func (s *Store) nextJournal(old, z *zoneData) *journal {
	if old == nil || s.opts.JournalDeltas < 0 || s.opts.JournalRecords < 0 {
		return nil
	}
	d := diffZones(old, z)
	if z.soa.Serial == old.soa.Serial && d.records() == 0 {
		return old.journal
	}
	if !SerialNewer(z.soa.Serial, old.soa.Serial) {
		s.opts.Logger.Info("zone serial did not move forward; its IXFR journal is dropped (secondaries get a full transfer)",
			"zone", z.origin, "oldSerial", old.soa.Serial, "newSerial", z.soa.Serial)
		return nil
	}
	return old.journal.appendBounded(d, s.opts.JournalDeltas, s.opts.JournalRecords)
}

// appendBounded returns a new journal of j's deltas and d, without the oldest ones beyond
// maxDeltas changes or maxRecords records in all (nil when d alone is too big).
func (j *journal) appendBounded(d *delta, maxDeltas, maxRecords int) *journal {
	var ds []*delta
	records := d.records()
	if j != nil {
		ds, records = j.deltas, j.records+d.records()
	}
	ds = append(slices.Clip(ds), d) // never write into the old version's array
	for len(ds) > 0 && (len(ds) > maxDeltas || records > maxRecords) {
		records -= ds[0].records()
		ds = ds[1:]
	}
	if len(ds) == 0 {
		return nil
	}
	return &journal{deltas: ds, records: records}
}

// since returns the change from the version with SOA serial serial to the journal's newest
// version, condensed into one (RFC 1995 §5: each record at most once, deleted or added), and
// the SOA of the version at serial. ok is false when the journal does not reach back to
// serial (IXFR then falls back to a full transfer, RFC 1995 §4).
func (j *journal) since(serial uint32) (from *dns.SOA, deleted, added []dns.RR, ok bool) {
	if j == nil {
		return nil, nil, nil, false
	}
	for i, d := range j.deltas {
		if d.from.Serial == serial {
			deleted, added = condense(j.deltas[i:])
			return d.from, deleted, added, true
		}
	}
	return nil, nil, nil, false
}

// condense folds consecutive deltas into one: a record added then deleted (or deleted then
// added back) cancels out. Records are compared by their presentation form (owner, TTL, class,
// type, rdata); the order is that of first appearance.
func condense(ds []*delta) (deleted, added []dns.RR) {
	del, add := map[string]dns.RR{}, map[string]dns.RR{}
	var delOrder, addOrder []string
	for _, d := range ds {
		delOrder = cancelOrKeep(d.deleted, add, del, delOrder)
		addOrder = cancelOrKeep(d.added, del, add, addOrder)
	}
	return ordered(delOrder, del), ordered(addOrder, add)
}

// cancelOrKeep takes each of rrs out of other when other holds it (a record added and then
// deleted, or deleted and then added again, is no change), else keeps it in mine, appending its
// key to order; it returns order.
func cancelOrKeep(rrs []dns.RR, other, mine map[string]dns.RR, order []string) []string {
	for _, rr := range rrs {
		k := rr.String()
		if _, ok := other[k]; ok {
			delete(other, k)
			continue
		}
		mine[k] = rr
		order = append(order, k)
	}
	return order
}

// ordered returns the records of m in the order of keys, each once.
func ordered(keys []string, m map[string]dns.RR) []dns.RR {
	var out []dns.RR
	for _, k := range keys {
		if rr, ok := m[k]; ok {
			out = append(out, rr)
			delete(m, k)
		}
	}
	return out
}

// rrKey is one owner name and type: what a secondary holds as one RRset, whatever the sets
// with set identifiers that the store merges into it.
type rrKey struct {
	name  string
	rtype uint16
}

// diffZones returns the change from version a to version b: the records of a not in b
// (deleted) and of b not in a (added), by owner and type in canonical order. Sets are
// compared by pointer first (a Tx keeps the sets it did not touch), so the cost is one pass
// over the set maps plus the changed owners' records.
func diffZones(a, b *zoneData) *delta {
	touched := map[rrKey]struct{}{}
	for k, rs := range a.sets {
		if b.sets[k] != rs {
			touched[rrKey{k.Name, k.Type}] = struct{}{}
		}
	}
	for k, rs := range b.sets {
		if a.sets[k] != rs {
			touched[rrKey{k.Name, k.Type}] = struct{}{}
		}
	}
	keys := make([]rrKey, 0, len(touched))
	for k := range touched {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y rrKey) int {
		return cmp.Or(strings.Compare(dnswire.CanonicalKey(x.name), dnswire.CanonicalKey(y.name)), cmp.Compare(x.rtype, y.rtype))
	})
	d := &delta{from: a.soa, to: b.soa}
	for _, k := range keys {
		olds, news := a.records(k), b.records(k)
		d.deleted = append(d.deleted, minus(olds, news)...)
		d.added = append(d.added, minus(news, olds)...)
	}
	return d
}

// records returns every record of owner and type k in z, all its sets merged.
func (z *zoneData) records(k rrKey) []dns.RR {
	n := z.nodes[k.name]
	if n == nil {
		return nil
	}
	var out []dns.RR
	for _, rs := range n.sets[k.rtype] {
		out = append(out, rs.RRs...)
	}
	return out
}

// minus returns the records of a whose presentation form is in no record of b, each once.
func minus(a, b []dns.RR) []dns.RR {
	in := make(map[string]struct{}, len(b))
	for _, rr := range b {
		in[rr.String()] = struct{}{}
	}
	var out []dns.RR
	for _, rr := range a {
		k := rr.String()
		if _, ok := in[k]; !ok {
			out = append(out, rr)
			in[k] = struct{}{}
		}
	}
	return out
}
