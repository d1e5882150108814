package dnsserver

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/internal/testing/secondarytest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/xfr"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// TestDNSSEC_QuietSignedZoneSecondaryNeverServesExpiredSignatures: NSD, a secondary of the
// child server for the signed zone example.test., which nothing changes, signed with 16-second
// signatures made anew every 8 seconds. The child server renews the zone at the start of each
// signing period (a newer serial, NOTIFY), so once the signatures of the transfer NSD first
// took have expired, NSD serves the zone at a newer serial with signatures valid now, and
// Unbound and delv, asking NSD, validate its answers as secure.
func TestDNSSEC_QuietSignedZoneSecondaryNeverServesExpiredSignatures(t *testing.T) {
	hackrun.Need(t, "unbound", "unbound")
	hackrun.Need(t, "bind9-dnsutils", "delv")
	const zone = "example.test."
	tree := newSignedTree(t)
	pol := *tree.child.signing.Load().zones[zone]
	pol.Validity, pol.Refresh = 16*time.Second, 8*time.Second
	if err := tree.child.SetSigning(zone, &pol); err != nil {
		t.Fatal(err)
	}
	nsd := secondarytest.NSD(t)
	nsd.Start(t, tree.child.Addr(), zone)
	notifier := xfr.NewNotifier(tree.childStore, xfr.NotifierOptions{Targets: []string{nsd.Addr}})
	testrun.Background(t, "notifier", notifier.Start)
	atSerial(t, tree, zone, nsd)

	first, expiration := soaSignature(t, nsd.Addr, zone)
	t.Logf("NSD serves %s at serial %d, its SOA signed until %s", zone, first, expiration.Format(time.RFC3339))
	time.Sleep(time.Until(expiration.Add(time.Second)))
	testrun.Eventually(t, 20*time.Second, "NSD serves "+zone+" with signatures valid now", func() error {
		serial, exp := soaSignature(t, nsd.Addr, zone)
		if !exp.After(time.Now()) || !zonedb.SerialNewer(serial, first) {
			return fmt.Errorf("serial %d (first transferred %d): SOA RRSIG expires at %s", serial, first, exp.Format(time.RFC3339))
		}
		t.Logf("NSD serves %s at serial %d, its SOA signed until %s", zone, serial, exp.Format(time.RFC3339))
		return nil
	})
	tree.servedBy[zone] = nsd.Addr
	validate(t, tree, []validationCase{
		{"www." + zone, dns.TypeA, dns.RcodeSuccess, true},
		{zone, dns.TypeSOA, dns.RcodeSuccess, true},
		{"nothere." + zone, dns.TypeA, dns.RcodeNameError, true},
	})
}

// soaSignature returns the serial of zone's SOA at addr and the expiration of its RRSIG.
func soaSignature(t *testing.T, addr, zone string) (uint32, time.Time) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(zone, dns.TypeSOA)
	m.SetEdns0(4096, true)
	r := exchange(t, addr, "tcp", m)
	var serial uint32
	var exp time.Time
	for _, rr := range r.Answer {
		switch rr := rr.(type) {
		case *dns.SOA:
			serial = rr.Serial
		case *dns.RRSIG:
			exp = time.Unix(int64(rr.Expiration), 0)
		}
	}
	if serial == 0 || exp.IsZero() {
		t.Fatalf("SOA answer of %s at %s without SOA or RRSIG: %v", zone, addr, r.Answer)
	}
	return serial, exp
}
