package dnsserver

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dnsplane/dnsplane/internal/testing/dnscase"
	"github.com/dnsplane/dnsplane/internal/testing/geotest"
	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// The geo tests' database: three countries, a continent's worth of loopback for the queries
// without ECS, and IPv6.
var geoNets = []geotest.Network{
	{CIDR: "192.0.2.0/24", Country: "DE", Continent: "EU"},
	{CIDR: "198.51.100.0/24", Country: "US", Continent: "NA"},
	{CIDR: "203.0.113.0/24", Country: "JP", Continent: "AS"},
	{CIDR: "127.0.0.0/24", Country: "CA", Continent: "NA"},
	{CIDR: "127.0.34.0/24", Country: "DE", Continent: "EU"},
	{CIDR: "2001:db8:de::/48", Country: "DE", Continent: "EU"},
}

// geoRegions is the example of docs/api.md's geo Gslb: DE -> eu, continent:NA -> us, 203.0.113.0/24 -> ap,
// default eu.
var geoRegions = map[string]string{"DE": "eu", "continent:NA": "us", "203.0.113.0/24": "ap"}

// geoTargets are each tag's one target per family.
var geoTargets = map[string][2]string{
	"eu": {"192.0.2.10", "2001:db8::e0"},
	"us": {"198.51.100.10", "2001:db8::a0"},
	"ap": {"203.0.113.10", "2001:db8::a9"},
}

// putGeoSets writes app.geo.test's A and AAAA geo sets as the Gslb controller computes them:
// each tag's targets after the fallback order, per family (gslb.Strategy.Compute) over
// healthy, with its regions.
func putGeoSets(t testing.TB, store *zonedb.Store, healthy map[string][]string) {
	t.Helper()
	ans, err := gslb.Strategy{Type: gslb.Geo, GeoRegions: geoRegions, DefaultGeoTag: "eu"}.Compute(healthy)
	if err != nil {
		t.Fatal(err)
	}
	resolved := map[string][]string{}
	for _, gs := range ans.Geo {
		resolved[gs.GeoTag] = gs.Targets
	}
	putGeoRecords(t, store, resolved)
}

