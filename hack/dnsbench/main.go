// Command dnsbench serves one zone from an RFC 1035 master file with the
// embedded authoritative server (pkg/dnsserver), in memory, for benchmarks
// such as hack/bench-dns.sh.
//
//	go run ./hack/dnsbench -addr 127.0.0.1:5353 -zone example.test -file example.test.zone
//
// It prints "ready" on stdout once the UDP and TCP sockets are bound and
// serves until SIGINT or SIGTERM.
//
// With -sign, the server signs the zone online (docs/dnssec.md, "Online signing in the
// embedded server") with one CSK it generates (ECDSAP256SHA256) and NSEC denial (-denial nsec3
// or compact for the others): answers to DO queries carry RRSIGs and proofs, and an AXFR from
// loopback carries the signed zone, which hack/bench-dns.sh's DNSSEC mode gives Knot to serve
// as a plain zone file (the same keys and RRsets).
//
// With -geo, every A set but the name servers' becomes the geo sets of a geo Gslb (pkg/geo's labels, as the
// Gslb controller publishes them): eu (the default, region DE) with the file's records, us
// (continent:NA) and ap (203.0.113.0/24) with other addresses; and the server locates clients
// in a GeoIP database it writes itself with mmdbwriter (127.0.0.0/8 and 192.0.2.0/24 in DE,
// 198.51.100.0/24 in the US). A client on loopback is then in DE and gets the file's records:
// the same answers as without -geo, through the geo path (the database lookup, the scope, the
// cache keyed by scope and geo tag). hack/bench-dns.sh runs it as "embedded-geo".
//
// The store manages the SOA itself: the zone is created (ns1.<zone> as name
// server) and every record set of the file is put in one update. The store's
// serials follow its clock (the Unix seconds, or the last serial + 1); dnsbench
// gives it a clock that stands still one second before the file's SOA serial,
// so the zone ends at the file's serial (2 without an SOA in the file). The
// rest of the file's SOA is not loaded; when it differs from the
// store's, a note goes to stderr, since answers carrying the SOA then differ
// from those of a server that loads the file as is. Records of one set with
// different TTLs get the smallest (RFC 2181 §5.2); duplicates are dropped; owner names are
// canonical (dnswire.CanonicalName: "esc\097ped" is "escaped"). A record the store refuses, such
// as a DNAME, which the embedded server does not apply (zonedb.Tx.Put), stops dnsbench with an
// error naming the file and the record: answers would otherwise differ from those of a server
// that applies it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/internal/testing/geotest"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5353", "host:port to serve on (UDP and TCP); port 0 picks one")
	zone := flag.String("zone", "", "zone origin, e.g. bench.test (required)")
	file := flag.String("file", "", "RFC 1035 master file of the zone (required)")
	udpSockets := flag.Int("udp-sockets", 0, "UDP sockets with SO_REUSEPORT (dnsserver.ServerOptions.UDPSockets); 0 = GOMAXPROCS")
	geoMode := flag.Bool("geo", false, "serve every A set as a geo Gslb's geo sets, with a generated GeoIP database that puts loopback in DE (the file's records)")
	sign := flag.Bool("sign", false, "sign the zone online with a generated CSK (ECDSAP256SHA256)")
	denial := flag.String("denial", "nsec", "with -sign: nsec, nsec3 (0 iterations, no salt) or compact")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile (go tool pprof) of the whole run to this file")
	flag.Parse()
	if *zone == "" || *file == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	opts := runOptions{udpSockets: *udpSockets, geo: *geoMode, cpuProfile: *cpuProfile}
	if *sign {
		p, err := signingPolicy(*zone, *denial)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dnsbench:", err)
			os.Exit(2)
		}
		opts.policy = p
	}
	if err := run(*addr, *zone, *file, opts); err != nil {
		fmt.Fprintln(os.Stderr, "dnsbench:", err)
		os.Exit(1)
	}
}

// runOptions are run's choices besides the address and the zone: the UDP sockets (0:
// GOMAXPROCS), geo sets, and the signing policy (nil: unsigned).
type runOptions struct {
	udpSockets int
	geo        bool
	policy     *dnssec.Policy
	cpuProfile string // a file for the CPU profile of the run ("": none)
}

