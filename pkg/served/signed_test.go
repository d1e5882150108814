package served_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/served"
)

// zskPolicy is a signing policy of zoneName: an active KSK and an active ZSK, and the Key of the
// ZSK, the one that signs the SOA.
func zskPolicy(t *testing.T) (*dnssec.Policy, served.Key) {
	t.Helper()
	ks := dnssec.KeySet{Zone: zoneName + "."}
	for _, role := range []dnssec.Role{dnssec.RoleKSK, dnssec.RoleZSK} {
		k, err := dnssec.Generate(zoneName+".", dns.ECDSAP256SHA256, role, dnssec.Active, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ks.Keys = append(ks.Keys, k)
	}
	return &dnssec.Policy{Keys: ks}, served.Key{Tag: ks.Keys[1].Tag(), Algorithm: "ECDSAP256SHA256"}
}

// TestTracker_ASignedZoneIsServedOnlyWhereItIsAnsweredSigned: a signed zone's primary signs; a
// second server serves the same store, so the same serials, without the keys (a replica whose
// signer has not loaded them). A change is Propagating, naming that server as answering
// unsigned, until it signs with the zone's keys; then Served. The same servers judged as an
// unsigned zone (no Keys) serve the change at once: that path asks the serial alone.
func TestTracker_ASignedZoneIsServedOnlyWhereItIsAnsweredSigned(t *testing.T) {
	primary := newServer(t)
	pol, zsk := zskPolicy(t)
	signer := dnstest.ServeWith(t, primary.store, dnsserver.ServerOptions{})
	if err := signer.SetSigning(zoneName, pol); err != nil {
		t.Fatal(err)
	}
	primary.addr = signer.Addr()
	replica := dnstest.ServeWith(t, primary.store, dnsserver.ServerOptions{})
	tr := startTracker(t, dnsclient.Client{Timeout: time.Second}, nil, served.Options{FirstCheck: 10 * time.Millisecond, Interval: 50 * time.Millisecond})
	signed := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "signed"}, Name: zoneName,
		Servers: []string{primary.addr, replica.Addr()}, Keys: []served.Key{zsk}}
	unsigned := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "unsigned"}, Name: zoneName, Servers: signed.Servers}
	ref := served.Ref{Kind: "DNSEndpoint", Key: types.NamespacedName{Namespace: "a", Name: "one"}}

	serial := primary.put(t, "h.served.test", "192.0.2.1")
	w, err := tr.Written(context.Background(), signed, ref, time.Time{}, time.Now())
	if err != nil || w.Serial != serial {
		t.Fatalf("Written: %+v, %v; want serial %d", w, err, serial)
	}
	if _, err := tr.Written(context.Background(), unsigned, ref, time.Time{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	until(t, tr, unsigned.Key, ref, served.StatusServed)
	time.Sleep(200 * time.Millisecond)
	_, v, _ := tr.Verdict(signed.Key, ref)
	if v.Status != served.StatusPropagating || len(v.Behind) != 1 || v.Behind[0].Server != replica.Addr() {
		t.Fatalf("verdict %+v, want Propagating with the replica %s alone behind", v, replica.Addr())
	}
	msg := served.Describe(w, v.Behind, 3)
	if !strings.Contains(msg, replica.Addr()+" answers serial") || !strings.Contains(msg, "unsigned (no RRSIG over the SOA)") {
		t.Fatalf("Describe = %q, want the replica named as answering the serial unsigned", msg)
	}
	t.Logf("Propagating: %s", msg)

	if err := replica.SetSigning(zoneName, pol); err != nil {
		t.Fatal(err)
	}
	until(t, tr, signed.Key, ref, served.StatusServed)
}

// TestUnsigned_NamesWhatIsWrongWithTheSignatures: an RRSIG over the SOA counts when it is the
// zone's, by one of the keys given (tag and algorithm) and valid now; else Unsigned says why.
func TestUnsigned_NamesWhatIsWrongWithTheSignatures(t *testing.T) {
	now := time.Now()
	key := served.Key{Tag: 1234, Algorithm: "ECDSAP256SHA256"}
	sig := func(tag uint16, alg uint8, signer string, from, to time.Time) *dns.RRSIG {
		return &dns.RRSIG{Hdr: dns.RR_Header{Name: zoneName + ".", Rrtype: dns.TypeRRSIG, Class: dns.ClassINET}, TypeCovered: dns.TypeSOA,
			Algorithm: alg, KeyTag: tag, SignerName: signer, Inception: uint32(from.Unix()), Expiration: uint32(to.Unix())}
	}
	valid := sig(1234, dns.ECDSAP256SHA256, zoneName+".", now.Add(-time.Hour), now.Add(time.Hour))
	for _, c := range []struct {
		name string
		sigs []*dns.RRSIG
		want string // "" or a part of the reason
	}{
		{"valid", []*dns.RRSIG{valid}, ""},
		{"one valid among others", []*dns.RRSIG{sig(999, dns.ECDSAP256SHA256, zoneName+".", now, now), valid}, ""},
		{"none", nil, "no RRSIG over the SOA"},
		{"another key", []*dns.RRSIG{sig(999, dns.ECDSAP256SHA256, zoneName+".", now.Add(-time.Hour), now.Add(time.Hour))}, "999/ECDSAP256SHA256, not an active key of the zone (1234/ECDSAP256SHA256)"},
		{"another algorithm", []*dns.RRSIG{sig(1234, dns.ED25519, zoneName+".", now.Add(-time.Hour), now.Add(time.Hour))}, "1234/ED25519, not an active key"},
		{"another signer", []*dns.RRSIG{sig(1234, dns.ECDSAP256SHA256, "example.", now.Add(-time.Hour), now.Add(time.Hour))}, "an RRSIG by example."},
		{"expired", []*dns.RRSIG{sig(1234, dns.ECDSAP256SHA256, zoneName+".", now.Add(-2*time.Hour), now.Add(-time.Hour))}, "valid from"},
		{"not yet valid", []*dns.RRSIG{sig(1234, dns.ECDSAP256SHA256, zoneName+".", now.Add(time.Hour), now.Add(2*time.Hour))}, "valid from"},
	} {
		got := served.Unsigned(c.sigs, zoneName, []served.Key{key}, now)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: Unsigned = %q, want %q", c.name, got, c.want)
		}
	}
}
