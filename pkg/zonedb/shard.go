package zonedb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/miekg/dns"
)

// ZoneVersion is one immutable version of a zone, as a Backend persists it and Store.Install
// takes it. The zero value is not a zone.
type ZoneVersion struct{ z *zoneData }

// Origin is the zone's apex: lower-case FQDN with the trailing dot.
func (v ZoneVersion) Origin() string { return v.z.origin }

// Serial is the version's SOA serial.
func (v ZoneVersion) Serial() uint32 { return v.z.soa.Serial }

// Created is the zone's ZoneMeta.Created: it tells a re-created zone of the same origin from
// the one before it.
func (v ZoneVersion) Created() time.Time { return v.z.meta.Created }

// Backend persists zone versions outside the process (pkg/zonestore keeps them in Kubernetes
// objects). The Store calls it under its write lock, before a version is served; an error
// leaves what the store serves unchanged and is returned to the store's caller, wrapped. It
// bounds its own network calls.
type Backend interface {
	// WriteZone persists v, a new zone when create is true.
	WriteZone(v ZoneVersion, create bool) error
	// DeleteZone removes the zone's persisted data.
	DeleteZone(origin string) error
}

// SerialNewer reports whether SOA serial a is newer than b in RFC 1982 serial number
// arithmetic (§3.2, SERIAL_BITS 32): a != b and (a - b) mod 2^32 < 2^31. The pair 2^31 apart,
// which RFC 1982 leaves undefined, is not newer either way.
func SerialNewer(a, b uint32) bool {
	d := a - b
	return d != 0 && d < 1<<31
}

const shardVersion = 1

// headDoc is the zone-wide part of a sharded encoding: what the sidecar holds besides record
// sets, and the SOA.
type headDoc struct {
	Version int    `json:"version"`
	Origin  string `json:"origin"`
	ZoneMeta
	Serial uint32 `json:"serial"`
	// SOA is the SOA record in presentation form (miekg's RR.String()).
	SOA string `json:"soa"`
	// Shards is the number of shards, a power of two.
	Shards int `json:"shards"`
}

// shardDoc is one shard: the record sets whose owner hashes to Index (ShardOf).
type shardDoc struct {
	Version int    `json:"version"`
	Origin  string `json:"origin"`
	Index   int    `json:"index"`
	// MasterFile holds the shard's plain sets as RFC 1035 master file text, without SOA.
	MasterFile string `json:"masterFile,omitempty"`
	// RecordSets are the shard's identified sets and the labels of its plain sets, as in the
	// directory sidecar.
	RecordSets []sidecarSet `json:"recordSets,omitempty"`
}

// ShardOf returns the shard, in [0, n), of the record sets owned by name (any case, FQDN or
// not): FNV-1a of the lower-case FQDN, modulo n. n < 1 counts as 1.
func ShardOf(name string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(dnswire.Fqdn(name)))
	return int(h.Sum32() % uint32(n))
}

// EncodeShards renders v into a head (JSON: metadata, serial, SOA, shard count) and n shards
// (JSON documents, each a master file fragment and sidecar sets of the owners ShardOf puts
// there), n >= 1. The encoding is deterministic: the same version and n give the same bytes,
// so a writer can compare a shard with what is stored and skip the unchanged ones.
func EncodeShards(v ZoneVersion, n int) (head []byte, shards [][]byte, err error) {
	n = max(n, 1)
	z := v.z
	hd := headDoc{Version: shardVersion, Origin: z.origin, ZoneMeta: z.meta, Serial: z.soa.Serial, SOA: z.soa.String(), Shards: n}
	if head, err = json.Marshal(hd); err != nil {
		return nil, nil, fmt.Errorf("encode zone %s head: %w", z.origin, err)
	}
	docs := make([]shardDoc, n)
	files := make([]bytes.Buffer, n)
	for _, rs := range z.sortedSets() {
		i := ShardOf(rs.Name, n)
		docs[i].RecordSets = appendSet(&files[i], docs[i].RecordSets, rs)
	}
	shards = make([][]byte, n)
	for i := range docs {
		docs[i].Version, docs[i].Origin, docs[i].Index, docs[i].MasterFile = shardVersion, z.origin, i, files[i].String()
		if shards[i], err = json.Marshal(docs[i]); err != nil {
			return nil, nil, fmt.Errorf("encode zone %s shard %d: %w", z.origin, i, err)
		}
	}
	return head, shards, nil
}

