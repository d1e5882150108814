package dnssec

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/miekg/dns"
)

// checkKey refuses a key whose DNSKEY a validator does not take as a zone key of its role, or
// whose private key is not the DNSKEY's: protocol 3 (RFC 4034 §2.1.2); flags 257 (Zone Key and
// SEP) for a KSK or CSK, 256 (Zone Key) for a ZSK, no other flag (RFC 4034 §2.1.1; no REVOKE);
// an algorithm dnsplane signs with (ECDSAP256SHA256, ED25519, RSASHA256) and a private key of
// that algorithm that signs what the DNSKEY verifies; the state Generated for a KSK only (the
// DS of a double-DS rollover). A key without a private part is checked for its DNSKEY alone.
// Its errors name the key by tag, never by its private part.
func checkKey(k Key) error {
	d := k.DNSKEY
	if d == nil {
		return errors.New("no DNSKEY")
	}
	if d.Protocol != 3 {
		return fmt.Errorf("DNSKEY of tag %d has protocol %d, not 3 (RFC 4034 §2.1.2)", d.KeyTag(), d.Protocol)
	}
	want := uint16(dns.ZONE | dns.SEP)
	if k.Role == RoleZSK {
		want = dns.ZONE
	}
	if d.Flags != want {
		return fmt.Errorf("DNSKEY of tag %d has flags %d; a %s has %d", d.KeyTag(), d.Flags, k.Role, want)
	}
	if k.State == Generated && k.Role != RoleKSK {
		return fmt.Errorf("%s of tag %d is Generated; only a KSK is (its DS before its DNSKEY)", k.Role, d.KeyTag())
	}
	if k.Private == nil {
		return nil
	}
	return checkPair(d, k.Private)
}

// checkPair refuses a private key that is not of the DNSKEY's algorithm, or not the DNSKEY's
// own: an RRset signed with it must verify with the DNSKEY.
func checkPair(d *dns.DNSKEY, priv crypto.PrivateKey) error {
	var ok bool
	switch d.Algorithm {
	case dns.ECDSAP256SHA256:
		p, isEC := priv.(*ecdsa.PrivateKey)
		ok = isEC && p.Curve == elliptic.P256()
	case dns.ED25519:
		_, ok = priv.(ed25519.PrivateKey)
	case dns.RSASHA256:
		_, ok = priv.(*rsa.PrivateKey)
	default:
		return fmt.Errorf("DNSKEY of tag %d has algorithm %d; dnsplane signs with ECDSAP256SHA256 (13), ED25519 (15) or RSASHA256 (8)",
			d.KeyTag(), d.Algorithm)
	}
	signer, isSigner := priv.(crypto.Signer)
	if !ok || !isSigner {
		return fmt.Errorf("private key of tag %d is not a %s key", d.KeyTag(), dns.AlgorithmToString[d.Algorithm])
	}
	probe := &dns.TXT{Hdr: dns.RR_Header{Name: d.Hdr.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 300},
		Txt: []string{"dnsplane key check"}}
	now := time.Now()
	sig := &dns.RRSIG{Hdr: dns.RR_Header{Ttl: 300}, Algorithm: d.Algorithm, OrigTtl: 300, KeyTag: d.KeyTag(),
		SignerName: d.Hdr.Name, Inception: uint32(now.Add(-time.Hour).Unix()), Expiration: uint32(now.Add(time.Hour).Unix())}
	if err := sig.Sign(signer, []dns.RR{probe}); err != nil {
		return fmt.Errorf("private key of tag %d does not sign", d.KeyTag())
	}
	if err := sig.Verify(d, []dns.RR{probe}); err != nil {
		return fmt.Errorf("private key of tag %d is not the private half of its DNSKEY", d.KeyTag())
	}
	return nil
}

// checkKeys refuses a key set with a key that checkKey refuses, two keys of one tag (the
// rollover machine names keys by their tags; a DNSKEY listed twice is a duplicate RR, RFC 4034
// §6.3, and a DS listed twice at the parent), or an algorithm without an Active key that signs
// the DNSKEY RRset and one that signs the rest (RFC 4035 §2.2: every algorithm of the DNSKEY
// RRset signs every RRset; a KSK's DS names its algorithm at the parent too). A key set without
// an Active key is left to the callers (ParseKeySet takes one, Check refuses it).
func checkKeys(s KeySet) error {
	for i, k := range s.Keys {
		if err := checkKey(k); err != nil {
			return fmt.Errorf("key %d of %s: %w", i, s.Zone, err)
		}
		if j := slices.IndexFunc(s.Keys[:i], func(o Key) bool { return o.Tag() == k.Tag() }); j >= 0 {
			what := "shares the tag"
			if dns.IsDuplicate(s.Keys[j].DNSKEY, k.DNSKEY) {
				what = "repeats the DNSKEY"
			}
			return fmt.Errorf("key %d of %s %s of key %d (tag %d)", i, s.Zone, what, j, k.Tag())
		}
	}
	return checkAlgorithms(s)
}

// checkAlgorithms refuses a key set holding a key of an algorithm no Active key of which signs
// the DNSKEY RRset, or none the rest, while some Active key signs.
func checkAlgorithms(s KeySet) error {
	if !slices.ContainsFunc(s.Keys, func(k Key) bool { return k.State == Active }) {
		return nil
	}
	for _, k := range s.Keys {
		a := k.DNSKEY.Algorithm
		keys := slices.ContainsFunc(s.Keys, func(o Key) bool { return o.DNSKEY.Algorithm == a && o.SignsKeys() })
		zone := slices.ContainsFunc(s.Keys, func(o Key) bool { return o.DNSKEY.Algorithm == a && o.SignsZone() })
		if !keys || !zone {
			return fmt.Errorf("%s holds key %d of algorithm %s, but no Active key of that algorithm signs the DNSKEY "+
				"RRset and one the other RRsets (RFC 4035 §2.2: every algorithm of the key set signs every RRset; the "+
				"algorithm is changed by turning DNSSEC off and on again)", s.Zone, k.Tag(), dns.AlgorithmToString[a])
		}
	}
	return nil
}

// checkRolloverKeys refuses a rollover whose keys are not where its phase puts them (Machine):
// in Publish the new key Published (a KSK's Generated) and the old one Active; in Activate the
// new key Active and the old one Retired; in Withdraw the new key Active and the old one gone.
// Resumed otherwise, a phase would activate a key no server publishes.
func checkRolloverKeys(s KeySet) error {
	r := s.Rollover
	state := func(tag uint16) State {
		if i := slices.IndexFunc(s.Keys, func(k Key) bool { return k.Tag() == tag && k.Role == r.Role }); i >= 0 {
			return s.Keys[i].State
		}
		return ""
	}
	wantNew, wantOld := Active, State("")
	switch r.Phase {
	case PhasePublish:
		wantNew, wantOld = Published, Active
		if r.Role == RoleKSK {
			wantNew = Generated
		}
	case PhaseActivate:
		wantOld = Retired
	}
	if got := state(r.New); got != wantNew {
		return fmt.Errorf("its new %s, key %d, is %q in phase %s, not %s", r.Role, r.New, got, r.Phase, wantNew)
	}
	if got := state(r.Old); got != wantOld {
		return fmt.Errorf("its old %s, key %d, is %q in phase %s, not %q", r.Role, r.Old, got, r.Phase, wantOld)
	}
	return nil
}
