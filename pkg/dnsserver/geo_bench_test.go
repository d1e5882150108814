package dnsserver

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/geotest"
	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// benchGeoStore is benchZoneStore with every A set turned into a geo Gslb's three geo sets,
// as hack/dnsbench -geo serves it: eu (the default, DE) with the set's records, us
// (continent:NA) and ap (203.0.113.0/24) with other addresses.
func benchGeoStore(b *testing.B) *zonedb.Store {
	b.Helper()
	store := benchZoneStore(b)
	err := store.Update("bench.test.", func(tx *zonedb.Tx) error {
		for _, rs := range tx.RRSets() {
			if rs.Type != dns.TypeA {
				continue
			}
			tx.Delete(rs.Key())
			for _, g := range []struct {
				set  geo.Set
				addr string
			}{
				{geo.Set{Tag: "eu", Regions: []string{"DE"}, Default: true}, ""},
				{geo.Set{Tag: "us", Regions: []string{"continent:NA"}}, "198.51.100.1"},
				{geo.Set{Tag: "ap", Regions: []string{"203.0.113.0/24"}}, "203.0.113.1"},
			} {
				kv, err := geo.EncodeLabels(g.set)
				if err != nil {
					return err
				}
				c := rs.Clone()
				c.SetIdentifier, c.Labels = g.set.Tag, map[string]string{}
				for _, p := range kv {
					c.Labels[p[0]] = p[1]
				}
				if g.addr != "" {
					c.RRs = rrs(b, rs.Name+" 300 IN A "+g.addr)
				}
				if err := tx.Put(c); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return store
}

// benchGeoDB is a database with 127.0.0.0/8 in DE and 1,024 /24 networks of 10.0.0.0/14
// alternately in DE and the US.
func benchGeoDB(b *testing.B) *geo.DB {
	b.Helper()
	nets := []geotest.Network{{CIDR: "127.0.0.0/8", Country: "DE", Continent: "EU"}}
	for i := range 1024 {
		n := geotest.Network{CIDR: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256), Country: "DE", Continent: "EU"}
		if i%2 == 1 {
			n.Country, n.Continent = "US", "NA"
		}
		nets = append(nets, n)
	}
	db := &geo.DB{Path: geotest.Write(b, nets...)}
	if err := db.Load(); err != nil {
		b.Fatal(err)
	}
	return db
}

// withECS returns qs with an EDNS0 OPT and an ECS option: the /24 subnet(i) for query i.
func withECS(b *testing.B, qs [][]byte, subnet func(i int) net.IP) [][]byte {
	b.Helper()
	return repacked(b, qs, func(i int, m *dns.Msg) {
		m.SetEdns0(1232, false)
		m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: subnet(i)}}
	})
}

// BenchmarkServer_GeoAnswer compares the server's cost per query for geo answers with plain
// ones, in process through ServeDNS as BenchmarkServer_Answer measures it, over
// hack/bench-dns.sh's zone and query mix:
//   - plain: the plain zone, queries without EDNS0 (BenchmarkServer_Answer/cache);
//   - plain-ecs: the plain zone, queries with ECS (an answer with scope 0);
//   - geo-source: the geo zone, queries without ECS, located by the source address;
//   - geo-ecs: the geo zone, every query with ECS 192.0.2.0/24 (one scope);
//   - geo-ecs-1024-subnets: the geo zone, queries with ECS from 1,024 /24 subnets of the
//     database, each its own scope and cache entries.
//
// The UDP read loop answers cache hits before ServeDNS, geo ones without ECS included
// (BenchmarkServer_AnswerReadLoop, BenchmarkServer_GeoReadLoop); queries with ECS never take
// that path. hack/bench-dns.sh's embedded-geo row is the end-to-end comparison.
func BenchmarkServer_GeoAnswer(b *testing.B) {
	base := benchQueries(b, 1009)
	dbSubnet := func(i int) net.IP { return net.IPv4(10, byte(i%1024/256), byte(i%256), 0).To4() }
	de := func(int) net.IP { return net.IPv4(192, 0, 2, 0).To4() }
	for _, c := range []struct {
		name string
		geo  bool
		qs   [][]byte
	}{
		{"plain", false, base},
		{"plain-ecs", false, withECS(b, base, de)},
		{"geo-source", true, base},
		{"geo-ecs", true, withECS(b, base, de)},
		{"geo-ecs-1024-subnets", true, withECS(b, base, dbSubnet)},
	} {
		b.Run(c.name, func(b *testing.B) {
			store := benchZoneStore(b)
			opts := ServerOptions{Addr: "127.0.0.1:0"}
			if c.geo {
				store, opts.Geo = benchGeoStore(b), benchGeoDB(b)
			}
			srv, err := NewServer(store, opts)
			if err != nil {
				b.Fatal(err)
			}
			benchServeDNS(b, srv, c.qs)
		})
	}
}

// BenchmarkServer_GeoReadLoop is BenchmarkServer_AnswerReadLoop for geo answers: the UDP read
// loop's cost for a cached geo answer (parse, plain-key miss, the geo question, the database
// lookup and the match, the lookup by scope and geo tag, the copy), beside the plain zone's
// hits, from one source address, or with ECS 192.0.2.0/24 (the address patched into the copy).
func BenchmarkServer_GeoReadLoop(b *testing.B) {
	for _, c := range []struct {
		name    string
		geoZone bool
		ecs     bool
	}{{"plain", false, false}, {"geo-source", true, false}, {"plain-ecs", false, true}, {"geo-ecs", true, true}} {
		geoZone := c.geoZone
		b.Run(c.name, func(b *testing.B) {
			store, opts := benchZoneStore(b), ServerOptions{Addr: "127.0.0.1:0"}
			if geoZone {
				store, opts.Geo = benchGeoStore(b), benchGeoDB(b)
			}
			srv, err := NewServer(store, opts)
			if err != nil {
				b.Fatal(err)
			}
			from := netip.MustParseAddr("127.0.0.2")
			qs := benchQueries(b, 1009)
			if c.ecs {
				qs = withECS(b, qs, func(int) net.IP { return net.IPv4(192, 0, 2, 0).To4() })
			}
			benchReadLoop(b, srv, qs, from)
		})
	}
}
