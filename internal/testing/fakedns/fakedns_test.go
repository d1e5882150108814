package fakedns

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

func set(t *testing.T, name, rtype string, ttl int64, values ...string) provider.RecordSet {
	t.Helper()
	rs, err := RecordSet(name, rtype, ttl, values)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func exampleZones(t *testing.T) []Zone {
	t.Helper()
	return []Zone{{Name: "example.test", RecordSets: []provider.RecordSet{
		set(t, "example.test.", "SOA", 900, "ns1.example.net. hostmaster.example.net. 1 7200 900 1209600 86400"),
		set(t, "example.test.", "NS", 172800, "ns1.example.net.", "ns2.example.net."),
		set(t, "www.example.test.", "A", 60, "192.0.2.1", "192.0.2.2"),
		set(t, "deep.ent.example.test.", "A", 60, "192.0.2.3"),
		set(t, "alias.example.test.", "CNAME", 60, "www.example.test."),
		set(t, "*.wild.example.test.", "TXT", 60, `"wild \"one\""`),
		set(t, "sub.example.test.", "NS", 60, "ns.sub.example.test."),
		set(t, "ns.sub.example.test.", "A", 60, "192.0.2.53"),
	}}, {Name: "other.test", RecordSets: []provider.RecordSet{
		set(t, "other.test", "SOA", 60, "ns.other.test hostmaster.other.test 7 1 1 1 30"),
	}}}
}

func ask(t *testing.T, addr, netw, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, _, err := (&dns.Client{Net: netw, Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s %s: %v", netw, name, dns.TypeToString[qtype], err)
	}
	return r
}

func rdata(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		out = append(out, dns.TypeToString[rr.Header().Rrtype]+" "+strings.TrimPrefix(rr.String(), rr.Header().String()))
	}
	slices.Sort(out)
	return out
}

func start(t *testing.T, src Source) string {
	t.Helper()
	srv, err := Start(src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv.Addr()
}

// TestServer_Answers: SOA and NS at the apex, records, CNAME chasing, wildcards, referrals with
// glue, NXDOMAIN and NODATA with the SOA, REFUSED outside every zone, over UDP and TCP.
func TestServer_Answers(t *testing.T) {
	zones := exampleZones(t)
	var calls atomic.Int64
	addr := start(t, func() ([]Zone, error) { calls.Add(1); return zones, nil })
	for _, netw := range []string{"udp", "tcp"} {
		t.Run(netw, func(t *testing.T) {
			r := ask(t, addr, netw, "example.test", dns.TypeSOA)
			if !r.Authoritative || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
				t.Fatalf("SOA: %v", r)
			}
			if soa := r.Answer[0].(*dns.SOA); soa.Ns != "ns1.example.net." || soa.Serial != 1 || soa.Hdr.Ttl != 900 {
				t.Fatalf("SOA: %v", soa)
			}
			if got := rdata(ask(t, addr, netw, "EXAMPLE.test", dns.TypeNS).Answer); !slices.Equal(got, []string{"NS ns1.example.net.", "NS ns2.example.net."}) {
				t.Fatalf("NS: %v", got)
			}
			if got := rdata(ask(t, addr, netw, "www.example.test", dns.TypeA).Answer); !slices.Equal(got, []string{"A 192.0.2.1", "A 192.0.2.2"}) {
				t.Fatalf("A: %v", got)
			}
			if got := rdata(ask(t, addr, netw, "alias.example.test", dns.TypeA).Answer); !slices.Equal(got, []string{"A 192.0.2.1", "A 192.0.2.2", "CNAME www.example.test."}) {
				t.Fatalf("CNAME chase: %v", got)
			}
			r = ask(t, addr, netw, "x.wild.example.test", dns.TypeTXT)
			if len(r.Answer) != 1 || r.Answer[0].Header().Name != "x.wild.example.test." || provider.TXTValue(r.Answer[0].(*dns.TXT).Txt) != `wild "one"` {
				t.Fatalf("wildcard: %v", r)
			}
			r = ask(t, addr, netw, "host.sub.example.test", dns.TypeA)
			if r.Authoritative || rdata(r.Ns)[0] != "NS ns.sub.example.test." || len(r.Extra) != 1 {
				t.Fatalf("referral: %v", r)
			}
			for _, c := range []struct {
				name  string
				qtype uint16
				rcode int
			}{
				{"nothere.example.test", dns.TypeA, dns.RcodeNameError},
				{"www.example.test", dns.TypeAAAA, dns.RcodeSuccess},
				{"ent.example.test", dns.TypeA, dns.RcodeSuccess}, // empty non-terminal: NODATA (RFC 8020)
			} {
				r := ask(t, addr, netw, c.name, c.qtype)
				if !r.Authoritative || r.Rcode != c.rcode || len(r.Answer) != 0 || len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA || r.Ns[0].Header().Ttl != 900 {
					t.Fatalf("%s %s: want rcode %s with the SOA (TTL min(900, 86400)): %v", c.name, dns.TypeToString[c.qtype], dns.RcodeToString[c.rcode], r)
				}
			}
			if r := ask(t, addr, netw, "elsewhere.test", dns.TypeSOA); r.Rcode != dns.RcodeRefused || r.Authoritative {
				t.Fatalf("outside every zone: %v", r)
			}
			if r := ask(t, addr, netw, "x.other.test", dns.TypeA); r.Rcode != dns.RcodeNameError || r.Ns[0].Header().Ttl != 30 {
				t.Fatalf("second zone: %v", r)
			}
		})
	}
	if calls.Load() == 0 {
		t.Fatal("the Source was never called")
	}
}

// TestServer_FollowsSourceAndFailures: every query reads the Source afresh; a Source error, or a
// zone without an apex SOA, answers SERVFAIL.
func TestServer_FollowsSourceAndFailures(t *testing.T) {
	var (
		zones atomic.Pointer[[]Zone]
		fail  atomic.Bool
	)
	empty := []Zone{}
	zones.Store(&empty)
	addr := start(t, func() ([]Zone, error) {
		if fail.Load() {
			return nil, errors.New("broken")
		}
		return *zones.Load(), nil
	})
	if r := ask(t, addr, "udp", "example.test", dns.TypeSOA); r.Rcode != dns.RcodeRefused {
		t.Fatalf("before the zone exists: %v", r)
	}
	z := exampleZones(t)
	zones.Store(&z)
	if r := ask(t, addr, "udp", "example.test", dns.TypeSOA); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Fatalf("after the zone was created: %v", r)
	}
	fail.Store(true)
	if r := ask(t, addr, "udp", "example.test", dns.TypeSOA); r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("Source error: %v", r)
	}
	fail.Store(false)
	noSOA := []Zone{{Name: "example.test"}}
	zones.Store(&noSOA)
	if r := ask(t, addr, "udp", "example.test", dns.TypeSOA); r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("zone without SOA: %v", r)
	}
}

