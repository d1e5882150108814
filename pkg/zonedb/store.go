package zonedb

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	"k8s.io/utils/clock"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// Defaults for zones the store creates. The negative-caching TTL is
// min(SOA TTL, MINIMUM) (RFC 2308 §5), so NXDOMAIN is cached for 60 s.
const (
	DefaultSOATTL     = 3600
	DefaultRefresh    = 3600
	DefaultRetry      = 600
	DefaultExpire     = 1209600
	DefaultMinimumTTL = 60
	DefaultNSTTL      = 3600
	// DefaultNameServerLabel is the first label of the name server every new
	// zone gets: ns1.<zone>.
	DefaultNameServerLabel = "ns1"
)

// StoreOptions configures a Store.
type StoreOptions struct {
	// Dir is where zones persist; "" keeps them in memory only. Ignored with a Backend.
	Dir string
	// Backend, when set, persists every zone version in place of Dir (pkg/zonestore: Kubernetes
	// objects every replica watches and installs with Install). Load then does nothing.
	Backend Backend
	// NameServerAddrs are the glue addresses (A for IPv4, AAAA for IPv6) of
	// ns1.<zone> in zones the store creates: the server's listen IPs.
	// Unspecified addresses (0.0.0.0, ::) are skipped. Without any, new zones
	// get the NS but no address records. SetNameServerAddrs replaces them.
	NameServerAddrs []netip.Addr
	// Clock stamps ZoneMeta.Created and gives the SOA serials (nextSerial); default the real
	// clock.
	Clock clock.PassiveClock
	// Logger reports what Load repaired or found inconsistent.
	Logger logr.Logger
	// JournalDeltas and JournalRecords bound each zone's IXFR journal (journal.go): at most
	// that many changes (default DefaultJournalDeltas) holding at most that many added plus
	// deleted records in all (default DefaultJournalRecords); the oldest changes go first.
	// Negative = no journal (every IXFR is answered with the full zone).
	JournalDeltas, JournalRecords int
}

// Store holds the zones the server answers from. It is safe for concurrent
// use: readers take an immutable snapshot (copy-on-write), writers are
// serialised and publish a new snapshot only after persisting it.
//
// Persistence, per zone, under Dir:
//   - <zone>.zone: an RFC 1035 master file (records written with miekg's
//     RR.String()) holding the SOA and every record set without a set
//     identifier;
//   - <zone>.meta.json: the sidecar, holding the zone metadata, the SOA
//     serial it was written with, record sets with a set identifier (they
//     would merge in a master file) and the labels of plain sets.
//
// Each file is replaced atomically: written to a temporary file in Dir,
// fsynced, renamed over the old one, then Dir is fsynced. Writes go in this
// order:
//   - create and update: sidecar first, then master file. The master file
//     is the commit point of a creation: a sidecar without a master file is
//     an interrupted creation (or deletion) and Load removes it.
//   - delete: master file first, then sidecar.
//
// A crash between the two renames of an update leaves the new sidecar beside
// the old master file: Load then serves the old plain record sets with the
// new weighted sets and metadata, and logs the serial mismatch. The write
// that crashed never reported success, so its caller retries; with
// conditional writes the retry sees the current data and re-plans. A crash
// before a rename leaves only a temporary file, which Load deletes.
type Store struct {
	opts StoreOptions

	mu    sync.Mutex // serialises writers
	snap  atomic.Pointer[Snapshot]
	hooks []func(Change) // OnChange; guarded by mu
	// retired holds the last SOA serial of each zone deleted while its serial was ahead of the
	// clock (origin -> serial), so that a zone re-created under the origin starts past it
	// (firstSerial). Guarded by mu; entries go once the clock has passed them.
	retired map[string]uint32
}

// NewStore returns an empty store. Call Load to read Dir.
func NewStore(opts StoreOptions) *Store {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	opts.JournalDeltas = cmp.Or(opts.JournalDeltas, DefaultJournalDeltas)
	opts.JournalRecords = cmp.Or(opts.JournalRecords, DefaultJournalRecords)
	s := &Store{opts: opts, retired: map[string]uint32{}}
	s.snap.Store(&Snapshot{zones: map[string]*zoneData{}})
	return s
}

func (s *Store) load() *Snapshot { return s.snap.Load() }

