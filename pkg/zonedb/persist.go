package zonedb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

const (
	zoneFileSuffix = ".zone"
	metaFileSuffix = ".meta.json"
	tmpMarker      = ".tmp-"
	sidecarVersion = 1
)

// sidecar is the JSON document beside each master file.
type sidecar struct {
	Version int    `json:"version"`
	Origin  string `json:"origin"`
	ZoneMeta
	// Serial is the SOA serial of the master file written with this sidecar;
	// a mismatch on Load reveals a crash between the two renames.
	Serial     uint32       `json:"serial"`
	RecordSets []sidecarSet `json:"recordSets,omitempty"`
}

// sidecarSet is either a whole record set with a set identifier (Records
// set), or the labels of a plain set whose records are in the master file
// (SetIdentifier and Records empty).
type sidecarSet struct {
	Name          string            `json:"name"`
	Type          string            `json:"type"`
	TTL           uint32            `json:"ttl,omitempty"`
	SetIdentifier string            `json:"setIdentifier,omitempty"`
	Weight        *int64            `json:"weight,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Records       []string          `json:"records,omitempty"`
}

// fileBase is the zone's file name stem: the origin without trailing dot.
// canonicalOrigin guarantees it is a safe file name.
func fileBase(origin string) string { return strings.TrimSuffix(origin, ".") }

// encode renders a zone version into its master file and sidecar.
func encode(z *zoneData) (zoneFile, meta []byte, err error) {
	var zb bytes.Buffer
	fmt.Fprintf(&zb, "; zone %s serial %d, written by dnsplane. Record sets with a set identifier are in %s%s.\n",
		z.origin, z.soa.Serial, fileBase(z.origin), metaFileSuffix)
	fmt.Fprintf(&zb, "$ORIGIN %s\n", z.origin)
	zb.WriteString(z.soa.String())
	zb.WriteByte('\n')
	sc := sidecar{Version: sidecarVersion, Origin: z.origin, ZoneMeta: z.meta, Serial: z.soa.Serial}
	for _, rs := range z.sortedSets() {
		if rs.SetIdentifier != "" {
			s := sidecarSet{Name: rs.Name, Type: dns.TypeToString[rs.Type], TTL: rs.TTL,
				SetIdentifier: rs.SetIdentifier, Weight: rs.Weight, Labels: rs.Labels}
			for _, rr := range rs.RRs {
				s.Records = append(s.Records, rr.String())
			}
			sc.RecordSets = append(sc.RecordSets, s)
			continue
		}
		for _, rr := range rs.RRs {
			zb.WriteString(rr.String())
			zb.WriteByte('\n')
		}
		if len(rs.Labels) > 0 {
			sc.RecordSets = append(sc.RecordSets, sidecarSet{Name: rs.Name, Type: dns.TypeToString[rs.Type], Labels: rs.Labels})
		}
	}
	meta, err = json.MarshalIndent(sc, "", "  ")
	if err != nil {
		return nil, nil, fmt.Errorf("encode sidecar: %w", err)
	}
	return zb.Bytes(), append(meta, '\n'), nil
}

// persist writes a zone version (a new zone when create) to the Backend, or else under Dir:
// sidecar first, then the master file (the commit point). No-op without either.
func (s *Store) persist(z *zoneData, create bool) error {
	if s.opts.Backend != nil {
		return s.opts.Backend.WriteZone(ZoneVersion{z: z}, create)
	}
	if s.opts.Dir == "" {
		return nil
	}
	zoneFile, meta, err := encode(z)
	if err != nil {
		return err
	}
	base := fileBase(z.origin)
	if err := writeAtomic(s.opts.Dir, base+metaFileSuffix, meta); err != nil {
		return err
	}
	return writeAtomic(s.opts.Dir, base+zoneFileSuffix, zoneFile)
}

// remove deletes a zone's persisted data: the Backend's, or else its files under Dir: master
// file first (the commit point), then the sidecar, then fsyncs the directory.
func (s *Store) remove(origin string) error {
	if s.opts.Backend != nil {
		return s.opts.Backend.DeleteZone(origin)
	}
	if s.opts.Dir == "" {
		return nil
	}
	base := fileBase(origin)
	for _, name := range []string{base + zoneFileSuffix, base + metaFileSuffix} {
		if err := os.Remove(filepath.Join(s.opts.Dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", name, err)
		}
	}
	return syncDir(s.opts.Dir)
}

// writeAtomic replaces dir/name with data: temporary file in dir, fsync,
// rename, fsync dir. On error the temporary file is removed (a crash may
// still leave it; Load deletes it).
func writeAtomic(dir, name string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, "."+name+tmpMarker+"*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return syncDir(dir)
}

// syncDir fsyncs a directory so that renames and removals in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// Load reads every zone under Dir (creating Dir if missing) and replaces
// what the store serves. Call it once, before serving and writing. It
// deletes leftover temporary files and sidecars without a master file
// (interrupted writes, see Store). A zone whose files cannot be read, or hold
// a record of a type the server does not apply (a DNAME written by hand: see
// Tx.Put), is skipped and reported in the returned error (wrapping
// ErrCorruptZone, naming the record); the other zones are still loaded. Without Dir, or with a Backend, it does nothing.
func (s *Store) Load() error {
	if s.opts.Dir == "" || s.opts.Backend != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(s.opts.Dir, 0o755); err != nil {
		return fmt.Errorf("load zones: %w", err)
	}
	entries, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return fmt.Errorf("load zones: %w", err)
	}
	present := map[string]bool{}
	for _, e := range entries {
		present[e.Name()] = true
	}
	zones := map[string]*zoneData{}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
		case strings.HasPrefix(name, ".") && strings.Contains(name, tmpMarker):
			// Zone file names never start with a dot (no empty labels), so
			// this is only ever a writeAtomic temporary file.
			s.opts.Logger.Info("removing leftover temporary file", "file", name)
			if err := os.Remove(filepath.Join(s.opts.Dir, name)); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", name, err))
			}
		case strings.HasSuffix(name, metaFileSuffix):
			if !present[strings.TrimSuffix(name, metaFileSuffix)+zoneFileSuffix] {
				s.opts.Logger.Info("removing sidecar of an interrupted zone creation or deletion", "file", name)
				if err := os.Remove(filepath.Join(s.opts.Dir, name)); err != nil {
					errs = append(errs, fmt.Errorf("remove %s: %w", name, err))
				}
			}
		case strings.HasSuffix(name, zoneFileSuffix):
			z, err := s.loadZone(strings.TrimSuffix(name, zoneFileSuffix))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			zones[z.origin] = z
		}
	}
	s.snap.Store(&Snapshot{zones: zones})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("load zones from %s: %w", s.opts.Dir, err)
	}
	return nil
}

// loadZone reads one zone's master file and sidecar.
func (s *Store) loadZone(base string) (*zoneData, error) {
	origin, err := canonicalOrigin(base)
	if err != nil || fileBase(origin) != base {
		return nil, fmt.Errorf("%w: %s%s: not a zone file name", ErrCorruptZone, base, zoneFileSuffix)
	}
	l := &zoneLoader{s: s, origin: origin, sets: map[SetKey]*RRSet{}}
	zonePath := filepath.Join(s.opts.Dir, base+zoneFileSuffix)
	f, err := os.Open(zonePath)
	if err != nil {
		return nil, l.corrupt("%v", err)
	}
	defer f.Close()
	zp := dns.NewZoneParser(f, origin, zonePath)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if err := l.add(rr, "", nil); err != nil {
			return nil, l.corrupt("%v", err)
		}
	}
	if err := zp.Err(); err != nil {
		return nil, l.corrupt("%v", err)
	}
	if l.soa == nil {
		return nil, l.corrupt("no SOA at the apex")
	}
	meta := ZoneMeta{}
	raw, err := os.ReadFile(filepath.Join(s.opts.Dir, base+metaFileSuffix))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A master file on its own (written by hand, or a sidecar lost):
		// serve it, without metadata.
		if st, serr := f.Stat(); serr == nil {
			meta.Created = st.ModTime().UTC()
		}
	case err != nil:
		return nil, l.corrupt("%v", err)
	default:
		if meta, err = l.applySidecar(raw); err != nil {
			return nil, err
		}
	}
	for _, rs := range l.sets {
		for _, rr := range rs.RRs {
			rr.Header().Ttl = rs.TTL
		}
	}
	z, err := newZoneData(origin, meta, l.soa, l.sets)
	if err != nil {
		return nil, l.corrupt("%v", err)
	}
	return z, nil
}

// zoneLoader collects one zone's records while loadZone reads its files.
type zoneLoader struct {
	s      *Store
	origin string
	soa    *dns.SOA
	sets   map[SetKey]*RRSet
}

// corrupt returns an ErrCorruptZone error for the zone.
func (l *zoneLoader) corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: zone %s: %s", ErrCorruptZone, l.origin, fmt.Sprintf(format, args...))
}

// add puts rr into its set (setID, weight) or takes it as the SOA, under its canonical owner
// (dnswire.CanonicalName). A record that cannot be sent is dropped with a log line. Errors: rr
// is outside the zone, a second or non-apex SOA, or of a type the server does not apply
// (unapplied: the zone is not served rather than served with answers that differ from its file).
func (l *zoneLoader) add(rr dns.RR, setID string, weight *int64) error {
	h := rr.Header()
	name, err := dnswire.CanonicalName(h.Name)
	if err != nil {
		return fmt.Errorf("record %q: owner %w", rr.String(), err)
	}
	h.Name = name
	if !dns.IsSubDomain(l.origin, h.Name) {
		return fmt.Errorf("record %q is outside the zone", rr.String())
	}
	if emptyRdata(rr) {
		return fmt.Errorf("record %q has no data", rr.String())
	}
	if h.Rrtype == dns.TypeSOA {
		if l.soa != nil || h.Name != l.origin {
			return fmt.Errorf("unexpected SOA %q", rr.String())
		}
		l.soa = rr.(*dns.SOA)
		return nil
	}
	if why := unapplied(h.Name, h.Rrtype); why != "" {
		return fmt.Errorf("record %q: %s", rr.String(), why)
	}
	k := SetKey{Name: h.Name, Type: h.Rrtype, SetIdentifier: setID}
	if err := dnswire.CheckWire(rr); err != nil {
		// Written before Put checked records, or by hand: serving it would break every
		// answer holding it and the zone's AXFR.
		l.s.opts.Logger.Info("dropping a record that cannot be sent", "zone", l.origin, "record", rr.String(), "error", err.Error())
		return nil
	}
	rs := l.sets[k]
	if rs == nil {
		rs = &RRSet{Name: h.Name, Type: h.Rrtype, TTL: h.Ttl, SetIdentifier: setID, Weight: weight}
		l.sets[k] = rs
	}
	rs.TTL = min(rs.TTL, h.Ttl) // RFC 2181 §5.2: one TTL per set
	if !containsRR(rs.RRs, rr) {
		rs.RRs = append(rs.RRs, rr)
	}
	return nil
}

// applySidecar checks the sidecar raw against the master file, adds its identified sets and
// applies its labels, and returns its metadata. Errors are ErrCorruptZone.
func (l *zoneLoader) applySidecar(raw []byte) (ZoneMeta, error) {
	var sc sidecar
	if err := json.Unmarshal(raw, &sc); err != nil {
		return ZoneMeta{}, l.corrupt("sidecar: %v", err)
	}
	if sc.Version != sidecarVersion || sc.Origin != l.origin {
		return ZoneMeta{}, l.corrupt("sidecar version %d origin %q", sc.Version, sc.Origin)
	}
	if sc.Serial != l.soa.Serial {
		l.s.opts.Logger.Info("zone files are from different writes (crash between renames); serving both as found",
			"zone", l.origin, "masterSerial", l.soa.Serial, "sidecarSerial", sc.Serial)
		// Keep the serial moving forward for secondaries and caches.
		if int32(sc.Serial-l.soa.Serial) > 0 { // RFC 1982 comparison
			l.soa.Serial = sc.Serial
		}
	}
	if err := l.applySets(sc.RecordSets); err != nil {
		return ZoneMeta{}, err
	}
	return sc.ZoneMeta, nil
}

// label applies ss's labels to its set (setID), if the set was loaded.
func (l *zoneLoader) label(ss sidecarSet, setID string) {
	name, err := dnswire.CanonicalName(ss.Name)
	if err != nil {
		return
	}
	if rs := l.sets[SetKey{Name: name, Type: dns.StringToType[ss.Type], SetIdentifier: setID}]; rs != nil {
		rs.Labels = ss.Labels
	}
}

// emptyRdata reports whether rr was given no RDATA. miekg/dns's zone parser accepts a record
// with nothing after its type ("www IN A", as an RFC 2136 delete writes it), which no server
// can answer and which, written out again, does not parse: FuzzDecodeShardText found a shard
// that loaded and then failed to load as this store re-encoded it. The common types are checked
// by field; a record of another type by writing it out and parsing it back.
func emptyRdata(rr dns.RR) bool {
	switch x := rr.(type) {
	case *dns.A:
		return x.A == nil
	case *dns.AAAA:
		return x.AAAA == nil
	case *dns.CNAME:
		return x.Target == ""
	case *dns.NS:
		return x.Ns == ""
	case *dns.TXT:
		return len(x.Txt) == 0
	case *dns.MX:
		return x.Mx == ""
	case *dns.SRV:
		return x.Target == ""
	case *dns.PTR:
		return x.Ptr == ""
	}
	_, err := dns.NewRR(rr.String())
	return err != nil
}
