package geo

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
)

// Location is what a GeoIP database says about an address.
type Location struct {
	// Country is the ISO 3166-1 alpha-2 code ("DE"), "" when unknown.
	Country string
	// Continent is MaxMind's continent code ("EU"), "" when unknown.
	Continent string
}

// Locator finds an address's location and the network it holds for: every address in the
// returned prefix has the same Location. An address the database does not know gives a zero
// Location and the network it found no record for; no database at all gives an invalid
// prefix (the whole address family then). DB implements it.
type Locator interface {
	Locate(addr netip.Addr) (Location, netip.Prefix)
}

// Table matches client addresses to geo tags: the regions of one name's geo sets.
type Table struct {
	cidrs      []cidrRegion // longest prefix first
	countries  map[string]string
	continents map[string]string
	defaultTag string
}

type cidrRegion struct {
	prefix netip.Prefix
	tag    string
}

// NewTable builds the table of sets (one per geo tag, as DecodeLabels reads them). It refuses
// a region in two sets and two default sets; with no default set, clients that match no
// region get the tag "" (Match).
func NewTable(sets []Set) (*Table, error) {
	t := &Table{countries: map[string]string{}, continents: map[string]string{}}
	seen := map[string]string{}
	for _, s := range sets {
		if s.Default {
			if t.defaultTag != "" && t.defaultTag != s.Tag {
				return nil, fmt.Errorf("two default geo sets: %q and %q", t.defaultTag, s.Tag)
			}
			t.defaultTag = s.Tag
		}
		for _, key := range s.Regions {
			if other, dup := seen[key]; dup && other != s.Tag {
				return nil, fmt.Errorf("region %s is in the geo sets of %q and %q", key, other, s.Tag)
			}
			seen[key] = s.Tag
			r, err := ParseRegion(key)
			if err != nil {
				return nil, err
			}
			switch r.Kind {
			case KindCIDR:
				t.cidrs = append(t.cidrs, cidrRegion{prefix: r.Prefix, tag: s.Tag})
			case KindCountry:
				t.countries[r.Code] = s.Tag
			case KindContinent:
				t.continents[r.Code] = s.Tag
			}
		}
	}
	t.cidrs = slices.CompactFunc(sortedCIDRs(t.cidrs), func(a, b cidrRegion) bool { return a.prefix == b.prefix })
	return t, nil
}

func sortedCIDRs(c []cidrRegion) []cidrRegion {
	slices.SortFunc(c, func(a, b cidrRegion) int {
		return cmp.Or(cmp.Compare(b.prefix.Bits(), a.prefix.Bits()), a.prefix.Addr().Compare(b.prefix.Addr()))
	})
	return c
}

// NeedsLocator: some region is a country or a continent, so Match asks the Locator.
func (t *Table) NeedsLocator() bool { return len(t.countries)+len(t.continents) > 0 }

// Default is the default geo tag, "" when no set is the default.
func (t *Table) Default() string { return t.defaultTag }

// Match is where a client address falls.
type Match struct {
	// Tag is the geo tag whose set answers, "" when no region matched and the table has no
	// default.
	Tag string
	// Region is the key that matched ("DE", "continent:EU", "203.0.113.0/24"), "" for the
	// default.
	Region string
	// Scope is a network around the address whose every address gets Tag from this table and
	// the same Locator: the answer's SCOPE PREFIX-LENGTH is Scope.Bits() (RFC 7871 §7.2.1). It
	// is in the address's family. It is the largest such network within the block the match
	// came from, not across blocks: two neighbouring database networks of one country give
	// two scopes.
	Scope netip.Prefix
}

// Match returns the geo tag of addr (an IPv4-mapped IPv6 address counts as IPv4): the longest
// region CIDR that contains it, else its country's region, else its continent's (by loc, which
// may be nil), else the default. The scope starts from the block the decision came from (the
// CIDR; else loc's network; else the whole family) and is lengthened past every region CIDR
// inside that block that does not contain addr, one bit beyond their common prefix, so that
// no address in the scope matches another region. Pure, given loc.
func (t *Table) Match(addr netip.Addr, loc Locator) Match {
	addr = addr.Unmap()
	m := Match{Tag: t.defaultTag}
	block := netip.PrefixFrom(addr, 0)
	matched := false
	for _, c := range t.cidrs {
		if c.prefix.Contains(addr) {
			m.Tag, m.Region, block, matched = c.tag, c.prefix.String(), c.prefix, true
			break
		}
	}
	if !matched && loc != nil && t.NeedsLocator() {
		where, netw := loc.Locate(addr)
		if netw.IsValid() && netw.Addr().Is4() == addr.Is4() && netw.Contains(addr) {
			block = netw
		}
		if tag, ok := t.countries[where.Country]; ok && where.Country != "" {
			m.Tag, m.Region = tag, where.Country
		} else if tag, ok := t.continents[where.Continent]; ok && where.Continent != "" {
			m.Tag, m.Region = tag, ContinentPrefix+where.Continent
		}
	}
	bits := block.Bits()
	for _, c := range t.cidrs {
		if c.prefix.Bits() <= block.Bits() || c.prefix.Addr().Is4() != addr.Is4() || !block.Contains(c.prefix.Addr()) {
			continue
		}
		// c lies inside the block and does not contain addr (it would have matched, being
		// longer): the scope must leave it out.
		bits = max(bits, min(commonBits(addr, c.prefix.Addr())+1, c.prefix.Bits()))
	}
	m.Scope, _ = addr.Prefix(bits)
	return m
}

// commonBits is the length of the common prefix of two addresses of one family.
func commonBits(a, b netip.Addr) int {
	x, y := a.As16(), b.As16()
	n := 0
	for i := range x {
		d := x[i] ^ y[i]
		if d == 0 {
			n += 8
			continue
		}
		for d&0x80 == 0 {
			n++
			d <<= 1
		}
		break
	}
	if a.Is4() {
		n -= 96
	}
	return n
}
