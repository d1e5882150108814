// Command dnsbench serves one zone from an RFC 1035 master file with the
// embedded authoritative server (pkg/dnsserver), in memory, for benchmarks
// such as hack/bench-dns.sh.
//
//	go run ./hack/dnsbench -addr 127.0.0.1:5353 -zone example.test -file example.test.zone
//
// It prints "ready" on stdout once the UDP and TCP sockets are bound and
// serves until SIGINT or SIGTERM.
//
// The store manages the SOA itself: the zone is created (ns1.<zone> as name
// server) and every record set of the file is put in one update. The store's
// serials follow its clock (the Unix seconds, or the last serial + 1); dnsbench
// gives it a clock that stands still one second before the file's SOA serial,
// so the zone ends at the file's serial (2 without an SOA in the file). The
// rest of the file's SOA is not loaded; when it differs from the
// store's, a note goes to stderr, since answers carrying the SOA then differ
// from those of a server that loads the file as is. Records of one set with
// different TTLs get the smallest (RFC 2181 §5.2); duplicates are dropped.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5353", "host:port to serve on (UDP and TCP); port 0 picks one")
	zone := flag.String("zone", "", "zone origin, e.g. bench.test (required)")
	file := flag.String("file", "", "RFC 1035 master file of the zone (required)")
	udpSockets := flag.Int("udp-sockets", 0, "UDP sockets with SO_REUSEPORT (dnsserver.ServerOptions.UDPSockets); 0 = GOMAXPROCS")
	flag.Parse()
	if *zone == "" || *file == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*addr, *zone, *file, *udpSockets); err != nil {
		fmt.Fprintln(os.Stderr, "dnsbench:", err)
		os.Exit(1)
	}
}

func run(addr, zone, file string, udpSockets int) error {
	origin := dns.Fqdn(strings.ToLower(zone))
	sets, soa, err := readZone(origin, file)
	if err != nil {
		return err
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

	srv, err := dnsserver.NewServer(store, dnsserver.ServerOptions{Addr: addr, UDPSockets: udpSockets})
	if err != nil {
		return err
	}
	if err := srv.Listen(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(os.Stderr, "dnsbench: serving %s (%d record sets, serial %d) on %s, GOMAXPROCS %d\n",
		origin, len(sets), info.Serial, srv.Addr(), runtime.GOMAXPROCS(0))
	fmt.Println("ready")
	return srv.Start(ctx)
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
		h.Name = strings.ToLower(h.Name)
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
