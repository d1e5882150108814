package dnsserver

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// GeoDatabase locates client addresses for geo answers (docs/design.md, "Geo answers");
// *geo.DB implements it. Generation changes when the database is reloaded, so that
// answers cached from the old one are no longer found.
type GeoDatabase interface {
	geo.Locator
	Generation() uint64
}

// ECS family numbers (RFC 7871 §6, the IANA Address Family Numbers).
const (
	ecsFamilyIPv4 = 1
	ecsFamilyIPv6 = 2
)

// keyECS marks a cache key of a request with an EDNS Client Subnet option; the key then goes
// on with the option's family and source prefix length, which fix the answer's length.
const keyECS = 1 << 2

// errBadECS: an ECS option that RFC 7871 §6 says to refuse with FORMERR.
var errBadECS = errors.New("malformed EDNS client subnet option")

// client is where a query comes from, for a geo answer.
type client struct {
	// addr is the address the match uses: the ECS address (masked to its source prefix)
	// when the request has one, else the query's source address. Invalid when neither is
	// known (a source address that is no IP).
	addr netip.Addr
	// ecs is the request's option, nil without one.
	ecs *dns.EDNS0_SUBNET
	// anonymous: the option's SOURCE PREFIX-LENGTH is 0, so no address is to be used
	// (RFC 7871 §7.1.2): the default geo tag answers, with scope 0.
	anonymous bool
}

// clientOf reads the client of a request: its OPT's ECS option (opt may be nil) or the remote
// address. An option with address bits set beyond its source prefix, or a source prefix
// longer than its family, is errBadECS (RFC 7871 §6: FORMERR). miekg/dns already refuses an
// unknown family, or family 0 with a non-zero source prefix, when unpacking.
func clientOf(opt *dns.OPT, remote net.Addr) (client, error) {
	var c client
	if opt != nil {
		for _, o := range opt.Option {
			if e, ok := o.(*dns.EDNS0_SUBNET); ok {
				if c.ecs != nil {
					return client{}, errBadECS // one option of a code per OPT (RFC 7871 §6)
				}
				c.ecs = e
			}
		}
	}
	if c.ecs == nil {
		c.addr, _ = addrIP(remote)
		c.addr = c.addr.Unmap()
		return c, nil
	}
	e := c.ecs
	var raw netip.Addr
	switch e.Family {
	case ecsFamilyIPv4:
		a, ok := netip.AddrFromSlice(e.Address.To4())
		if !ok || e.SourceNetmask > 32 {
			return client{}, errBadECS
		}
		raw = a
	case ecsFamilyIPv6:
		a, ok := netip.AddrFromSlice(e.Address.To16())
		if !ok || e.SourceNetmask > 128 {
			return client{}, errBadECS
		}
		raw = a
	default: // family 0 with source 0, as dig sends it
		c.anonymous = true
		c.addr, _ = addrIP(remote)
		c.addr = c.addr.Unmap()
		return c, nil
	}
	p, err := raw.Prefix(int(e.SourceNetmask))
	if err != nil || p.Addr() != raw {
		return client{}, errBadECS
	}
	c.addr, c.anonymous = p.Addr(), e.SourceNetmask == 0
	return c, nil
}

// appendECSKey appends the ECS part of a cache key: the family and the source prefix length
// (they fix the length of the address the answer echoes).
func appendECSKey(key []byte, e *dns.EDNS0_SUBNET) []byte {
	key[len(key)-1] |= keyECS
	return append(key, byte(e.Family>>8), byte(e.Family), e.SourceNetmask)
}

// ecsAddrLen is the number of address octets an ECS option of source prefix n carries
// (RFC 7871 §6: the address truncated to the source prefix, padded to whole octets).
func ecsAddrLen(e *dns.EDNS0_SUBNET) int { return (int(e.SourceNetmask) + 7) / 8 }

