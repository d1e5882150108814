package dnsserver

import (
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// signingPolicy returns a policy for zone with an Active KSK and an Active ZSK (ECDSA P-256),
// and NSEC3 params (nil: NSEC).
func signingPolicy(t testing.TB, zone string, params *dnssec.NSEC3Params) *dnssec.Policy {
	t.Helper()
	ks := dnssec.KeySet{Zone: zone}
	for _, role := range []dnssec.Role{dnssec.RoleKSK, dnssec.RoleZSK} {
		k, err := dnssec.Generate(zone, dns.ECDSAP256SHA256, role, dnssec.Active, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ks.Keys = append(ks.Keys, k)
	}
	return &dnssec.Policy{Keys: ks, NSEC3: params}
}

// askDO queries name/qtype over proto with EDNS0 (payload size) and the DO bit.
func askDO(t testing.TB, addr, proto, name string, qtype uint16, size uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(size, true)
	return exchange(t, addr, proto, m)
}

// verifySections checks that every RRset of the answer and authority sections but a
// referral's NS set is followed by RRSIGs that verify under pol's keys, the DNSKEY RRset by
// the KSK and the others by the ZSK, and returns the number of RRSIGs.
func verifySections(t testing.TB, pol *dnssec.Policy, resp *dns.Msg) int {
	t.Helper()
	n := 0
	for _, sec := range [][]dns.RR{resp.Answer, resp.Ns} {
		for _, set := range rrsets(sec) {
			var data, sigs []dns.RR
			for _, rr := range set {
				if rr.Header().Rrtype == dns.TypeRRSIG {
					sigs = append(sigs, rr)
				} else {
					data = append(data, rr)
				}
			}
			if data[0].Header().Rrtype == dns.TypeNS && data[0].Header().Name != pol.Keys.Zone {
				if len(sigs) != 0 {
					t.Fatalf("a referral's NS set is signed: %v", set)
				}
				continue
			}
			if len(sigs) != 1 {
				t.Fatalf("RRset %v has %d RRSIGs, want 1", data, len(sigs))
			}
			role := dnssec.RoleZSK
			if data[0].Header().Rrtype == dns.TypeDNSKEY {
				role = dnssec.RoleKSK
			}
			sig := sigs[0].(*dns.RRSIG)
			for _, k := range pol.Keys.Keys {
				if k.Tag() == sig.KeyTag && k.Role != role {
					t.Fatalf("%v signed by the %s", data, k.Role)
				}
				if k.Tag() == sig.KeyTag {
					if err := sig.Verify(k.DNSKEY, data); err != nil || !sig.ValidityPeriod(time.Now()) {
						t.Fatalf("RRSIG over %v: %v", data, err)
					}
				}
			}
			n++
		}
	}
	return n
}

// types returns the types of a section's records, in order.
func types(rrs []dns.RR) string {
	var out []string
	for _, rr := range rrs {
		out = append(out, dns.TypeToString[rr.Header().Rrtype])
	}
	return strings.Join(out, " ")
}

func TestSigning_AnswersWithDOCarryRRSIGsAndDenial(t *testing.T) {
	for _, params := range []*dnssec.NSEC3Params{nil, {}} {
		store := exampleStore(t, "")
		if err := store.Update("example.test.", func(tx *zonedb.Tx) error {
			put(t, tx, "", nil, "ins.example.test. 300 IN NS ns.elsewhere.test.") // no DS: insecure
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		srv := startServer(t, store, ServerOptions{})
		pol := signingPolicy(t, "example.test.", params)
		if err := srv.SetSigning("example.test", pol); err != nil {
			t.Fatal(err)
		}
		denial := "NSEC"
		if params != nil {
			denial = "NSEC3"
		}
		for _, c := range []struct {
			name         string
			qtype        uint16
			rcode        int
			answer, auth string
		}{
			{"www.example.test", dns.TypeA, dns.RcodeSuccess, "A RRSIG", ""},
			{"example.test", dns.TypeDNSKEY, dns.RcodeSuccess, "DNSKEY DNSKEY RRSIG", ""},
			{"www.example.test", dns.TypeTXT, dns.RcodeSuccess, "", "SOA RRSIG " + denial + " RRSIG"},
			{"x.wild.example.test", dns.TypeA, dns.RcodeSuccess, "A RRSIG", denial + " RRSIG"},
			{"sub.example.test", dns.TypeA, dns.RcodeSuccess, "", "NS NS DS RRSIG"},
			{"www.ins.example.test", dns.TypeA, dns.RcodeSuccess, "", "NS " + denial + " RRSIG"},
			{"child.example.test", dns.TypeDS, dns.RcodeSuccess, "", "SOA RRSIG " + denial + " RRSIG"},
			{"alias.example.test", dns.TypeA, dns.RcodeSuccess, "CNAME RRSIG A RRSIG", ""},
		} {
			resp := askDO(t, srv.Addr(), "tcp", c.name, c.qtype, 4096)
			if resp.Rcode != c.rcode || types(resp.Answer) != c.answer || types(resp.Ns) != c.auth {
				t.Fatalf("%s %s %s: got %s answer [%s] authority [%s], want %s [%s] [%s]", denial, c.name, dns.TypeToString[c.qtype],
					dns.RcodeToString[resp.Rcode], types(resp.Answer), types(resp.Ns), dns.RcodeToString[c.rcode], c.answer, c.auth)
			}
			verifySections(t, pol, resp)
		}
		resp := askDO(t, srv.Addr(), "tcp", "nothere.example.test", dns.TypeA, 4096)
		if resp.Rcode != dns.RcodeNameError || !strings.HasPrefix(types(resp.Ns), "SOA RRSIG "+denial+" RRSIG") {
			t.Fatalf("%s NXDOMAIN: %s [%s]", denial, dns.RcodeToString[resp.Rcode], types(resp.Ns))
		}
		verifySections(t, pol, resp)
		if plain := ask(t, srv.Addr(), "tcp", "nothere.example.test", dns.TypeA); len(plain.Ns) != 1 {
			t.Fatalf("without DO: authority %v, want the SOA alone", plain.Ns)
		}
	}
}

func TestSigning_CacheKeysOnDOAndTruncationKeepsRRSIGs(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	pol := signingPolicy(t, "example.test.", nil)
	if err := srv.SetSigning("example.test.", pol); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if r := askDO(t, srv.Addr(), "udp", "www.example.test", dns.TypeA, 1232); types(r.Answer) != "A RRSIG" {
			t.Fatalf("DO answer [%s]", types(r.Answer))
		}
		if r := ask(t, srv.Addr(), "udp", "www.example.test", dns.TypeA); types(r.Answer) != "A" {
			t.Fatalf("plain answer [%s]", types(r.Answer))
		}
	}
	if srv.cacheHits.Load() == 0 {
		t.Fatal("no answer came from the cache")
	}
	// A new key set drops the answers signed with the old one.
	pol2 := signingPolicy(t, "example.test.", nil)
	if err := srv.SetSigning("example.test.", pol2); err != nil {
		t.Fatal(err)
	}
	verifySections(t, pol2, askDO(t, srv.Addr(), "udp", "www.example.test", dns.TypeA, 1232))
	// The big TXT set and its RRSIG do not fit 512 bytes: both go, TC is set.
	r := askDO(t, srv.Addr(), "udp", "big.example.test", dns.TypeTXT, 512)
	if !r.Truncated || len(r.Answer) != 0 {
		t.Fatalf("big answer at 512 bytes: TC %v, answer [%s]", r.Truncated, types(r.Answer))
	}
	if err := srv.SetSigning("example.test.", &dnssec.Policy{Keys: dnssec.KeySet{Zone: "example.test."}}); err == nil {
		t.Fatal("a key set without an Active key was taken")
	}
	verifySections(t, pol2, askDO(t, srv.Addr(), "udp", "www.example.test", dns.TypeA, 1232))
}

// periodCache is a server of exampleStore (not started), its store's snapshot and the answer
// cache of that snapshot and the server's signing.
func periodCache(t *testing.T) (*Server, *zonedb.Snapshot, *answerCache) {
	t.Helper()
	srv, err := NewServer(exampleStore(t, ""), ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	snap := srv.store.Snapshot()
	return srv, snap, srv.cacheFor(snap, srv.signing.Load())
}

// TestSigning_CachedSignedAnswerEndsWithItsPeriod: a cached answer whose signatures are due to
// be made anew (renew passed) is not served; one still in its period is.
func TestSigning_CachedSignedAnswerEndsWithItsPeriod(t *testing.T) {
	srv, snap, c := periodCache(t)
	past, future := time.Now().Add(-time.Second).UnixNano(), time.Now().Add(time.Hour).UnixNano()
	c.add([]byte("old"), []byte{1}, 0, 0, 0, 1<<20, past)
	c.add([]byte("new"), []byte{2}, 0, 0, 0, 1<<20, future)
	if e := srv.lookup(snap, []byte("old")); e != nil {
		t.Fatal("an answer past its signing period was served from the cache")
	}
	if e := srv.lookup(snap, []byte("new")); e == nil {
		t.Fatal("an answer within its signing period was not served from the cache")
	}
	if err := srv.SetSigning("example.test.", signingPolicy(t, "example.test.", nil)); err != nil {
		t.Fatal(err)
	}
	if e := srv.lookup(snap, []byte("new")); e != nil {
		t.Fatal("an answer of the previous signing state was served from the cache")
	}
}

// TestSigning_ConcurrentKeySetChanges answers DO queries while the key set changes (for the race
// detector): every answer verifies under one of the key sets.
func TestSigning_ConcurrentKeySetChanges(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	pols := []*dnssec.Policy{signingPolicy(t, "example.test.", nil), signingPolicy(t, "example.test.", &dnssec.NSEC3Params{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			if err := srv.SetSigning("example.test.", pols[i%2]); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 50 {
		r := askDO(t, srv.Addr(), "udp", "nothere.example.test", dns.TypeA, 1232)
		if len(r.Ns) > 1 {
			sig := r.Ns[1].(*dns.RRSIG)
			pol := pols[0]
			if sig.KeyTag != pol.Keys.Keys[1].Tag() {
				pol = pols[1]
			}
			verifySections(t, pol, r)
		}
	}
	<-done
}

// TestSigning_RotatedAnswersReuseTheirSignatures: an RRset of several records rotates, so its
// answers are not cached, yet it is signed once per signing period (ECDSA signatures differ at
// every signing): each answer carries the same, valid RRSIG.
func TestSigning_RotatedAnswersReuseTheirSignatures(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	pol := signingPolicy(t, "example.test.", nil)
	if err := srv.SetSigning("example.test.", pol); err != nil {
		t.Fatal(err)
	}
	var first string
	for i := range 4 {
		r := askDO(t, srv.Addr(), "udp", "multi.example.test", dns.TypeA, 1232)
		verifySections(t, pol, r)
		sig := r.Answer[len(r.Answer)-1].(*dns.RRSIG).Signature
		if i == 0 {
			first = sig
		} else if sig != first {
			t.Fatalf("answer %d has another signature: the RRset was signed again", i)
		}
	}
}

// TestSigning_DNSKEYIsAnsweredWithoutDO: the DNSKEY RRset and the NSEC3PARAM record are the
// signed zone's data, answered to every query for them (RFC 4035 §3.1.1), with no RRSIG
// without DO; the same query with DO carries the RRSIG.
func TestSigning_DNSKEYIsAnsweredWithoutDO(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	pol := signingPolicy(t, "example.test.", &dnssec.NSEC3Params{})
	if err := srv.SetSigning("example.test.", pol); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second from the cache
		want := strings.TrimSpace(strings.Repeat("DNSKEY ", len(pol.Keys.DNSKEYs(0))))
		if r := ask(t, srv.Addr(), "udp", "example.test", dns.TypeDNSKEY); types(r.Answer) != want || r.Rcode != dns.RcodeSuccess {
			t.Fatalf("DNSKEY without DO: %s [%s]", dns.RcodeToString[r.Rcode], types(r.Answer))
		}
		if r := ask(t, srv.Addr(), "udp", "example.test", dns.TypeNSEC3PARAM); types(r.Answer) != "NSEC3PARAM" {
			t.Fatalf("NSEC3PARAM without DO: [%s]", types(r.Answer))
		}
		if r := askDO(t, srv.Addr(), "udp", "example.test", dns.TypeDNSKEY, 1232); !strings.HasPrefix(types(r.Answer), want+" RRSIG") {
			t.Fatalf("DNSKEY with DO: [%s]", types(r.Answer))
		}
	}
}

// TestSigning_NextPeriodsAnswerReplacesTheStaleOne: once a cached answer's signing period is
// over, the answer signed in the next period is cached in its place and served, the stale one
// dropped at the promotion; the cache's bytes count the new answer only.
func TestSigning_NextPeriodsAnswerReplacesTheStaleOne(t *testing.T) {
	srv, snap, c := periodCache(t)
	past, future := time.Now().Add(-time.Second).UnixNano(), time.Now().Add(time.Hour).UnixNano()
	c.add([]byte("k"), []byte{1}, 0, 0, 0, 1<<20, past) // promoted at once: the cache is empty
	c.add([]byte("k"), []byte{2, 2}, 0, 0, 0, 1<<20, future)
	e := srv.lookup(snap, []byte("k"))
	if e == nil || len(e.wire) != 2 {
		t.Fatalf("after the period: %v, want the next period's answer", e)
	}
	for i := range 8 { // enough work for a promotion
		c.add([]byte{byte(i)}, []byte{3}, 0, 0, 0, 1<<20, future)
	}
	if e := c.read.Load().m["k"]; e == nil || len(e.wire) != 2 {
		t.Fatalf("after the promotion: read holds %v, want the next period's answer", e)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if want := (1 + 2 + answerEntryOverhead) + 8*(1+1+answerEntryOverhead); c.pendingN.Load() == 0 && c.bytes != want {
		t.Fatalf("cache bytes %d, want %d", c.bytes, want)
	}
}