// appendSet writes rs into a master file (plain sets) or a sidecar set (identified sets), and
// the labels of a plain set as a sidecar set, as the directory encoding does.
func appendSet(zb *bytes.Buffer, sets []sidecarSet, rs *RRSet) []sidecarSet {
	if rs.SetIdentifier != "" {
		s := sidecarSet{Name: rs.Name, Type: dns.TypeToString[rs.Type], TTL: rs.TTL,
			SetIdentifier: rs.SetIdentifier, Weight: rs.Weight, Labels: rs.Labels}
		for _, rr := range rs.RRs {
			s.Records = append(s.Records, rr.String())
		}
		return append(sets, s)
	}
	for _, rr := range rs.RRs {
		zb.WriteString(rr.String())
		zb.WriteByte('\n')
	}
	if len(rs.Labels) > 0 {
		sets = append(sets, sidecarSet{Name: rs.Name, Type: dns.TypeToString[rs.Type], Labels: rs.Labels})
	}
	return sets
}

// HeadShards returns the origin, serial and shard count a head of EncodeShards records.
// Errors wrap ErrCorruptZone.
func HeadShards(head []byte) (origin string, serial uint32, shards int, err error) {
	hd, err := decodeHead(head)
	if err != nil {
		return "", 0, 0, err
	}
	return hd.Origin, hd.Serial, hd.Shards, nil
}

func decodeHead(head []byte) (headDoc, error) {
	var hd headDoc
	if err := json.Unmarshal(head, &hd); err != nil {
		return headDoc{}, fmt.Errorf("%w: zone head: %v", ErrCorruptZone, err)
	}
	if hd.Version != shardVersion || hd.Shards < 1 {
		return headDoc{}, fmt.Errorf("%w: zone head of %q: version %d, %d shards", ErrCorruptZone, hd.Origin, hd.Version, hd.Shards)
	}
	if o, err := canonicalOrigin(hd.Origin); err != nil || o != hd.Origin {
		return headDoc{}, fmt.Errorf("%w: zone head: origin %q", ErrCorruptZone, hd.Origin)
	}
	return hd, nil
}

// DecodeShards rebuilds a zone version from a head and its shards (EncodeShards). A nil shard
// is one that is missing: its sets are left out. Records that cannot be sent are dropped with
// a log line (see Store.Load). Errors wrap ErrCorruptZone: a bad head, a shard of another zone
// or index, a record outside the zone or of a type the server does not apply (Tx.Put), a zone
// that breaks the zone-wide rules.
func (s *Store) DecodeShards(head []byte, shards [][]byte) (ZoneVersion, error) {
	hd, err := decodeHead(head)
	if err != nil {
		return ZoneVersion{}, err
	}
	l := &zoneLoader{s: s, origin: hd.Origin, sets: map[SetKey]*RRSet{}}
	soa, err := dns.NewRR(hd.SOA)
	if err != nil || soa == nil {
		return ZoneVersion{}, l.corrupt("SOA %q: %v", hd.SOA, err)
	}
	if err := l.add(soa, "", nil); err != nil || l.soa == nil {
		return ZoneVersion{}, l.corrupt("SOA %q: %v", hd.SOA, err)
	}
	l.soa.Serial = hd.Serial
	for i, raw := range shards {
		if raw == nil {
			continue
		}
		if err := l.addShard(raw, i); err != nil {
			return ZoneVersion{}, err
		}
	}
	for _, rs := range l.sets {
		for _, rr := range rs.RRs {
			rr.Header().Ttl = rs.TTL
		}
	}
	z, err := newZoneData(hd.Origin, hd.ZoneMeta, l.soa, l.sets)
	if err != nil {
		return ZoneVersion{}, l.corrupt("%v", err)
	}
	return ZoneVersion{z: z}, nil
}