func TestRecordSet_ParsesZoneFileValues(t *testing.T) {
	rs, err := RecordSet("Mail.Example.Test.", "mx", 300, []string{"10 mx.example.test.", "20 MX2.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	want := provider.RecordSet{Name: "mail.example.test", Type: "MX", TTL: 300, Targets: []string{"10 mx.example.test", "20 mx2.example.test"}}
	if !rs.Equal(want) {
		t.Fatalf("got %v, want %v", rs, want)
	}
	rs, err = RecordSet("t.example.test", "TXT", 60, []string{`"a\"b" "c\255"`})
	if err != nil || rs.Targets[0] != "a\"bc\xff" {
		t.Fatalf("TXT: %q, %v", rs.Targets, err)
	}
	for _, bad := range [][2]string{{"A", "not-an-ip"}, {"BOGUS", "x"}, {"A", "192.0.2.1 extra"}} {
		if _, err := RecordSet("x.example.test", bad[0], 60, []string{bad[1]}); err == nil {
			t.Errorf("%s %q parsed", bad[0], bad[1])
		}
	}
}

func TestLazy_StartsOnFirstUseAndCloses(t *testing.T) {
	l := NewLazy(func() ([]Zone, error) { return exampleZones(t), nil })
	l.Close() // before any use: nothing to stop
	l = NewLazy(func() ([]Zone, error) { return exampleZones(t), nil })
	addr := l.Addr()
	if addr != l.Addr() {
		t.Fatal("a second Addr started another server")
	}
	if r := ask(t, addr, "tcp", "example.test", dns.TypeSOA); len(r.Answer) != 1 {
		t.Fatalf("SOA: %v", r)
	}
	l.Close()
	l.Close()
	if _, _, err := (&dns.Client{Net: "tcp", Timeout: 500 * time.Millisecond}).Exchange(new(dns.Msg).SetQuestion("example.test.", dns.TypeSOA), addr); err == nil {
		t.Fatal("still answering after Close")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Addr after Close did not panic")
		}
	}()
	_ = l.Addr()
}