// publish installs a new snapshot with zone z set (or origin removed when z
// is nil). It is the single point where a zone version is installed: it
// journals the change from the served version (journal.go) and then tells the
// OnChange hooks. Callers hold s.mu.
func (s *Store) publish(origin string, z *zoneData) {
	zones := maps.Clone(s.load().zones)
	if z == nil {
		if old := zones[origin]; old != nil {
			s.retire(origin, old.soa.Serial)
		}
		delete(zones, origin)
	} else {
		delete(s.retired, origin) // served again: its serial moves on from this version's
		z.journal = s.nextJournal(zones[origin], z)
		if z.published.IsZero() {
			z.published = s.opts.Clock.Now()
		}
		zones[origin] = z
	}
	s.snap.Store(&Snapshot{zones: zones})
	s.changed(origin, z)
}

// Zone returns the zone with that origin (any case, with or without the
// trailing dot), or ErrZoneNotFound.
func (s *Store) Zone(origin string) (ZoneInfo, error) {
	z, err := s.zone(origin)
	if err != nil {
		return ZoneInfo{}, err
	}
	return z.info(), nil
}

func (s *Store) zone(origin string) (*zoneData, error) {
	o := dnswire.LookupName(origin)
	z := s.load().zones[o]
	if z == nil {
		return nil, fmt.Errorf("zone %s: %w", o, ErrZoneNotFound)
	}
	return z, nil
}

// Zones returns every served zone, sorted by origin.
func (s *Store) Zones() []ZoneInfo {
	snap := s.load()
	out := make([]ZoneInfo, 0, len(snap.zones))
	for _, z := range snap.zones {
		out = append(out, z.info())
	}
	slices.SortFunc(out, func(a, b ZoneInfo) int { return strings.Compare(a.Origin, b.Origin) })
	return out
}

// RRSets returns deep copies of every record set of the zone, the SOA first,
// then in canonical name order (RFC 4034 §6.1), type, set identifier.
func (s *Store) RRSets(origin string) ([]RRSet, error) {
	z, err := s.zone(origin)
	if err != nil {
		return nil, err
	}
	sets := z.sortedSets()
	out := make([]RRSet, 0, len(sets)+1)
	out = append(out, RRSet{Name: z.origin, Type: dns.TypeSOA, TTL: z.soa.Hdr.Ttl, RRs: []dns.RR{dns.Copy(z.soa)}})
	for _, rs := range sets {
		out = append(out, rs.Clone())
	}
	return out, nil
}

// nextSerial is the SOA serial of the change after serial old: the clock's Unix seconds when
// that is newer than old in RFC 1982 serial arithmetic (§3.2; SerialNewer), else old + 1, which
// wraps from 2^32-1 to 0. It is BIND's "serial-update-method unixtime": a serial never goes back,
// and it tells the time of the change while changes come less than once a second.
func (s *Store) nextSerial(old uint32) uint32 {
	if now := unixSerial(s.opts.Clock.Now()); SerialNewer(now, old) {
		return now
	}
	return old + 1
}

// firstSerial is the SOA serial of a zone created now under origin: the clock's Unix seconds,
// or nextSerial of the serial the zone last deleted under origin ended at, when that is still
// ahead of the clock. A secondary that holds the deleted zone then takes the new one at once
// (RFC 1996 §4.7: it transfers only a newer serial), rather than when its copy expires. Callers
// hold s.mu.
func (s *Store) firstSerial(origin string) uint32 {
	if old, ok := s.retired[origin]; ok {
		return s.nextSerial(old)
	}
	return unixSerial(s.opts.Clock.Now())
}

// retire remembers serial, the last of the zone origin that is being deleted, while it is ahead
// of the clock, and forgets the entries the clock has passed. Callers hold s.mu.
func (s *Store) retire(origin string, serial uint32) {
	now := unixSerial(s.opts.Clock.Now())
	maps.DeleteFunc(s.retired, func(_ string, old uint32) bool { return SerialNewer(now, old) })
	if !SerialNewer(now, serial) {
		s.retired[origin] = serial
	}
}

// unixSerial is t in Unix seconds, modulo 2^32 (a serial, RFC 1982 §3.1).
func unixSerial(t time.Time) uint32 { return uint32(t.Unix()) }