// putGeoRecords writes app.geo.test's A and AAAA geo sets: each tag's targets of resolved,
// with its regions; a tag without targets of a type has no set of that type.
func putGeoRecords(t testing.TB, store *zonedb.Store, resolved map[string][]string) {
	t.Helper()
	err := store.Update("geo.test.", func(tx *zonedb.Tx) error {
		for _, typ := range []uint16{dns.TypeA, dns.TypeAAAA} {
			for _, tag := range geo.Tags(geoRegions, "eu") {
				var regions []string
				for r, tg := range geoRegions {
					if tg == tag {
						regions = append(regions, r)
					}
				}
				kv, err := geo.EncodeLabels(geo.Set{Tag: tag, Regions: regions, Default: tag == "eu"})
				if err != nil {
					t.Fatal(err)
				}
				labels := map[string]string{}
				for _, p := range kv {
					labels[p[0]] = p[1]
				}
				var list []dns.RR
				for _, target := range resolved[tag] {
					a := netip.MustParseAddr(target)
					if a.Is4() != (typ == dns.TypeA) {
						continue
					}
					list = append(list, rrs(t, "app.geo.test. 30 IN "+dns.TypeToString[typ]+" "+target)...)
				}
				k := zonedb.SetKey{Name: "app.geo.test.", Type: typ, SetIdentifier: tag}
				if len(list) == 0 {
					tx.Delete(k)
					continue
				}
				if err := tx.Put(zonedb.RRSet{Name: k.Name, Type: typ, TTL: 30, SetIdentifier: tag, Labels: labels, RRs: list}); err != nil {
					t.Fatal(err)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// allHealthy is every tag's targets.
func allHealthy() map[string][]string {
	h := map[string][]string{}
	for tag, ts := range geoTargets {
		h[tag] = ts[:]
	}
	return h
}

// geoFixture serves geo.test (app: geo sets; plain: a plain A record) with the test database.
type geoFixture struct {
	store *zonedb.Store
	srv   *Server
	db    *geo.DB
	path  string
	reg   *prometheus.Registry
}

func newGeoFixture(t *testing.T) *geoFixture {
	t.Helper()
	f := &geoFixture{path: geotest.Write(t, geoNets...), reg: prometheus.NewRegistry()}
	f.db = &geo.DB{Path: f.path}
	if err := f.db.Load(); err != nil {
		t.Fatal(err)
	}
	f.store = zonedb.NewStore(zonedb.StoreOptions{NameServerAddrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}})
	if err := f.store.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.CreateZone("geo.test", zonedb.ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Update("geo.test.", func(tx *zonedb.Tx) error {
		put(t, tx, "", nil, "plain.geo.test. 30 IN A 192.0.2.99")
		put(t, tx, "", nil, "alias.geo.test. 30 IN CNAME app.geo.test.")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	putGeoSets(t, f.store, allHealthy())
	m, err := NewMetrics(f.reg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = startServer(t, f.store, ServerOptions{Geo: f.db, Metrics: m, UDPSockets: 1})
	return f
}

// ecsQuery is a query for name/qtype with an ECS option of subnet (nil: no option).
func ecsQuery(name string, qtype uint16, subnet *netip.Prefix) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(1232, false)
	if subnet != nil {
		fam := uint16(ecsFamilyIPv4)
		if subnet.Addr().Is6() {
			fam = ecsFamilyIPv6
		}
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: fam,
			SourceNetmask: uint8(subnet.Bits()), Address: net.IP(subnet.Addr().AsSlice())})
	}
	return m
}

// addrs returns the A/AAAA values of an answer, sorted.
func addrs(r *dns.Msg) []string {
	out := dnscase.Addrs(r.Answer)
	slices.Sort(out)
	return out
}

// ecsOf returns the answer's ECS option, nil without one.
func ecsOf(r *dns.Msg) *dns.EDNS0_SUBNET {
	if o := r.IsEdns0(); o != nil {
		for _, e := range o.Option {
			if s, ok := e.(*dns.EDNS0_SUBNET); ok {
				return s
			}
		}
	}
	return nil
}

func pfx(s string) *netip.Prefix { p := netip.MustParsePrefix(s); return &p }

// TestGeo_ECSFromThreeCountries: queries with ECS from subnets of three
// countries get the three regions' targets with the right scope, over UDP and TCP, first
// resolved and then from the cache; the option comes back with the query's family, source
// prefix and address.
func TestGeo_ECSFromThreeCountries(t *testing.T) {
	f := newGeoFixture(t)
	addr := f.srv.Addr()
	for _, tc := range []struct {
		subnet string
		qtype  uint16
		want   string
		scope  uint8
	}{
		{"192.0.2.0/24", dns.TypeA, "192.0.2.10", 24},       // DE -> eu
		{"198.51.100.0/24", dns.TypeA, "198.51.100.10", 24}, // US, continent:NA -> us
		{"203.0.113.0/24", dns.TypeA, "203.0.113.10", 24},   // JP, but the CIDR -> ap
		{"192.0.2.128/25", dns.TypeA, "192.0.2.10", 24},     // a longer source: the scope is the answer's
		{"198.51.100.0/24", dns.TypeAAAA, "2001:db8::a0", 24},
		{"2001:db8:de::/56", dns.TypeAAAA, "2001:db8::e0", 48}, // an IPv6 client subnet
	} {
		for _, proto := range []string{"udp", "tcp", "udp"} { // the second UDP query is a cache hit
			r := exchange(t, addr, proto, ecsQuery("app.geo.test.", tc.qtype, pfx(tc.subnet)))
			e := ecsOf(r)
			if r.Rcode != dns.RcodeSuccess || !slices.Equal(addrs(r), []string{tc.want}) || e == nil {
				t.Fatalf("%s %s ECS %s: rcode %s answer %v ecs %v; want %s", proto, dns.TypeToString[tc.qtype], tc.subnet, dns.RcodeToString[r.Rcode], addrs(r), e, tc.want)
			}
			sent := netip.MustParsePrefix(tc.subnet)
			if e.SourceScope != tc.scope || int(e.SourceNetmask) != sent.Bits() || !net.IP(sent.Addr().AsSlice()).Equal(e.Address) {
				t.Fatalf("%s ECS %s: option back %v; want source %d, scope %d, the same address", proto, tc.subnet, e, sent.Bits(), tc.scope)
			}
		}
	}
	if n := f.srv.cacheHits.Load(); n == 0 {
		t.Fatal("no geo answer came from the cache")
	}
}

// TestGeo_CacheIsPerScope: a cached answer for one scope is never served to another scope,
// and a hit within the scope echoes the asker's own address.
func TestGeo_CacheIsPerScope(t *testing.T) {
	f := newGeoFixture(t)
	addr := f.srv.Addr()
	before := f.srv.cacheHits.Load()
	for i := range 3 {
		for _, tc := range []struct{ subnet, want string }{
			{"192.0.2.0/24", "192.0.2.10"},
			{"198.51.100.0/24", "198.51.100.10"},
			{"203.0.113.0/24", "203.0.113.10"},
		} {
			r := exchange(t, addr, "udp", ecsQuery("app.geo.test.", dns.TypeA, pfx(tc.subnet)))
			if got := addrs(r); !slices.Equal(got, []string{tc.want}) {
				t.Fatalf("round %d, ECS %s: %v, want %s", i, tc.subnet, got, tc.want)
			}
		}
	}
	// Two /28 sources inside DE's /24 share the /24-scoped entry; each gets its own address back.
	for _, s := range []string{"192.0.2.16/28", "192.0.2.32/28", "192.0.2.16/28"} {
		r := exchange(t, addr, "udp", ecsQuery("app.geo.test.", dns.TypeA, pfx(s)))
		e := ecsOf(r)
		want := netip.MustParsePrefix(s)
		if !slices.Equal(addrs(r), []string{"192.0.2.10"}) || e == nil || !net.IP(want.Addr().AsSlice()).Equal(e.Address) || e.SourceScope != 24 {
			t.Fatalf("ECS %s: %v, option %v", s, addrs(r), e)
		}
	}
	if hits := f.srv.cacheHits.Load() - before; hits < 7 {
		t.Fatalf("%d cache hits over 12 queries of 4 scopes; want at least 7", hits)
	}
}

// TestGeo_WithoutECSTheSourceAddressDecides: a query without ECS is located by the address it
// comes from (the resolver's): 127.0.0.1 is CA (continent NA) -> us, 127.0.34.2 is DE -> eu.
// No ECS goes back.
func TestGeo_WithoutECSTheSourceAddressDecides(t *testing.T) {
	f := newGeoFixture(t)
	for _, tc := range []struct{ src, want string }{
		{"127.0.0.1", "198.51.100.10"},
		{"127.0.34.2", "192.0.2.10"},
		{"127.0.0.1", "198.51.100.10"},
		{"127.0.34.2", "192.0.2.10"},
	} {
		for _, proto := range []string{"udp", "tcp"} {
			var local net.Addr = &net.UDPAddr{IP: net.ParseIP(tc.src)}
			if proto == "tcp" {
				local = &net.TCPAddr{IP: net.ParseIP(tc.src)}
			}
			c := &dns.Client{Net: proto, Dialer: &net.Dialer{LocalAddr: local, Timeout: 2 * time.Second}, Timeout: 2 * time.Second}
			for _, edns := range []bool{false, true} {
				m := new(dns.Msg)
				m.SetQuestion("app.geo.test.", dns.TypeA)
				if edns {
					m.SetEdns0(1232, false)
				}
				r, _, err := c.Exchange(m, f.srv.Addr())
				if err != nil {
					t.Fatalf("from %s over %s: %v", tc.src, proto, err)
				}
				if got := addrs(r); !slices.Equal(got, []string{tc.want}) || ecsOf(r) != nil {
					t.Fatalf("from %s over %s (EDNS %v): %v, ECS %v; want %s and no ECS", tc.src, proto, edns, got, ecsOf(r), tc.want)
				}
			}
		}
	}
}

// TestGeo_UnknownSubnetGetsTheDefault: a subnet the database does not know, and a client that
// asks for no address (source prefix 0, RFC 7871 §7.1.2), get the default geo tag; the first
// with the scope of the database's empty network, the second with scope 0.
func TestGeo_UnknownSubnetGetsTheDefault(t *testing.T) {
	f := newGeoFixture(t)
	tab, err := geo.NewTable([]geo.Set{{Tag: "eu", Regions: []string{"DE"}, Default: true}, {Tag: "us", Regions: []string{"continent:NA"}}, {Tag: "ap", Regions: []string{"203.0.113.0/24"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := tab.Match(netip.MustParseAddr("8.8.8.0"), f.db).Scope
	if want.Bits() == 0 || want.Bits() > 24 {
		t.Fatalf("the database's empty network around 8.8.8.0 is %s", want)
	}
	for range 2 {
		r := exchange(t, f.srv.Addr(), "udp", ecsQuery("app.geo.test.", dns.TypeA, pfx("8.8.8.0/24")))
		if e := ecsOf(r); !slices.Equal(addrs(r), []string{"192.0.2.10"}) || e == nil || int(e.SourceScope) != want.Bits() {
			t.Fatalf("unknown subnet: %v, option %v; want the default eu, scope %d", addrs(r), e, want.Bits())
		}
		r = exchange(t, f.srv.Addr(), "udp", ecsQuery("app.geo.test.", dns.TypeA, pfx("0.0.0.0/0")))
		if e := ecsOf(r); !slices.Equal(addrs(r), []string{"192.0.2.10"}) || e == nil || e.SourceScope != 0 {
			t.Fatalf("source prefix 0: %v, option %v; want the default eu, scope 0", addrs(r), e)
		}
	}
}

// TestGeo_FallbackOrder: a geo tag whose targets are all down is served the default's targets;
// with the default down too, the first tag's in tag order; the sets are those the controller
// computes (gslb.Strategy.Compute) and the answers move at once, past the cache.
func TestGeo_FallbackOrder(t *testing.T) {
	f := newGeoFixture(t)
	us := pfx("198.51.100.0/24")
	de := pfx("192.0.2.0/24")
	ask := func(p *netip.Prefix) []string {
		return addrs(exchange(t, f.srv.Addr(), "udp", ecsQuery("app.geo.test.", dns.TypeA, p)))
	}
	if got := ask(us); !slices.Equal(got, []string{"198.51.100.10"}) {
		t.Fatalf("all healthy: us gets %v", got)
	}
	h := allHealthy()
	delete(h, "us")
	putGeoSets(t, f.store, h)
	if got := ask(us); !slices.Equal(got, []string{"192.0.2.10"}) {
		t.Fatalf("us down: us gets %v, want the default eu's", got)
	}
	delete(h, "eu")
	putGeoSets(t, f.store, h)
	if got := ask(us); !slices.Equal(got, []string{"203.0.113.10"}) {
		t.Fatalf("us and eu down: us gets %v, want every other tag's (ap)", got)
	}
	if got := ask(de); !slices.Equal(got, []string{"203.0.113.10"}) {
		t.Fatalf("us and eu down: DE gets %v, want ap's", got)
	}
	h = allHealthy()
	delete(h, "eu")
	putGeoSets(t, f.store, h)
	if got := ask(de); !slices.Equal(got, []string{"203.0.113.10"}) {
		t.Fatalf("eu (the default) down: DE gets %v, want ap's (the first tag in order), not us's and ap's together", got)
	}
}

// TestGeo_OtherAnswersCarryScopeZero: an answer that does not depend on the client (a plain
// name, NXDOMAIN) tells an ECS query scope 0, so a resolver caches it for everyone (RFC 7871
// §7.2.1); a CNAME to a geo name is scoped like the geo name.
func TestGeo_OtherAnswersCarryScopeZero(t *testing.T) {
	f := newGeoFixture(t)
	for _, tc := range []struct {
		name  string
		want  []string
		scope uint8
	}{
		{"plain.geo.test.", []string{"192.0.2.99"}, 0},
		{"nothere.geo.test.", nil, 0},
		{"alias.geo.test.", []string{"198.51.100.10"}, 24},
	} {
		for range 2 {
			r := exchange(t, f.srv.Addr(), "udp", ecsQuery(tc.name, dns.TypeA, pfx("198.51.100.0/24")))
			if e := ecsOf(r); !slices.Equal(addrs(r), tc.want) || e == nil || e.SourceScope != tc.scope {
				t.Fatalf("%s: %v, option %v; want %v with scope %d", tc.name, addrs(r), e, tc.want, tc.scope)
			}
		}
	}
}

// TestGeo_MalformedECSIsFORMERR: address bits past the source prefix, and a source prefix
// longer than the family, get FORMERR (RFC 7871 §6). miekg/dns masks what it packs, so the
// option is edited in the packed query: 192.0.2.0 sent with source prefix 16.
func TestGeo_MalformedECSIsFORMERR(t *testing.T) {
	f := newGeoFixture(t)
	for _, src := range []byte{16, 33} {
		pkt, err := ecsQuery("app.geo.test.", dns.TypeA, pfx("192.0.2.0/24")).Pack()
		if err != nil {
			t.Fatal(err)
		}
		// The option ends the packet: code 8, length 7, family 1, source 24, scope 0, 3 octets.
		opt := pkt[len(pkt)-11:]
		if opt[1] != dns.EDNS0SUBNET || opt[6] != 24 {
			t.Fatalf("packed option % x", opt)
		}
		opt[6] = src
		conn, err := net.Dial("udp", f.srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := conn.Write(pkt); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1500)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("source %d: %v", src, err)
		}
		r := new(dns.Msg)
		if err := r.Unpack(buf[:n]); err != nil {
			t.Fatal(err)
		}
		if r.Rcode != dns.RcodeFormatError {
			t.Fatalf("ECS 192.0.2.0 with source prefix %d: rcode %s, want FORMERR", src, dns.RcodeToString[r.Rcode])
		}
	}
}

// TestGeo_DatabaseReloadMovesAnswers: after the database is replaced, the same subnet is
// located anew; nothing cached from the old database answers.
func TestGeo_DatabaseReloadMovesAnswers(t *testing.T) {
	f := newGeoFixture(t)
	de := pfx("192.0.2.0/24")
	for range 2 {
		if got := addrs(exchange(t, f.srv.Addr(), "udp", ecsQuery("app.geo.test.", dns.TypeA, de))); !slices.Equal(got, []string{"192.0.2.10"}) {
			t.Fatalf("before: %v", got)
		}
	}
	nets := slices.Clone(geoNets)
	nets[0] = geotest.Network{CIDR: "192.0.2.0/24", Country: "US", Continent: "NA"}
	f.db.Path = geotest.Write(t, nets...)
	if err := f.db.Load(); err != nil {
		t.Fatal(err)
	}
	if got := addrs(exchange(t, f.srv.Addr(), "udp", ecsQuery("app.geo.test.", dns.TypeA, de))); !slices.Equal(got, []string{"198.51.100.10"}) {
		t.Fatalf("after 192.0.2.0/24 moved to US: %v, want us's", got)
	}
}

// TestGeo_Metric: dnsplane_dnsserver_geo_queries_total counts geo answers by geo tag and ECS,
// cache hits included; a plain answer is not counted.
func TestGeo_Metric(t *testing.T) {
	f := newGeoFixture(t)
	for range 3 {
		exchange(t, f.srv.Addr(), "udp", ecsQuery("app.geo.test.", dns.TypeA, pfx("203.0.113.0/24")))
	}
	exchange(t, f.srv.Addr(), "udp", ecsQuery("app.geo.test.", dns.TypeA, nil)) // from 127.0.0.1: us
	exchange(t, f.srv.Addr(), "udp", ecsQuery("plain.geo.test.", dns.TypeA, pfx("203.0.113.0/24")))
	m := f.srv.opts.Metrics.Geo
	if got := testutil.ToFloat64(m.WithLabelValues("ap", "true")); got != 3 {
		t.Errorf("ap with ECS: %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.WithLabelValues("us", "false")); got != 1 {
		t.Errorf("us without ECS: %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m); n != 2 {
		t.Errorf("%d geo series, want 2", n)
	}
}

// TestGeo_ReadLoopAnswersGeoHitsBySource: once a geo answer is cached, the UDP read loop
// (appendHit) answers a query without ECS from the cache entry of its source address's scope,
// never from another scope's, and counts it in the geo metric.
func TestGeo_ReadLoopAnswersGeoHitsBySource(t *testing.T) {
	f := newGeoFixture(t)
	// Cache both scopes' answers the long way (the first query of each source).
	for _, src := range []string{"127.0.0.1", "127.0.34.2"} {
		c := &dns.Client{Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP(src)}, Timeout: 2 * time.Second}, Timeout: 2 * time.Second}
		m := new(dns.Msg)
		m.SetQuestion("app.geo.test.", dns.TypeA)
		if _, _, err := c.Exchange(m, f.srv.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	m := new(dns.Msg)
	m.SetQuestion("app.geo.test.", dns.TypeA)
	pkt, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(f.srv.opts.Metrics.Geo.WithLabelValues("eu", "false"))
	for _, tc := range []struct{ from, want string }{
		{"127.0.0.1", "198.51.100.10"}, {"127.0.34.2", "192.0.2.10"}, {"::ffff:127.0.34.9", "192.0.2.10"},
	} {
		out, _, rcode, ok := f.srv.appendHit(nil, nil, f.store.Snapshot(), pkt, netip.MustParseAddr(tc.from).Unmap())
		if !ok || rcode != dns.RcodeSuccess {
			t.Fatalf("from %s: no read-loop hit", tc.from)
		}
		r := new(dns.Msg)
		if err := r.Unpack(out); err != nil {
			t.Fatal(err)
		}
		if got := addrs(r); !slices.Equal(got, []string{tc.want}) {
			t.Fatalf("from %s: read loop answered %v, want %s", tc.from, got, tc.want)
		}
	}
	if _, _, _, ok := f.srv.appendHit(nil, nil, f.store.Snapshot(), pkt, netip.MustParseAddr("192.0.2.77")); ok {
		t.Fatal("a source whose scope was never answered got a read-loop hit")
	}
	if got := testutil.ToFloat64(f.srv.opts.Metrics.Geo.WithLabelValues("eu", "false")) - before; got != 2 {
		t.Fatalf("geo metric counted %v read-loop hits of eu, want 2", got)
	}
}

// TestGeo_ReadLoopAnswersECSHits: the UDP read loop answers a query with a well-formed ECS
// option from the cache: a geo answer by the option's scope (never the source address's), a
// plain answer for any subnet, each echoing the asker's own option with the cached scope.
func TestGeo_ReadLoopAnswersECSHits(t *testing.T) {
	f := newGeoFixture(t)
	for _, q := range []*dns.Msg{
		ecsQuery("app.geo.test.", dns.TypeA, pfx("198.51.100.0/24")),
		ecsQuery("plain.geo.test.", dns.TypeA, pfx("198.51.100.0/24")),
	} {
		exchange(t, f.srv.Addr(), "udp", q) // cached the long way
	}
	hit := func(q *dns.Msg, from string) (*dns.Msg, bool) {
		t.Helper()
		pkt, err := q.Pack()
		if err != nil {
			t.Fatal(err)
		}
		out, _, _, ok := f.srv.appendHit(nil, nil, f.store.Snapshot(), pkt, netip.MustParseAddr(from))
		if !ok {
			return nil, false
		}
		r := new(dns.Msg)
		if err := r.Unpack(out); err != nil {
			t.Fatal(err)
		}
		return r, true
	}
	// The option decides, not the source address (127.0.34.2 is in DE).
	r, ok := hit(ecsQuery("app.geo.test.", dns.TypeA, pfx("198.51.100.0/24")), "127.0.34.2")
	if !ok || !slices.Equal(addrs(r), []string{"198.51.100.10"}) || ecsOf(r) == nil || ecsOf(r).SourceScope != 24 {
		t.Fatalf("geo ECS hit: ok=%v %v", ok, r)
	}
	if _, ok := hit(ecsQuery("app.geo.test.", dns.TypeA, pfx("192.0.2.0/24")), "127.0.0.1"); ok {
		t.Fatal("a scope never answered got a read-loop hit")
	}
	// A plain answer holds for every subnet: scope 0, the asker's address echoed.
	r, ok = hit(ecsQuery("plain.geo.test.", dns.TypeA, pfx("203.0.113.0/24")), "127.0.0.1")
	if e := ecsOf(r); !ok || !slices.Equal(addrs(r), []string{"192.0.2.99"}) || e == nil || e.SourceScope != 0 || !e.Address.Equal(net.IPv4(203, 0, 113, 0)) {
		t.Fatalf("plain ECS hit: ok=%v %v", ok, r)
	}
	// Another source prefix length is another key: the long way.
	if _, ok := hit(ecsQuery("plain.geo.test.", dns.TypeA, pfx("203.0.113.0/25")), "127.0.0.1"); ok {
		t.Fatal("a /25 source was answered from a /24 source's entry")
	}
}
