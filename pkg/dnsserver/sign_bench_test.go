package dnsserver

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// signBenchRecords is the size of the zone BenchmarkSigning_50kRecords signs.
const signBenchRecords = 50_000

// signBenchStore returns a store serving big.test with signBenchRecords A records, one name each
// (h0..h49999), beside its SOA and NS.
func signBenchStore(b *testing.B) *zonedb.Store {
	b.Helper()
	store := zonedb.NewStore(zonedb.StoreOptions{})
	if _, err := store.CreateZone("big.test", zonedb.ZoneMeta{}); err != nil {
		b.Fatal(err)
	}
	if err := store.Update("big.test.", func(tx *zonedb.Tx) error {
		for i := range signBenchRecords {
			put(b, tx, "", nil, fmt.Sprintf("h%d.big.test. 300 IN A 10.%d.%d.%d", i, i>>16, (i>>8)&0xff, i&0xff))
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return store
}

// BenchmarkSigning_50kRecords measures the online signer on a zone of 50,000 records (ECDSA
// P-256, a KSK and a ZSK), in process:
//   - zone: signing the whole zone as a full transfer carries it (every RRset, the DNSKEY RRset
//     and the NSEC chain, each signed): the time and memory (B/op) to sign the zone;
//   - first-answer, first-nxdomain, first-nxdomain-compact: a new signing state (SetSigning, as
//     a new key set gives; no RRSIG, chain or answer kept) and then one DO query through ServeDNS:
//     an A answer (one RRset signed), an NXDOMAIN (the NSEC chain of the 50,000 names computed,
//     two NSECs signed), and an NXDOMAIN with compact denial (one NSEC made and signed, no chain).
func BenchmarkSigning_50kRecords(b *testing.B) {
	store := signBenchStore(b)
	srv, err := NewServer(store, ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	pol := signingPolicy(b, "big.test.", nil)
	if err := srv.SetSigning("big.test.", pol); err != nil {
		b.Fatal(err)
	}
	b.Run("zone", func(b *testing.B) {
		z, _ := store.Snapshot().Enclosing("big.test.")
		b.ReportAllocs()
		for b.Loop() {
			rrs, signed, err := srv.signedZone(z)
			if err != nil || !signed || len(rrs) < 3*signBenchRecords {
				b.Fatalf("signed zone: %d records, %v, %v", len(rrs), signed, err)
			}
		}
	})
	compact := *pol
	compact.Compact = true
	for _, c := range []struct {
		name, qname string
		pol         *dnssec.Policy
	}{
		{"first-answer", "h4242.big.test.", pol},
		{"first-nxdomain", "nothere.big.test.", pol},
		{"first-nxdomain-compact", "nothere.big.test.", &compact},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := new(dns.Msg)
			req.SetQuestion(c.qname, dns.TypeA)
			req.SetEdns0(1232, true)
			benchServe(b, srv, func(int) *dns.Msg {
				if err := srv.SetSigning("big.test.", c.pol); err != nil {
					b.Fatal(err)
				}
				return req.Copy()
			})
		})
	}
}

// BenchmarkServer_AnswerSigned is BenchmarkServer_Answer and BenchmarkServer_AnswerReadLoop
// (with the clock a started server keeps) with the DO bit (EDNS0, 4096 bytes, as dnsperf -D sends) on bench.test signed online (a CSK,
// NSEC): what hack/bench-dns.sh's DNSSEC mode asks, in process. "serve" answers through
// ServeDNS (unpack, the answer cache or the long way, pack); "readloop" answers the cached
// queries as the UDP read loop does.
func BenchmarkServer_AnswerSigned(b *testing.B) {
	srv, err := NewServer(benchZoneStore(b), ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.SetSigning("bench.test.", signingPolicy(b, "bench.test.", nil)); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.tickClock(ctx) // as Start does
	qs := repacked(b, benchQueries(b, 1009), func(_ int, m *dns.Msg) { m.SetEdns0(4096, true) })
	b.Run("serve", func(b *testing.B) { benchServeDNS(b, srv, qs) })
	b.Run("readloop", func(b *testing.B) { benchReadLoop(b, srv, qs, netip.Addr{}) })
}
