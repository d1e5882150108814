package dnssec

import (
	"crypto"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestKeySet_RoundTripsEveryAlgorithmAndRole(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for name := range algorithms {
		alg, err := Algorithm(name)
		if err != nil {
			t.Fatal(err)
		}
		set := KeySet{Zone: "example.test"}
		for _, r := range []struct {
			role  Role
			state State
		}{{RoleKSK, Active}, {RoleZSK, Active}, {RoleZSK, Published}, {RoleCSK, Retired}, {RoleKSK, Generated}} {
			k, err := Generate(set.Zone, alg, r.role, r.state, now)
			if err != nil {
				t.Fatal(err)
			}
			set.Keys = append(set.Keys, k)
		}
		raw, err := set.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseKeySet(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Zone != "example.test." || len(got.Keys) != len(set.Keys) {
			t.Fatalf("%s: got zone %q with %d keys", name, got.Zone, len(got.Keys))
		}
		for i, k := range got.Keys {
			want := set.Keys[i]
			if k.Tag() != want.Tag() || k.Role != want.Role || k.State != want.State || !k.Since.Equal(now) {
				t.Fatalf("%s key %d: got %d %s %s, want %d %s %s", name, i, k.Tag(), k.Role, k.State, want.Tag(), want.Role, want.State)
			}
			signVerifies(t, k)
		}
	}
}

// signVerifies signs an RRset with the parsed private key and verifies it with its DNSKEY.
func signVerifies(t *testing.T, k Key) {
	t.Helper()
	a, _ := dns.NewRR("www.example.test. 300 IN A 192.0.2.1")
	sig := &dns.RRSIG{Hdr: dns.RR_Header{Name: "www.example.test.", Rrtype: dns.TypeRRSIG, Class: dns.ClassINET, Ttl: 300},
		Algorithm: k.DNSKEY.Algorithm, SignerName: k.DNSKEY.Hdr.Name, KeyTag: k.Tag(),
		Inception: uint32(time.Now().Add(-time.Hour).Unix()), Expiration: uint32(time.Now().Add(time.Hour).Unix())}
	if err := sig.Sign(k.Private.(crypto.Signer), []dns.RR{a}); err != nil {
		t.Fatalf("tag %d: sign: %v", k.Tag(), err)
	}
	if err := sig.Verify(k.DNSKEY, []dns.RR{a}); err != nil {
		t.Fatalf("tag %d: verify: %v", k.Tag(), err)
	}
}

func TestKeySet_FlagsAndDS(t *testing.T) {
	now := time.Now()
	ksk, _ := Generate("example.test.", dns.ECDSAP256SHA256, RoleKSK, Active, now)
	zsk, _ := Generate("example.test.", dns.ECDSAP256SHA256, RoleZSK, Active, now)
	next, _ := Generate("example.test.", dns.ECDSAP256SHA256, RoleKSK, Published, now)
	set := KeySet{Zone: "example.test.", Keys: []Key{ksk, zsk, next}}
	if ksk.DNSKEY.Flags != 257 || zsk.DNSKEY.Flags != 256 {
		t.Fatalf("flags: KSK %d ZSK %d", ksk.DNSKEY.Flags, zsk.DNSKEY.Flags)
	}
	if !ksk.SignsKeys() || ksk.SignsZone() || zsk.SignsKeys() || !zsk.SignsZone() || next.SignsKeys() {
		t.Fatal("signing roles wrong")
	}
	if got := set.DS(3600, Active); len(got) != 1 || got[0].(*dns.DS).KeyTag != ksk.Tag() {
		t.Fatalf("DS of the active KSK: %v", got)
	}
	if got := set.DS(3600, Active, Published); len(got) != 2 {
		t.Fatalf("double DS: %v", got)
	}
	if got := set.DNSKEYs(600); len(got) != 3 || got[0].Header().Ttl != 600 {
		t.Fatalf("DNSKEY RRset: %v", got)
	}
	coming, _ := Generate("example.test.", dns.ECDSAP256SHA256, RoleKSK, Generated, now)
	set.Keys = append(set.Keys, coming)
	if got := set.DNSKEYs(600); len(got) != 3 {
		t.Fatalf("a Generated key is in the DNSKEY RRset: %v", got)
	}
	if got := set.DS(3600, Active, Generated); len(got) != 2 {
		t.Fatalf("double-DS: the Generated KSK's DS: %v", got)
	}
}

func TestParseKeySet_RefusesBadInputWithoutThePrivateKey(t *testing.T) {
	k, _ := Generate("example.test.", dns.ED25519, RoleCSK, Active, time.Now())
	raw, _ := KeySet{Zone: "example.test.", Keys: []Key{k}}.Marshal()
	priv := k.DNSKEY.PrivateKeyString(k.Private)
	for name, in := range map[string]string{
		"not json":   "{",
		"role":       strings.Replace(string(raw), `"CSK"`, `"XSK"`, 1),
		"state":      strings.Replace(string(raw), `"Active"`, `"Gone"`, 1),
		"other zone": strings.Replace(string(raw), `"zone": "example.test."`, `"zone": "other.test."`, 1),
		"private":    strings.Replace(string(raw), "PrivateKey: ", "PrivateKey: AAAA", 1),
	} {
		_, err := ParseKeySet([]byte(in))
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if strings.Contains(err.Error(), priv[len(priv)-20:]) {
			t.Fatalf("%s: the error carries the private key", name)
		}
	}
}