// addShard adds one shard's sets (index i) to the loader.
func (l *zoneLoader) addShard(raw []byte, i int) error {
	var sd shardDoc
	if err := json.Unmarshal(raw, &sd); err != nil {
		return l.corrupt("shard %d: %v", i, err)
	}
	if sd.Version != shardVersion || sd.Origin != l.origin || sd.Index != i {
		return l.corrupt("shard %d: version %d, origin %q, index %d", i, sd.Version, sd.Origin, sd.Index)
	}
	zp := dns.NewZoneParser(strings.NewReader(sd.MasterFile), l.origin, fmt.Sprintf("shard %d", i))
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		if rr.Header().Rrtype == dns.TypeSOA {
			return l.corrupt("shard %d: a SOA outside the head", i)
		}
		if err := l.add(rr, "", nil); err != nil {
			return l.corrupt("shard %d: %v", i, err)
		}
	}
	if err := zp.Err(); err != nil {
		return l.corrupt("shard %d: %v", i, err)
	}
	return l.applySets(sd.RecordSets)
}

// applySets adds identified sets and applies labels (the sidecar's record sets).
func (l *zoneLoader) applySets(sets []sidecarSet) error {
	for _, ss := range sets {
		if ss.SetIdentifier == "" {
			continue // labels, applied below
		}
		for _, text := range ss.Records {
			rr, err := dns.NewRR(text)
			if err != nil || rr == nil {
				return l.corrupt("sidecar record %q: %v", text, err)
			}
			if err := l.add(rr, ss.SetIdentifier, ss.Weight); err != nil {
				return l.corrupt("sidecar: %v", err)
			}
		}
		l.label(ss, ss.SetIdentifier)
	}
	for _, ss := range sets {
		if ss.SetIdentifier == "" {
			l.label(ss, "")
		}
	}
	return nil
}

// Install serves v in place of the zone's current version when v is newer: no version of the
// origin is served, or v's serial is newer (SerialNewer) than the served version's persisted
// one (a renewal's, Renew, is the renewed version's), or v is of a re-created zone (another
// Created). A v newer than the persisted serial but not than a renewal's is served at the
// renewal's serial + 1. It reports whether v was installed. It is how a replica takes the versions a
// Backend's writer persisted; the store's own writes never need it.
func (s *Store) Install(v ZoneVersion) bool {
	if v.z == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.load().zones[v.z.origin]
	z := v.z
	if cur != nil && cur.meta.Created.Equal(v.z.meta.Created) {
		if !SerialNewer(v.z.soa.Serial, cur.persistedSerial()) {
			return false
		}
		if !SerialNewer(v.z.soa.Serial, cur.soa.Serial) {
			// cur is a renewal (Renew) at a serial v's writer had not reached: v is served
			// past it, so that its data never shares a serial with the renewed data.
			nz, err := v.z.renewed(cur.soa.Serial + 1)
			if err != nil {
				s.opts.Logger.Error(err, "installing a zone version", "zone", v.z.origin)
				return false
			}
			z = nz
		}
	}
	s.publish(z.origin, z)
	return true
}

// Uninstall stops serving origin (any case) when its served version was Created at created (a
// zero created matches any), and reports whether it did: the zone's persisted data is gone.
// A zone re-created since is kept.
func (s *Store) Uninstall(origin string, created time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, err := s.zone(origin)
	if err != nil || (!created.IsZero() && !z.meta.Created.Equal(created)) {
		return false
	}
	s.publish(z.origin, nil)
	return true
}

// Version returns the served version of the zone with that origin (any case), or
// ErrZoneNotFound. Versions are immutable: the store's later writes make new ones.
func (s *Store) Version(origin string) (ZoneVersion, error) {
	z, err := s.zone(origin)
	if err != nil {
		return ZoneVersion{}, err
	}
	return ZoneVersion{z: z}, nil
}