// signingPolicy returns a policy for zone with one Active CSK (ECDSAP256SHA256) it generates
// and the denial named (nsec, nsec3 or compact).
func signingPolicy(zone, denial string) (*dnssec.Policy, error) {
	origin := dnswire.Fqdn(zone)
	k, err := dnssec.Generate(origin, dns.ECDSAP256SHA256, dnssec.RoleCSK, dnssec.Active, time.Now())
	if err != nil {
		return nil, err
	}
	p := &dnssec.Policy{Keys: dnssec.KeySet{Zone: origin, Keys: []dnssec.Key{k}}}
	switch denial {
	case "nsec":
	case "nsec3":
		p.NSEC3 = &dnssec.NSEC3Params{}
	case "compact":
		p.Compact = true
	default:
		return nil, fmt.Errorf("-denial %q: want nsec, nsec3 or compact", denial)
	}
	return p, nil
}

func run(addr, zone, file string, ro runOptions) error {
	origin := dnswire.Fqdn(zone)
	sets, soa, err := readZone(origin, file)
	if err != nil {
		return err
	}
	var db *geo.DB
	if ro.geo {
		if sets, err = geoSets(sets); err != nil {
			return err
		}
		if db, err = geoDatabase(); err != nil {
			return err
		}
	}

	last := uint32(2)
	if soa != nil {
		last = soa.Serial
	}
	// Created at last - 1 and updated once: last (nextSerial, as the clock never moves on).
	clk := clocktesting.NewFakePassiveClock(time.Unix(int64(last-1), 0))
	store := zonedb.NewStore(zonedb.StoreOptions{Clock: clk})
	if _, err := store.CreateZone(origin, zonedb.ZoneMeta{}); err != nil {
		return err
	}
	if err := store.Update(origin, func(tx *zonedb.Tx) error {
		for _, rs := range sets {
			if err := tx.Put(*rs); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("load %s: %w", file, err)
	}
	info, err := store.Zone(origin)
	if err != nil {
		return err
	}
	if soa != nil {
		noteSOA(soa, origin, info.Serial)
	}

	opts := dnsserver.ServerOptions{Addr: addr, UDPSockets: ro.udpSockets}
	if db != nil {
		opts.Geo = db
	}
	srv, err := dnsserver.NewServer(store, opts)
	if err != nil {
		return err
	}
	if ro.policy != nil {
		if err := srv.SetSigning(origin, ro.policy); err != nil {
			return err
		}
	}
	if err := srv.Listen(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(os.Stderr, "dnsbench: serving %s (%d record sets, serial %d, signed %v) on %s, GOMAXPROCS %d\n",
		origin, len(sets), info.Serial, ro.policy != nil, srv.Addr(), runtime.GOMAXPROCS(0))
	if ro.cpuProfile != "" {
		stopProfile, err := startCPUProfile(ro.cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	fmt.Println("ready")
	return srv.Start(ctx)
}

// startCPUProfile starts a CPU profile into path and returns what ends and writes it.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// readZone parses file into record sets keyed by (owner, type), returning the
// SOA separately.
func readZone(origin, file string) ([]*zonedb.RRSet, *dns.SOA, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()

	var (
		soa   *dns.SOA
		order []zonedb.SetKey
		sets  = map[zonedb.SetKey]*zonedb.RRSet{}
	)
	zp := dns.NewZoneParser(f, origin, file)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		h := rr.Header()
		name, err := dnswire.CanonicalName(h.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: record %q: owner %w", file, rr.String(), err)
		}
		h.Name = name
		if !dns.IsSubDomain(origin, h.Name) {
			return nil, nil, fmt.Errorf("%s: record %q is outside zone %s", file, rr.String(), origin)
		}
		if s, isSOA := rr.(*dns.SOA); isSOA {
			if soa != nil || h.Name != origin {
				return nil, nil, fmt.Errorf("%s: unexpected SOA %q", file, rr.String())
			}
			soa = s
			continue
		}
		k := zonedb.SetKey{Name: h.Name, Type: h.Rrtype}
		rs := sets[k]
		if rs == nil {
			rs = &zonedb.RRSet{Name: h.Name, Type: h.Rrtype, TTL: h.Ttl}
			sets[k] = rs
			order = append(order, k)
		}
		rs.TTL = min(rs.TTL, h.Ttl)
		if !containsRR(rs.RRs, rr) {
			rs.RRs = append(rs.RRs, rr)
		}
	}
	if err := zp.Err(); err != nil {
		return nil, nil, err
	}
	if len(sets) == 0 {
		return nil, nil, errors.New(file + ": no records besides the SOA")
	}
	out := make([]*zonedb.RRSet, 0, len(order))
	for _, k := range order {
		out = append(out, sets[k])
	}
	return out, soa, nil
}

func containsRR(list []dns.RR, rr dns.RR) bool {
	for _, o := range list {
		if dns.IsDuplicate(o, rr) {
			return true
		}
	}
	return false
}

// noteSOA reports on stderr where the file's SOA differs from the one the
// store serves (the defaults of CreateZone, and the serial run ends at).
func noteSOA(soa *dns.SOA, origin string, serial uint32) {
	want := fmt.Sprintf("ttl %d, %s %s %d %d %d %d %d",
		zonedb.DefaultSOATTL, zonedb.DefaultNameServerLabel+"."+origin, "hostmaster."+origin,
		serial, zonedb.DefaultRefresh, zonedb.DefaultRetry, zonedb.DefaultExpire, zonedb.DefaultMinimumTTL)
	got := fmt.Sprintf("ttl %d, %s %s %d %d %d %d %d",
		soa.Hdr.Ttl, strings.ToLower(soa.Ns), strings.ToLower(soa.Mbox),
		soa.Serial, soa.Refresh, soa.Retry, soa.Expire, soa.Minttl)
	if got != want {
		fmt.Fprintf(os.Stderr, "dnsbench: note: the file's SOA (%s) is not served; the store's is (%s)\n", got, want)
	}
}

// geoSets returns sets with every A set replaced by three geo sets (eu: the default and DE,
// with the set's records; us: continent:NA, 198.51.100.1; ap: 203.0.113.0/24, 203.0.113.1),
// except the addresses of name servers, which stay plain glue.
func geoSets(sets []*zonedb.RRSet) ([]*zonedb.RRSet, error) {
	nsHosts := map[string]bool{}
	for _, rs := range sets {
		for _, rr := range rs.RRs {
			if ns, ok := rr.(*dns.NS); ok {
				nsHosts[strings.ToLower(ns.Ns)] = true
			}
		}
	}
	var out []*zonedb.RRSet
	for _, rs := range sets {
		if rs.Type != dns.TypeA || nsHosts[rs.Name] {
			out = append(out, rs)
			continue
		}
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
				return nil, err
			}
			labels := map[string]string{}
			for _, p := range kv {
				labels[p[0]] = p[1]
			}
			c := &zonedb.RRSet{Name: rs.Name, Type: rs.Type, TTL: rs.TTL, SetIdentifier: g.set.Tag, Labels: labels, RRs: rs.RRs}
			if g.addr != "" {
				c.RRs = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: rs.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: rs.TTL}, A: net.ParseIP(g.addr)}}
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// geoDatabase writes the benchmark's GeoIP database (loopback and 192.0.2.0/24 in DE,
// 198.51.100.0/24 in the US) to a temporary file and loads it.
func geoDatabase() (*geo.DB, error) {
	dir, err := os.MkdirTemp("", "dnsbench-geo")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "geo.mmdb")
	if err := geotest.WriteFile(path,
		geotest.Network{CIDR: "127.0.0.0/8", Country: "DE", Continent: "EU"},
		geotest.Network{CIDR: "192.0.2.0/24", Country: "DE", Continent: "EU"},
		geotest.Network{CIDR: "198.51.100.0/24", Country: "US", Continent: "NA"}); err != nil {
		return nil, err
	}
	db := &geo.DB{Path: path}
	if err := db.Load(); err != nil {
		return nil, err
	}
	_ = os.RemoveAll(dir) // read whole into memory: the file is no longer needed
	return db, nil
}