// CreateZone creates a zone with a fresh SOA (serial firstSerial: the clock's Unix seconds, and
// past the serial of a zone deleted under that origin just before), the apex NS
// ns1.<zone> and its glue (StoreOptions.NameServerAddrs), and persists it.
// An existing origin gives ErrZoneExists (compare its Meta to decide whether
// it is yours); a bad name ErrInvalidZone.
func (s *Store) CreateZone(origin string, meta ZoneMeta) (ZoneInfo, error) {
	o, err := canonicalOrigin(origin)
	if err != nil {
		return ZoneInfo{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.load().zones[o] != nil {
		return ZoneInfo{}, fmt.Errorf("create zone %s: %w", o, ErrZoneExists)
	}
	meta = meta.clone()
	if meta.Created.IsZero() {
		meta.Created = s.opts.Clock.Now().UTC()
	}
	ns := NameServer(o)
	soa := &dns.SOA{
		Hdr:     dns.RR_Header{Name: o, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: DefaultSOATTL},
		Ns:      ns,
		Mbox:    "hostmaster." + o,
		Serial:  s.firstSerial(o),
		Refresh: DefaultRefresh,
		Retry:   DefaultRetry,
		Expire:  DefaultExpire,
		Minttl:  DefaultMinimumTTL,
	}
	sets := map[SetKey]*RRSet{}
	nsSet := &RRSet{Name: o, Type: dns.TypeNS, TTL: DefaultNSTTL, RRs: []dns.RR{
		&dns.NS{Hdr: dns.RR_Header{Name: o, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: DefaultNSTTL}, Ns: ns},
	}}
	sets[nsSet.Key()] = nsSet
	for _, rs := range GlueSets(ns, s.opts.NameServerAddrs) {
		sets[rs.Key()] = &rs
	}
	z, err := newZoneData(o, meta, soa, sets)
	if err != nil {
		return ZoneInfo{}, fmt.Errorf("create zone %s: %w", o, err)
	}
	if err := s.persist(z, true); err != nil {
		return ZoneInfo{}, fmt.Errorf("create zone %s: %w", o, err)
	}
	s.publish(o, z)
	return z.info(), nil
}

// DeleteZone stops serving the zone and removes its files (master file
// first). Unknown origin: ErrZoneNotFound.
func (s *Store) DeleteZone(origin string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, err := s.zone(origin)
	if err != nil {
		return err
	}
	if err := s.remove(z.origin); err != nil {
		return fmt.Errorf("delete zone %s: %w", z.origin, err)
	}
	s.publish(z.origin, nil)
	return nil
}

// Update runs fn on a transaction over the zone, under the store's write
// lock, so fn sees no concurrent change and may implement conditional writes.
// If fn returns an error nothing is changed and Update returns it as is.
// Otherwise, if fn changed anything, the zone-wide rules are checked
// (ErrInvalidRRSet), the SOA serial moves forward (nextSerial: the clock's
// Unix seconds, or the old serial + 1 when that is not newer; RFC 1982), the
// zone is persisted and then served. Unknown origin: ErrZoneNotFound.
func (s *Store) Update(origin string, fn func(tx *Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, err := s.zone(origin)
	if err != nil {
		return err
	}
	tx := &Tx{origin: z.origin, sets: z.sets}
	if err := fn(tx); err != nil {
		return err
	}
	if !tx.changed {
		return nil
	}
	soa := dns.Copy(z.soa).(*dns.SOA)
	soa.Serial = s.nextSerial(soa.Serial)
	nz, err := newZoneData(z.origin, z.meta, soa, tx.sets)
	if err != nil {
		return fmt.Errorf("update zone %s: %w", z.origin, err)
	}
	if err := s.persist(nz, false); err != nil {
		return fmt.Errorf("update zone %s: %w", z.origin, err)
	}
	s.publish(z.origin, nz)
	return nil
}

// Tx is a set of changes to one zone, valid only inside Store.Update's fn.
type Tx struct {
	origin  string
	sets    map[SetKey]*RRSet
	changed bool
}

// Origin is the zone's origin (FQDN).
func (tx *Tx) Origin() string { return tx.origin }

// Get returns a copy of the set with that key (Name any case), or false. The
// SOA is not a set of the transaction.
func (tx *Tx) Get(k SetKey) (RRSet, bool) {
	k.Name = dnswire.LookupName(k.Name)
	rs, ok := tx.sets[k]
	if !ok {
		return RRSet{}, false
	}
	return rs.Clone(), true
}

// RRSets returns copies of the transaction's current sets (no SOA).
func (tx *Tx) RRSets() []RRSet {
	out := make([]RRSet, 0, len(tx.sets))
	for _, rs := range tx.sets {
		out = append(out, rs.Clone())
	}
	return out
}

// Put creates or replaces the set with rs's key. The store keeps a copy,
// with owner, class and TTL written into every record header; the owner is canonical
// (dnswire.CanonicalName: "esc\097ped" and "Escaped" are the name "escaped"). It rejects
// (ErrInvalidRRSet): owners that are not domain names or lie outside the zone, SOA and meta
// types, the types the server does not apply (unapplied: DNAME, RRSIG, NSEC, NSEC3, NS at a
// wildcard owner), records of
// another type than rs.Type, records that do not pack or unpack (dnswire.CheckWire:
// one would break every answer holding it and the zone's AXFR), an empty or
// duplicate record list (RFC 2181 §5), a CNAME set of more than one record
// (RFC 1034 §3.6.2), and a Weight without SetIdentifier or below 0.
func (tx *Tx) Put(rs RRSet) error {
	rs = rs.Clone()
	name, err := dnswire.CanonicalName(rs.Name)
	if err != nil {
		return fmt.Errorf("%w: %s/%s: owner %w", ErrInvalidRRSet, rs.Name, dns.TypeToString[rs.Type], err)
	}
	rs.Name = name
	k := rs.Key()
	if _, ok := dns.IsDomainName(rs.Name); !ok || !dns.IsSubDomain(tx.origin, rs.Name) {
		return fmt.Errorf("%w: %s: not in zone %s", ErrInvalidRRSet, k, tx.origin)
	}
	switch rs.Type {
	case dns.TypeSOA:
		return fmt.Errorf("%w: %s: the SOA is managed by the store", ErrInvalidRRSet, k)
	case dns.TypeNone, dns.TypeOPT, dns.TypeTSIG, dns.TypeTKEY, dns.TypeAXFR, dns.TypeIXFR, dns.TypeANY, dns.TypeMAILA, dns.TypeMAILB:
		return fmt.Errorf("%w: %s: type cannot be stored", ErrInvalidRRSet, k)
	}
	if why := unapplied(rs.Name, rs.Type); why != "" {
		return fmt.Errorf("%w: %s: %s", ErrInvalidRRSet, k, why)
	}
	if len(rs.RRs) == 0 {
		return fmt.Errorf("%w: %s: no records (delete the set instead)", ErrInvalidRRSet, k)
	}
	if rs.Type == dns.TypeCNAME && len(rs.RRs) > 1 {
		return fmt.Errorf("%w: %s: a CNAME set holds one record (RFC 1034 §3.6.2)", ErrInvalidRRSet, k)
	}
	if rs.Weight != nil && (rs.SetIdentifier == "" || *rs.Weight < 0) {
		return fmt.Errorf("%w: %s: a weight must be >= 0 and needs a set identifier", ErrInvalidRRSet, k)
	}
	for i, rr := range rs.RRs {
		h := rr.Header()
		if h.Rrtype != rs.Type {
			return fmt.Errorf("%w: %s: record %d has type %s", ErrInvalidRRSet, k, i, dns.TypeToString[h.Rrtype])
		}
		h.Name, h.Class, h.Ttl = rs.Name, dns.ClassINET, rs.TTL
		if err := dnswire.CheckWire(rr); err != nil {
			return fmt.Errorf("%w: %s: record %q %v", ErrInvalidRRSet, k, rr.String(), err)
		}
		if containsRR(rs.RRs[:i], rr) {
			return fmt.Errorf("%w: %s: duplicate record %q (RFC 2181 §5)", ErrInvalidRRSet, k, rr.String())
		}
	}
	if len(rs.Labels) == 0 {
		rs.Labels = nil
	}
	tx.cow()
	tx.sets[k] = &rs
	return nil
}

// Delete removes the set with that key and reports whether it existed.
func (tx *Tx) Delete(k SetKey) bool {
	k.Name = dnswire.LookupName(k.Name)
	if _, ok := tx.sets[k]; !ok {
		return false
	}
	tx.cow()
	delete(tx.sets, k)
	return true
}

// cow copies the set map on the first write, so the published version stays
// untouched.
func (tx *Tx) cow() {
	if !tx.changed {
		tx.sets = maps.Clone(tx.sets)
		tx.changed = true
	}
}

func containsRR(list []dns.RR, rr dns.RR) bool {
	for _, o := range list {
		if dns.IsDuplicate(o, rr) {
			return true
		}
	}
	return false
}
