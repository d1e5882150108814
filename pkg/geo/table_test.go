package geo_test

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/dnsplane/dnsplane/internal/testing/geotest"
	"github.com/dnsplane/dnsplane/pkg/geo"
)

// testNets is the generated database of these tests.
var testNets = []geotest.Network{
	{CIDR: "192.0.2.0/24", Country: "DE", Continent: "EU"},
	{CIDR: "198.51.100.0/24", Country: "US", Continent: "NA"},
	{CIDR: "198.51.101.0/24", Country: "CA", Continent: "NA"},
	{CIDR: "203.0.113.0/24", Country: "JP", Continent: "AS"},
	{CIDR: "100.64.0.0/16", RegisteredCountry: "FR", Continent: "EU"}, // no country: registered_country counts
	{CIDR: "10.0.0.0/8", Country: "BR", Continent: "SA"},
	{CIDR: "172.16.0.0/12", Country: "AU"}, // no continent, country not a region: the default
	{CIDR: "2001:db8:de::/48", Country: "DE", Continent: "EU"},
	{CIDR: "2001:db8:1::/48", Country: "US", Continent: "NA"},
}

// testSets are the geo sets: a typical geoRegions map plus nested CIDRs and a continent.
var testSets = []geo.Set{
	{Tag: "eu", Regions: []string{"203.0.113.128/25", "DE", "FR"}, Default: true},
	{Tag: "us", Regions: []string{"continent:NA"}},
	{Tag: "ap", Regions: []string{"10.1.2.0/24", "203.0.113.0/24", "2001:db8:1:ff00::/56"}},
	{Tag: "sa", Regions: []string{"continent:SA"}},
}

func testDB(t *testing.T) *geo.DB {
	t.Helper()
	db := &geo.DB{Path: geotest.Write(t, testNets...)}
	if err := db.Load(); err != nil {
		t.Fatal(err)
	}
	return db
}