// ecsAddrBytes returns the address octets of e as they are packed.
func ecsAddrBytes(e *dns.EDNS0_SUBNET) []byte {
	ip := e.Address.To16()
	if e.Family == ecsFamilyIPv4 {
		ip = e.Address.To4()
	}
	n := ecsAddrLen(e)
	if len(ip) < n {
		return nil
	}
	return ip[:n]
}

// geoResult is the geo choice made for one answer.
type geoResult struct {
	used  bool
	table *geo.Table
	match geo.Match
}

// geoState is a selector's geo input and result for one query.
type geoState struct {
	s      *Server
	snap   *zonedb.Snapshot
	client client
	gen    uint64
	result geoResult
	// several: more than one geo choice went into the answer (a CNAME chain through two geo
	// names); such an answer is not cached.
	several bool
}

// geoMemo holds, for one snapshot, the geo table of each geo name and type, and the table
// that each cache key's answer depends on.
type geoMemo struct {
	snap   *zonedb.Snapshot
	tables sync.Map // "name\x00type" -> *geoTable

	mu        sync.RWMutex // guards questions; a lookup by string(key) allocates nothing
	questions map[string]*geo.Table
}

// geoTable is the decoded table of one name and type, or nil when its labels do not make one.
type geoTable struct {
	t *geo.Table
}

// memoFor returns snap's geo memo, replacing one of another snapshot.
func (s *Server) memoFor(snap *zonedb.Snapshot) *geoMemo {
	for {
		m := s.geoMemo.Load()
		if m != nil && m.snap == snap {
			return m
		}
		nm := &geoMemo{snap: snap, questions: map[string]*geo.Table{}}
		if s.geoMemo.CompareAndSwap(m, nm) {
			return nm
		}
	}
}

// geoGeneration is the database's generation, 0 without one.
func (s *Server) geoGeneration() uint64 {
	if s.opts.Geo == nil {
		return 0
	}
	return s.opts.Geo.Generation()
}

// locator returns the database as a geo.Locator, nil without one.
func (s *Server) locator() geo.Locator {
	if s.opts.Geo == nil {
		return nil
	}
	return s.opts.Geo
}

// tableFor returns the geo table of sets (all of one name and type, each carrying
// geo.LabelTag), built once per snapshot; nil when the labels are invalid (logged).
func (g *geoState) tableFor(sets []*zonedb.RRSet) *geo.Table {
	memo := g.s.memoFor(g.snap)
	k := sets[0].Name + "\x00" + dns.TypeToString[sets[0].Type]
	if v, ok := memo.tables.Load(k); ok {
		return v.(*geoTable).t
	}
	var decoded []geo.Set
	var t *geo.Table
	var err error
	for _, rs := range sets {
		d, _, derr := geo.DecodeLabels(rs.Labels)
		if derr != nil {
			err = derr
			break
		}
		decoded = append(decoded, d)
	}
	if err == nil {
		t, err = geo.NewTable(decoded)
	}
	if err != nil {
		g.s.opts.Logger.Error(err, "geo record sets do not make a table; serving all of them", "name", sets[0].Name, "type", dns.TypeToString[sets[0].Type])
		t = nil
	}
	v, _ := memo.tables.LoadOrStore(k, &geoTable{t: t})
	return v.(*geoTable).t
}

// match is where the client falls in t: the default with scope 0 for an anonymous or unknown
// client.
func (g *geoState) match(t *geo.Table) geo.Match {
	if g.client.anonymous || !g.client.addr.IsValid() {
		a := g.client.addr
		if !a.IsValid() {
			a = netip.IPv6Unspecified()
		}
		return geo.Match{Tag: t.Default(), Scope: netip.PrefixFrom(a, 0).Masked()}
	}
	return t.Match(g.client.addr, g.s.locator())
}

