package geo

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrInvalidRegion: a geoRegions key that is none of the three forms (see ParseRegion).
var ErrInvalidRegion = errors.New("invalid geo region")

// RegionKind is the form of a region key; the order is the match precedence, most specific
// first.
type RegionKind int

const (
	// KindCIDR: an IPv4 or IPv6 network ("203.0.113.0/24").
	KindCIDR RegionKind = iota
	// KindCountry: an ISO 3166-1 alpha-2 code as the database writes it ("DE").
	KindCountry
	// KindContinent: a continent code as MaxMind writes it ("continent:EU").
	KindContinent
)

// ContinentPrefix prefixes a continent code in a region key.
const ContinentPrefix = "continent:"

// continents are MaxMind's continent codes (GeoIP2 "continent.code"): Africa, Antarctica,
// Asia, Europe, North America, Oceania, South America.
var continents = [...]string{"AF", "AN", "AS", "EU", "NA", "OC", "SA"}

// Region is one parsed geoRegions key.
type Region struct {
	Kind RegionKind
	// Code is the country or continent code (upper case), for those kinds.
	Code string
	// Prefix is the network, for KindCIDR (masked, the IPv4 form for IPv4).
	Prefix netip.Prefix
}

// ParseRegion parses a geoRegions key with the rules the CRD enforces at admission (CEL on
// GslbStrategy.GeoRegions): two upper-case letters; "continent:" and one of AF AN AS EU NA OC
// SA; or a CIDR whose string is canonical (host bits zero, netip's form: lower case, shortest
// IPv6). Anything else is ErrInvalidRegion.
func ParseRegion(key string) (Region, error) {
	switch {
	case len(key) == 2 && isUpper(key[0]) && isUpper(key[1]):
		return Region{Kind: KindCountry, Code: key}, nil
	case strings.HasPrefix(key, ContinentPrefix):
		c := key[len(ContinentPrefix):]
		for _, k := range continents {
			if c == k {
				return Region{Kind: KindContinent, Code: c}, nil
			}
		}
		return Region{}, fmt.Errorf("%w %q: the continent must be one of %s", ErrInvalidRegion, key, strings.Join(continents[:], " "))
	}
	p, err := netip.ParsePrefix(key)
	if err != nil {
		return Region{}, fmt.Errorf("%w %q: neither a country code, continent:XX nor a CIDR", ErrInvalidRegion, key)
	}
	if p.Addr().Zone() != "" || p.Addr().Is4In6() || p.Masked().String() != key {
		return Region{}, fmt.Errorf("%w %q: a CIDR must be canonical (%s)", ErrInvalidRegion, key, p.Masked())
	}
	return Region{Kind: KindCIDR, Prefix: p.Masked()}, nil
}

func isUpper(b byte) bool { return b >= 'A' && b <= 'Z' }