func testTable(t *testing.T) *geo.Table {
	t.Helper()
	tab, err := geo.NewTable(testSets)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestTable_Match(t *testing.T) {
	db, tab := testDB(t), testTable(t)
	for _, tc := range []struct {
		addr, tag, region, scope string
	}{
		{"192.0.2.55", "eu", "DE", "192.0.2.0/24"},
		{"::ffff:192.0.2.55", "eu", "DE", "192.0.2.0/24"}, // IPv4-mapped counts as IPv4
		{"198.51.100.7", "us", "continent:NA", "198.51.100.0/24"},
		{"198.51.101.7", "us", "continent:NA", "198.51.101.0/24"},
		// A CIDR wins over the country (JP); the nested /25 splits it.
		{"203.0.113.5", "ap", "203.0.113.0/24", "203.0.113.0/25"},
		{"203.0.113.200", "eu", "203.0.113.128/25", "203.0.113.128/25"},
		{"100.64.3.4", "eu", "FR", "100.64.0.0/16"},
		// BR's /8 holds ap's 10.1.2.0/24: the scope stops one bit past their common prefix.
		{"10.9.9.9", "sa", "continent:SA", "10.8.0.0/13"},
		{"10.1.3.1", "sa", "continent:SA", "10.1.3.0/24"},
		{"10.1.2.3", "ap", "10.1.2.0/24", "10.1.2.0/24"},
		{"172.20.0.1", "eu", "", "172.16.0.0/12"},
		{"2001:db8:de::1", "eu", "DE", "2001:db8:de::/48"},
		{"2001:db8:1::1", "us", "continent:NA", "2001:db8:1::/49"},
		{"2001:db8:1:ff12::1", "ap", "2001:db8:1:ff00::/56", "2001:db8:1:ff00::/56"},
	} {
		m := tab.Match(netip.MustParseAddr(tc.addr), db)
		if m.Tag != tc.tag || m.Region != tc.region || m.Scope.String() != tc.scope {
			t.Errorf("Match(%s) = %s %q %s; want %s %q %s", tc.addr, m.Tag, m.Region, m.Scope, tc.tag, tc.region, tc.scope)
		}
	}
}

func TestTable_MatchUnknownGetsDefault(t *testing.T) {
	db, tab := testDB(t), testTable(t)
	for _, a := range []string{"8.8.8.8", "127.0.0.1", "192.0.3.1", "2001:db8:2::1", "::1"} {
		addr := netip.MustParseAddr(a)
		m := tab.Match(addr, db)
		if m.Tag != "eu" || m.Region != "" || !m.Scope.Contains(addr) {
			t.Errorf("Match(%s) = %+v; want the default eu with a scope around it", a, m)
		}
		for _, n := range testNets {
			if p := netip.MustParsePrefix(n.CIDR); p.Overlaps(m.Scope) {
				t.Errorf("Match(%s): scope %s overlaps the database's %s", a, m.Scope, p)
			}
		}
	}
}

func TestTable_MatchWithoutDatabase(t *testing.T) {
	tab := testTable(t)
	for _, tc := range []struct {
		addr, tag, region, scope string
		loc                      geo.Locator
	}{
		// Without a database only CIDRs match; the scope leaves out every region CIDR.
		{"192.0.2.55", "eu", "", "192.0.0.0/5", nil},
		{"203.0.113.5", "ap", "203.0.113.0/24", "203.0.113.0/25", nil},
		{"2001:db8:de::1", "eu", "", "2001:db8:80::/41", nil}, // 40 bits in common with 2001:db8:1:ff00::/56
		// A DB that never loaded locates nothing.
		{"192.0.2.55", "eu", "", "192.0.0.0/5", &geo.DB{Path: "/nonexistent"}},
	} {
		m := tab.Match(netip.MustParseAddr(tc.addr), tc.loc)
		if m.Tag != tc.tag || m.Region != tc.region {
			t.Errorf("Match(%s) = %+v; want %s %q", tc.addr, m, tc.tag, tc.region)
		}
		if m.Scope.String() != tc.scope {
			t.Errorf("Match(%s) scope %s; want %s", tc.addr, m.Scope, tc.scope)
		}
		if m.Scope.Overlaps(netip.MustParsePrefix("2001:db8:1:ff00::/56")) && m.Tag != "ap" {
			t.Errorf("Match(%s) scope %s overlaps ap's CIDR", tc.addr, m.Scope)
		}
	}
	// A table of CIDRs only does not ask the database: the scope ignores its networks.
	cidrOnly, err := geo.NewTable([]geo.Set{{Tag: "ap", Regions: []string{"203.0.113.0/24"}}, {Tag: "eu", Default: true}})
	if err != nil {
		t.Fatal(err)
	}
	if cidrOnly.NeedsLocator() {
		t.Fatal("a CIDR-only table needs a locator")
	}
	if m := cidrOnly.Match(netip.MustParseAddr("192.0.2.1"), testDB(t)); m.Tag != "eu" || m.Scope.String() != "192.0.0.0/5" {
		t.Errorf("CIDR-only Match(192.0.2.1) = %+v", m)
	}
}

func TestTable_NoDefault(t *testing.T) {
	tab, err := geo.NewTable([]geo.Set{{Tag: "ap", Regions: []string{"203.0.113.0/24"}}})
	if err != nil {
		t.Fatal(err)
	}
	if m := tab.Match(netip.MustParseAddr("192.0.2.1"), nil); m.Tag != "" {
		t.Errorf("no default: Match = %+v, want tag \"\"", m)
	}
}

func TestNewTable_Refuses(t *testing.T) {
	for name, sets := range map[string][]geo.Set{
		"a region in two sets": {{Tag: "eu", Regions: []string{"DE"}}, {Tag: "us", Regions: []string{"DE"}}},
		"two defaults":         {{Tag: "eu", Default: true}, {Tag: "us", Default: true}},
		"an invalid region":    {{Tag: "eu", Regions: []string{"de"}}},
	} {
		if _, err := geo.NewTable(sets); err == nil {
			t.Errorf("%s: NewTable accepted it", name)
		}
	}
}

// TestTable_ScopeIsUniform is the property a resolver's cache relies on: every address in a
// match's scope gets the same geo tag. Random addresses near the test networks, and for each
// the scope's first and last address and 64 random ones inside it.
func TestTable_ScopeIsUniform(t *testing.T) {
	db, tab := testDB(t), testTable(t)
	rnd := rand.New(rand.NewPCG(34, 7))
	bases := []string{"192.0.2.0", "198.51.100.0", "203.0.113.0", "100.64.0.0", "10.0.0.0", "10.1.2.0", "172.16.0.0", "8.8.0.0", "2001:db8:de::", "2001:db8:1::", "2001:db8:1:ff00::"}
	for i := range 2000 {
		base := netip.MustParseAddr(bases[i%len(bases)])
		addr := randomIn(rnd, netip.PrefixFrom(base, base.BitLen()-rnd.IntN(min(base.BitLen(), 24)+1)))
		m := tab.Match(addr, db)
		if !m.Scope.Contains(addr) {
			t.Fatalf("Match(%s): scope %s does not contain it", addr, m.Scope)
		}
		probes := []netip.Addr{m.Scope.Addr(), last(m.Scope)}
		for range 64 {
			probes = append(probes, randomIn(rnd, m.Scope))
		}
		for _, p := range probes {
			if got := tab.Match(p, db); got.Tag != m.Tag {
				t.Fatalf("Match(%s) = %s with scope %s, but %s in that scope gets %s", addr, m.Tag, m.Scope, p, got.Tag)
			}
		}
	}
}

// randomIn returns a random address of p.
func randomIn(rnd *rand.Rand, p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As16()
	off := 128 - p.Addr().BitLen() + p.Bits()
	for i := off; i < 128; i++ {
		if rnd.IntN(2) == 1 {
			b[i/8] |= 0x80 >> (i % 8)
		}
	}
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		a = a.Unmap()
	}
	return a
}

// last returns the highest address of p.
func last(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As16()
	for i := 128 - p.Addr().BitLen() + p.Bits(); i < 128; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		a = a.Unmap()
	}
	return a
}