// pickGeo returns the records of the geo set that answers the client among sets (each with
// geo.LabelTag, all of the asked name and type, sorted by set identifier), and records the
// choice; without a table (invalid labels) every set's. sets holds only the tags that have
// records of the asked type, so the table is of those: a client whose region's tag has none
// gets the default tag's set, and when the default has none either, the first set in geo tag
// order (the fallback order of geo.Resolve, per family), never every set together. With no
// client state (resolve without a query) it is the default's, else the first set.
func (sel *selector) pickGeo(sets []*zonedb.RRSet) []dns.RR {
	g := &sel.geo
	if !sel.geoOn {
		for _, rs := range sets {
			if rs.Labels[geo.LabelDefault] == "true" {
				return rs.RRs
			}
		}
		return sets[0].RRs
	}
	t := g.tableFor(sets)
	if t == nil {
		var out []dns.RR
		for _, rs := range sets {
			out = append(out, rs.RRs...)
		}
		return out
	}
	m := g.match(t)
	if g.result.used {
		g.several = true
	}
	g.result = geoResult{used: true, table: t, match: m}
	for _, rs := range sets {
		if rs.Labels[geo.LabelTag] == m.Tag {
			return rs.RRs
		}
	}
	return sets[0].RRs
}

// appendGeoKey appends the geo part of a cache key: the database generation, the scope and
// the geo tag, so that a cached geo answer is found only by a client of the same scope, of
// the same database version.
func appendGeoKey(key []byte, gen uint64, m geo.Match) []byte {
	key = append(key, 'G')
	key = binary.BigEndian.AppendUint64(key, gen)
	a := m.Scope.Addr().As16()
	key = append(key, a[:]...)
	key = append(key, byte(m.Scope.Bits()), byte(len(m.Tag)))
	return append(key, m.Tag...)
}

// geoCounters resolves the geo query counter of each (geo tag, ecs) once.
type geoCounters struct {
	mu sync.RWMutex
	m  map[geoCounterKey]prometheus.Counter
}

type geoCounterKey struct {
	tag string
	ecs bool
}

// countGeo counts one geo answer by its tag and whether the query had ECS.
func (s *Server) countGeo(tag string, ecs bool) {
	m := s.opts.Metrics
	if m == nil || m.Geo == nil {
		return
	}
	k := geoCounterKey{tag, ecs}
	s.geoCounts.mu.RLock()
	c, ok := s.geoCounts.m[k]
	s.geoCounts.mu.RUnlock()
	if !ok {
		e := "false"
		if ecs {
			e = "true"
		}
		c = m.Geo.WithLabelValues(tag, e)
		s.geoCounts.mu.Lock()
		if s.geoCounts.m == nil {
			s.geoCounts.m = map[geoCounterKey]prometheus.Counter{}
		}
		s.geoCounts.m[k] = c
		s.geoCounts.mu.Unlock()
	}
	c.Inc()
}

// ecsReply returns the ECS option of the answer to a request with option e: its family,
// source prefix and address, and scope (RFC 7871 §7.2.1).
func ecsReply(e *dns.EDNS0_SUBNET, scope int) *dns.EDNS0_SUBNET {
	return &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: e.Family, SourceNetmask: e.SourceNetmask, SourceScope: uint8(scope), Address: e.Address}
}

// ecsScope is the SCOPE PREFIX-LENGTH of match m in the family of option e (RFC 7871 §6: the
// scope counts bits of the option's own address). An IPv4-mapped IPv6 address
// (::ffff:a.b.c.d/n, n >= 96) is matched as its IPv4 address, whose scope prefix lies within
// ::ffff:0:0/96: 96 bits more in the IPv6 option.
func ecsScope(e *dns.EDNS0_SUBNET, m geo.Match) int {
	bits := m.Scope.Bits()
	if e.Family == ecsFamilyIPv6 && m.Scope.Addr().Is4() {
		bits += 96
	}
	return bits
}

// optToEnd moves resp's OPT to the end of the additional section, so that its last option
// (ECS) ends the packed message and a cached copy can take another client's address there.
func optToEnd(resp *dns.Msg) {
	for i, rr := range resp.Extra {
		if rr.Header().Rrtype == dns.TypeOPT && i != len(resp.Extra)-1 {
			resp.Extra = append(append(resp.Extra[:i:i], resp.Extra[i+1:]...), rr)
			return
		}
	}
}
