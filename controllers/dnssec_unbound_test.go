package controllers_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/validator"
)

// unboundHost is the loopback address the caching Unbound of the rollover test listens on.
const unboundHost = "127.0.0.28"

// startCachingUnbound runs, until the test ends, a validating Unbound anchored at anchorDS (a DS
// of the parent zone), asking the embedded server for the parent zone pzone and the child zone
// czone through stub zones, and returns its address. Every RRset, key and answer it caches is
// kept at most maxTTL: the TTLs the rollover machine waits out in the test
// (Config.RolloverTTLs), which the zones' own TTLs (300 s, the DS 3600 s) would exceed.
func startCachingUnbound(t *testing.T, server, pzone, czone, anchorDS string, maxTTL time.Duration) string {
	t.Helper()
	return validator.StartUnbound(t, validator.Unbound{Host: unboundHost, Anchor: anchorDS, MaxTTL: maxTTL, AggressiveNSEC: true,
		Stubs: []validator.Stub{{Zone: pzone, Addr: server}, {Zone: czone, Addr: server}}, Probe: czone})
}

// askResolver asks the resolver at addr for name/qtype, recursion desired, with the DO bit.
func askResolver(addr, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(1232, true)
	r, _, err := (&dns.Client{Net: "udp", Timeout: 5 * time.Second}).Exchange(m, addr)
	if err == nil && r.Truncated {
		r, _, err = (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(m, addr)
	}
	return r, err
}

// resolverTally counts a resolver loop's answers.
type resolverTally struct {
	queries, bad, timeouts int
	last                   string
}

// resolverLoop asks the resolver at addr, every 200 ms until stop is closed, for zone's SOA and
// DNSKEY set and a name of it that does not exist, and counts the answers that are not secure
// (SERVFAIL, or no AD: bogus or insecure) and the queries without an answer; the returned
// function waits for the loop's end and returns its tally.
func resolverLoop(addr, zone string, stop <-chan struct{}) func() resolverTally {
	var mu sync.Mutex
	var tally resolverTally
	done := make(chan struct{})
	ask := func(name string, qtype, rcode uint16) {
		r, err := askResolver(addr, name, qtype)
		mu.Lock()
		defer mu.Unlock()
		tally.queries++
		switch {
		case err != nil:
			tally.timeouts++
		case r.Rcode != int(rcode) || !r.AuthenticatedData:
			tally.bad++
			tally.last = fmt.Sprintf("%s %s: %s AD=%t", name, dns.TypeToString[qtype], dns.RcodeToString[r.Rcode], r.AuthenticatedData)
		}
	}
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			ask(zone, dns.TypeSOA, dns.RcodeSuccess)
			ask(zone, dns.TypeDNSKEY, dns.RcodeSuccess)
			ask("nope."+zone, dns.TypeA, dns.RcodeNameError)
		}
	}()
	return func() resolverTally {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return tally
	}
}

// activeTag is the tag of the active key of role in status.dnssec (0 when none).
func activeTag(st *dnsv1.DNSSECStatus, role string) int32 {
	for _, k := range st.Keys {
		if k.Role == role && k.State == "Active" {
			return k.Tag
		}
	}
	return 0
}

// rollToTheEnd asks for a rollover of role on DNSZone z (annotation) of cluster c and waits
// until it ends: the phases seen, a new active key of role, two keys, no rollover phase,
// Secure=True Secure, and the parent zone pzone answering the child's DS set czone. It returns
// the phases seen and how long the rollover took.
func rollToTheEnd(t *testing.T, c *cluster, z *dnsv1.DNSZone, role, pzone, czone string) ([]string, time.Duration) {
	t.Helper()
	if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), z); err != nil {
		t.Fatal(err)
	}
	old := activeTag(z.Status.DNSSEC, role)
	return rollOver(t, c, z, role, 4*time.Minute, secureWith(2, func(st *dnsv1.DNSSECStatus, sec *metav1.Condition) error {
		if activeTag(st, role) == old {
			return fmt.Errorf("the active %s is still %d", role, old)
		}
		return parentDSIs(t, c.dnsAddr, pzone, czone)(st, sec)
	}))
}

// TestDNSSEC_ZSKAndKSKRolloversUnderACachingUnbound: with the rollover TTLs shortened to 2 s
// and a validating Unbound that caches every RRset and key for at most those 2 s (anchored at
// the signed parent's DS), a ZSK rollover (pre-publication), then a KSK rollover (double-DS) of
// a KSKZSK child DNSZone linked to the parent run to their end while a loop asks Unbound, every
// 200 ms, for the child's SOA, its DNSKEY set and a name that does not exist: every answer is
// secure (AD set, no SERVFAIL). Each rollover's duration and query count are logged.
func TestDNSSEC_ZSKAndKSKRolloversUnderACachingUnbound(t *testing.T) {
	ttl := 2 * time.Second
	const pzone, czone = "ub.dnssec.test", "c.ub.dnssec.test"
	c, parent, child := linkedPair{owner: "dnssec-unbound", ns: "unbound-roll", pzone: pzone, czone: czone, ttl: ttl,
		scheme: dnsv1.KeySchemeKSKZSK}.start(t)
	resolver := startCachingUnbound(t, c.dnsAddr, pzone, czone, parent.Status.DNSSEC.DS[0], ttl)
	for _, role := range []string{"ZSK", "KSK"} {
		stop := make(chan struct{})
		result := resolverLoop(resolver, czone, stop)
		phases, took := rollToTheEnd(t, c, child, role, pzone, czone)
		// The last versions may be in the cache for one more TTL: keep asking through it.
		time.Sleep(2 * ttl)
		close(stop)
		tally := result()
		t.Logf("%s rollover: phases %v in %s; Unbound (cached, max TTL %s) answered %d queries: %d not secure, %d without an answer",
			role, phases, took.Round(100*time.Millisecond), ttl, tally.queries, tally.bad, tally.timeouts)
		if tally.queries == 0 || tally.bad != 0 {
			t.Fatalf("%s rollover: %d of %d answers not secure; last: %s", role, tally.bad, tally.queries, tally.last)
		}
	}
}
