package dnssec_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// The oracle (docs/dnssec.md "Keys you bring"): "A key Secret that holds no usable key set of
// the zone (another zone's keys, text that does not parse, no active key for the DNSKEY set or
// for the rest) gives Secure=False, reason KeysInvalid"; and "SetSigning refuses a policy
// without an Active key that signs the DNSKEY RRset (KSK or CSK) and one that signs the zone".
// A key set that ParseKeySet and Policy.Check accept is signed with: so every key set they
// accept must give signatures a validator verifies with the DNSKEY RRset it serves.

const atkZone = "atk.example."

// atkCSK is a key set of one Active CSK, as JSON, and as a generic document to edit.
func atkCSK(t *testing.T) (raw []byte, doc map[string]any) {
	t.Helper()
	now := time.Now()
	k, err := dnssec.Generate(atkZone, dns.ECDSAP256SHA256, dnssec.RoleCSK, dnssec.Active, now)
	if err != nil {
		t.Fatal(err)
	}
	raw, err = dnssec.KeySet{Zone: atkZone, Keys: []dnssec.Key{k}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return raw, doc
}

func atkMarshal(t *testing.T, doc map[string]any) []byte {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// atkAccepted parses raw and checks it as a policy; ok: both accept it.
func atkAccepted(raw []byte) (dnssec.Policy, bool) {
	ks, err := dnssec.ParseKeySet(raw)
	if err != nil {
		return dnssec.Policy{}, false
	}
	p := dnssec.Policy{Keys: ks}
	return p, p.Check() == nil
}

// atkVerifies signs the zone's DNSKEY RRset and an A RRset with p and verifies every RRSIG
// with the DNSKEY of its tag as served (RFC 4035 §5.3): a failure is a zone served bogus.
func atkVerifies(t *testing.T, p dnssec.Policy) {
	t.Helper()
	now := time.Now()
	keys := p.Keys.DNSKEYs(300)
	a, _ := dns.NewRR("www." + atkZone + " 300 IN A 192.0.2.1")
	for _, rrset := range [][]dns.RR{keys, {a}} {
		sigs, err := p.Sign(rrset, now)
		if err != nil {
			t.Fatalf("an accepted key set does not sign: %v", err)
		}
		if len(sigs) == 0 {
			t.Fatalf("an accepted key set signs nothing of %s", dns.TypeToString[rrset[0].Header().Rrtype])
		}
		for _, s := range sigs {
			sig := s.(*dns.RRSIG)
			var by *dns.DNSKEY
			for _, k := range keys {
				if dk := k.(*dns.DNSKEY); dk.KeyTag() == sig.KeyTag && dk.Algorithm == sig.Algorithm && dk.Flags&dns.ZONE != 0 && dk.Protocol == 3 {
					by = dk
				}
			}
			if by == nil {
				t.Fatalf("KEY SET ACCEPTED, ZONE BOGUS: the RRSIG over %s by key %d matches no usable zone key of the DNSKEY RRset %v",
					dns.TypeToString[sig.TypeCovered], sig.KeyTag, keys)
			}
			if err := sig.Verify(by, rrset); err != nil {
				t.Fatalf("KEY SET ACCEPTED, ZONE BOGUS: the RRSIG over %s by key %d does not verify: %v",
					dns.TypeToString[sig.TypeCovered], sig.KeyTag, err)
			}
		}
	}
}

// TestKeySet_RefusesPrivateKeyOfAnotherKey: a hand-edited key set whose private key is not the
// DNSKEY's (the private half of another key of the same algorithm).
func TestKeySet_RefusesPrivateKeyOfAnotherKey(t *testing.T) {
	_, doc := atkCSK(t)
	_, other := atkCSK(t)
	doc["keys"].([]any)[0].(map[string]any)["private"] = other["keys"].([]any)[0].(map[string]any)["private"]
	p, ok := atkAccepted(atkMarshal(t, doc))
	if !ok {
		return // refused: KeysInvalid, as documented
	}
	atkVerifies(t, p)
}

// TestKeySet_RefusesDuplicateKey: a hand-edited key set listing its CSK twice (duplicate tag).
// RFC 4034 §6.3: duplicate RRs are removed from an RRset before it is verified, so an RRSIG
// made over the duplicated set is bogus; and the DS set has the DS twice.
func TestKeySet_RefusesDuplicateKey(t *testing.T) {
	_, doc := atkCSK(t)
	keys := doc["keys"].([]any)
	doc["keys"] = append(keys, keys[0])
	p, ok := atkAccepted(atkMarshal(t, doc))
	if !ok {
		return
	}
	keysRR := p.Keys.DNSKEYs(300)
	if len(keysRR) != len(dns.Dedup(append([]dns.RR(nil), keysRR...), nil)) {
		t.Fatalf("KEY SET ACCEPTED WITH A DUPLICATE KEY: the DNSKEY RRset served and signed holds duplicates: %v", keysRR)
	}
	atkVerifies(t, p)
}

// TestKeySet_RefusesNotAZoneKey: a hand-edited DNSKEY with the Zone Key flag clear (flags 1):
// RFC 4034 §2.1.1, such a key "MUST NOT be used to verify RRSIGs", so the zone is bogus.
func TestKeySet_RefusesNotAZoneKey(t *testing.T) {
	raw, _ := atkCSK(t)
	ks, err := dnssec.ParseKeySet(raw)
	if err != nil {
		t.Fatal(err)
	}
	ks.Keys[0].DNSKEY.Flags = dns.SEP // zone-key bit clear
	raw, err = ks.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p, ok := atkAccepted(raw)
	if !ok {
		return
	}
	atkVerifies(t, p)
}

// TestKeySet_RefusesProtocolNot3: a hand-edited DNSKEY with protocol 4: RFC 4034 §2.1.2, "The
// DNSKEY RR MUST be treated as invalid during signature verification if it is found to be some
// value other than 3".
func TestKeySet_RefusesProtocolNot3(t *testing.T) {
	raw, _ := atkCSK(t)
	ks, err := dnssec.ParseKeySet(raw)
	if err != nil {
		t.Fatal(err)
	}
	ks.Keys[0].DNSKEY.Protocol = 4
	raw, err = ks.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p, ok := atkAccepted(raw)
	if !ok {
		return
	}
	atkVerifies(t, p)
}

// atkRefused says that ParseKeySet refuses ks as the Secret would hold it and, for a key set
// with no rollover (which the signer does not read), that Policy.Check refuses it.
func atkRefused(t *testing.T, what string, ks dnssec.KeySet) {
	t.Helper()
	raw, err := ks.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := dnssec.ParseKeySet(raw); err == nil {
		t.Fatalf("%s: ParseKeySet took it: %d keys", what, len(got.Keys))
	} else {
		t.Logf("%s: %v", what, err)
	}
	if err := (dnssec.Policy{Keys: ks}).Check(); err == nil && ks.Rollover == nil {
		t.Fatalf("%s: Policy.Check took it", what)
	}
}

func atkKey(t *testing.T, alg uint8, role dnssec.Role, state dnssec.State) dnssec.Key {
	t.Helper()
	k, err := dnssec.Generate(atkZone, alg, role, state, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKeySet_RefusesInconsistentKeys: every field of a hand-edited key set that the signer
// trusts is checked against the others: the private key's algorithm against the DNSKEY's, the
// SEP flag against the role, an algorithm dnsplane signs with, the state Generated (a KSK's
// only), every algorithm signing every RRset (RFC 4035 §2.2), and a rollover's keys in the
// states of its phase.
func TestKeySet_RefusesInconsistentKeys(t *testing.T) {
	ed := atkKey(t, dns.ED25519, dnssec.RoleCSK, dnssec.Active)
	wrongType := atkKey(t, dns.ECDSAP256SHA256, dnssec.RoleCSK, dnssec.Active)
	wrongType.Private = ed.Private
	cskNoSEP := atkKey(t, dns.ECDSAP256SHA256, dnssec.RoleCSK, dnssec.Active)
	cskNoSEP.DNSKEY.Flags = dns.ZONE
	zsk := atkKey(t, dns.ECDSAP256SHA256, dnssec.RoleZSK, dnssec.Active)
	ksk := atkKey(t, dns.ECDSAP256SHA256, dnssec.RoleKSK, dnssec.Active)
	zskSEP := atkKey(t, dns.ECDSAP256SHA256, dnssec.RoleZSK, dnssec.Active)
	zskSEP.DNSKEY.Flags |= dns.SEP
	revoked := atkKey(t, dns.ECDSAP256SHA256, dnssec.RoleCSK, dnssec.Active)
	revoked.DNSKEY.Flags |= dns.REVOKE
	p384 := &dns.DNSKEY{Hdr: dns.RR_Header{Name: atkZone, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags: 257, Protocol: 3, Algorithm: dns.ECDSAP384SHA384}
	priv384, err := p384.Generate(384)
	if err != nil {
		t.Fatal(err)
	}
	unsupported := dnssec.Key{Role: dnssec.RoleCSK, State: dnssec.Active, DNSKEY: p384, Private: priv384}
	generatedZSK := atkKey(t, dns.ECDSAP256SHA256, dnssec.RoleZSK, dnssec.Generated)
	edZSK := atkKey(t, dns.ED25519, dnssec.RoleZSK, dnssec.Published)
	newZSK := atkKey(t, dns.ECDSAP256SHA256, dnssec.RoleZSK, dnssec.Active)
	set := func(keys ...dnssec.Key) dnssec.KeySet { return dnssec.KeySet{Zone: atkZone, Keys: keys} }
	early := set(ksk, zsk, newZSK)
	early.Rollover = &dnssec.Rollover{Role: dnssec.RoleZSK, Phase: dnssec.PhasePublish, Old: zsk.Tag(), New: newZSK.Tag()}
	for _, tc := range []struct {
		what string
		ks   dnssec.KeySet
	}{
		{"an ED25519 private key under an ECDSAP256SHA256 DNSKEY", set(wrongType)},
		{"a CSK without the SEP flag", set(cskNoSEP)},
		{"a ZSK with the SEP flag", set(ksk, zskSEP)},
		{"a CSK with the REVOKE flag", set(revoked)},
		{"an ECDSAP384SHA384 key", set(unsupported)},
		{"a Generated ZSK", set(ksk, zsk, generatedZSK)},
		{"a Published ED25519 ZSK beside ECDSAP256SHA256 keys", set(ksk, zsk, edZSK)},
		{"a ZSK rollover in Publish whose new ZSK already signs", early},
	} {
		t.Run(tc.what, func(t *testing.T) { atkRefused(t, tc.what, tc.ks) })
	}
}

// TestKeySet_ErrorsQuoteNoText: a key set that is not JSON is refused with where it breaks,
// never a character of it (the text holds private keys).
func TestKeySet_ErrorsQuoteNoText(t *testing.T) {
	_, err := dnssec.ParseKeySet([]byte(`{"zone": "a.", "keys": [{"private": "PrivateKey: abc\qdef"}]}`))
	if err == nil || strings.Contains(err.Error(), "q") {
		t.Fatalf("error %v", err)
	}
}
