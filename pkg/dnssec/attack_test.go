//go:build attack

package dnssec_test

import (
	"encoding/json"
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

// TestAttack_KeySetPrivateKeyOfAnotherKey: a hand-edited key set whose private key is not the
// DNSKEY's (the private half of another key of the same algorithm).
func TestAttack_KeySetPrivateKeyOfAnotherKey(t *testing.T) {
	_, doc := atkCSK(t)
	_, other := atkCSK(t)
	doc["keys"].([]any)[0].(map[string]any)["private"] = other["keys"].([]any)[0].(map[string]any)["private"]
	p, ok := atkAccepted(atkMarshal(t, doc))
	if !ok {
		return // refused: KeysInvalid, as documented
	}
	atkVerifies(t, p)
}

// TestAttack_KeySetDuplicateKey: a hand-edited key set listing its CSK twice (duplicate tag).
// RFC 4034 §6.3: duplicate RRs are removed from an RRset before it is verified, so an RRSIG
// made over the duplicated set is bogus; and the DS set has the DS twice.
func TestAttack_KeySetDuplicateKey(t *testing.T) {
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

// TestAttack_KeySetNotAZoneKey: a hand-edited DNSKEY with the Zone Key flag clear (flags 1):
// RFC 4034 §2.1.1, such a key "MUST NOT be used to verify RRSIGs", so the zone is bogus.
func TestAttack_KeySetNotAZoneKey(t *testing.T) {
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

// TestAttack_KeySetProtocolNot3: a hand-edited DNSKEY with protocol 4: RFC 4034 §2.1.2, "The
// DNSKEY RR MUST be treated as invalid during signature verification if it is found to be some
// value other than 3".
func TestAttack_KeySetProtocolNot3(t *testing.T) {
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

// TestAttack_AlgorithmChangeRollover: spec.dnssec.algorithm changed on a signed KSKZSK zone
// (admission takes it; docs/api.md), then a ZSK rollover (by lifetime or by hand). The new ZSK
// is made in the new algorithm. RFC 4035 §2.2: "There MUST be an RRSIG for each RRset using at
// least one DNSKEY of each algorithm in the zone apex DNSKEY RRset"; at every step, each
// algorithm of the DNSKEY RRset must have an Active key signing the DNSKEY RRset and one
// signing the rest, else strict validators and zone checkers (ldns-verify-zone,
// dnssec-verify) find the zone broken.
func TestAttack_AlgorithmChangeRollover(t *testing.T) {
	now := time.Now()
	pol := dnssec.KeyPolicy{Algorithm: dns.ECDSAP256SHA256, Scheme: dnssec.SchemeKSKZSK,
		DNSKEYTTL: time.Minute, MaxZoneTTL: time.Minute, ParentDSTTL: time.Minute}
	m := dnssec.Machine{Policy: pol, Make: dnssec.Generate}
	st, err := m.Next(dnssec.KeySet{Zone: atkZone}, dnssec.Observation{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	m.Policy.Algorithm = dns.ED25519 // spec.dnssec.algorithm: ED25519
	set := st.Keys
	for i := 0; i < 12; i++ {
		now = now.Add(10 * time.Minute)
		o := dnssec.Observation{Now: now, Served: true, ParentDS: true}
		if i == 0 {
			o.Trigger = dnssec.RoleZSK
		}
		st, err := m.Next(set, o)
		if err != nil {
			t.Fatal(err)
		}
		set = st.Keys
		algs := map[uint8]bool{}
		for _, rr := range set.DNSKEYs(300) {
			algs[rr.(*dns.DNSKEY).Algorithm] = true
		}
		for a := range algs {
			var keys, zone bool
			for _, k := range set.Keys {
				if k.DNSKEY.Algorithm == a {
					keys, zone = keys || k.SignsKeys(), zone || k.SignsZone()
				}
			}
			if !keys || !zone {
				phase := "idle"
				if set.Rollover != nil {
					phase = string(set.Rollover.Role) + " " + string(set.Rollover.Phase)
				}
				t.Fatalf("ALGORITHM ROLLOVER BROKEN in %s: the DNSKEY RRset holds algorithm %s, but no Active key of it signs the DNSKEY RRset (%v) or the zone (%v)",
					phase, dns.AlgorithmToString[a], keys, zone)
			}
		}
		if set.Rollover == nil && i > 0 {
			return
		}
	}
}

// atkWalk runs m from set with every observation in, one step per 10 minutes, triggering role
// at the first step, and checks at every step that an Active key signs the DNSKEY RRset and one
// the rest (docs/dnssec.md: SetSigning refuses a policy without them, so a step without them
// is a step the signer refuses) and that the rollover ends (L, "every rollover that starts
// ends"). It returns the key set at the end.
func atkWalk(t *testing.T, m dnssec.Machine, set dnssec.KeySet, role dnssec.Role, now time.Time) dnssec.KeySet {
	t.Helper()
	for i := 0; i < 40; i++ {
		now = now.Add(10 * time.Minute)
		o := dnssec.Observation{Now: now, Served: true, ParentDS: true}
		if i == 0 {
			o.Trigger = role
		}
		st, err := m.Next(set, o)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		set = st.Keys
		if err := (dnssec.Policy{Keys: set}).Check(); err != nil {
			t.Fatalf("step %d (%+v): the machine's key set signs nothing of a role: %v", i, set.Rollover, err)
		}
		if set.Rollover == nil && i > 0 {
			return set
		}
	}
	t.Fatalf("the rollover does not end in 40 steps: %+v", set.Rollover)
	return set
}

// TestAttack_SchemeChangeRollover: spec.dnssec.keys.scheme changed on a signed zone (admission
// takes it), then the active key's rollover asked for by hand, both ways.
func TestAttack_SchemeChangeRollover(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		from, to dnssec.Scheme
		roll     dnssec.Role
	}{{dnssec.SchemeCSK, dnssec.SchemeKSKZSK, dnssec.RoleCSK}, {dnssec.SchemeKSKZSK, dnssec.SchemeCSK, dnssec.RoleKSK}, {dnssec.SchemeKSKZSK, dnssec.SchemeCSK, dnssec.RoleZSK}} {
		t.Run(string(tc.from)+"to"+string(tc.to)+"/"+string(tc.roll), func(t *testing.T) {
			pol := dnssec.KeyPolicy{Algorithm: dns.ECDSAP256SHA256, Scheme: tc.from,
				DNSKEYTTL: time.Minute, MaxZoneTTL: time.Minute, ParentDSTTL: time.Minute}
			m := dnssec.Machine{Policy: pol, Make: dnssec.Generate}
			st, err := m.Next(dnssec.KeySet{Zone: atkZone}, dnssec.Observation{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			m.Policy.Scheme = tc.to
			end := atkWalk(t, m, st.Keys, tc.roll, now)
			var roles []string
			for _, k := range end.Keys {
				roles = append(roles, string(k.Role)+" "+string(k.State))
			}
			t.Logf("keys after the rollover: %v", roles)
		})
	}
}

// TestAttack_RefreshAboveHalfValidity: admission takes signatureValiditySeconds 3600 with
// signatureRefreshSeconds 3000 (refresh < validity). docs/api.md: "signatureRefreshSeconds:
// re-sign when less than this is left": every signature served has at least Refresh left.
func TestAttack_RefreshAboveHalfValidity(t *testing.T) {
	p := dnssec.Policy{Validity: 3600 * time.Second, Refresh: 3000 * time.Second}
	start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	for d := time.Duration(0); d < 2*time.Hour; d += time.Minute {
		now := start.Add(d)
		_, exp, _ := p.Window(now)
		if left := exp.Sub(now); left < p.Refresh {
			t.Fatalf("at %s a signature is served with %s left, less than signatureRefreshSeconds %s", now.Format(time.TimeOnly), left, p.Refresh)
		}
	}
}

// TestAttack_HandEditedRollover: a key set whose rollover record was edited by hand (an old key
// that is not in the set, the new key in a state its phase does not give it) parses
// (ParseKeySet checks only the role, the phase and that the new key is in the set). docs:
// "bad input never corrupts state": the machine must either refuse it or keep a key set that
// signs (Policy.Check) at every step, and end the rollover.
func TestAttack_HandEditedRollover(t *testing.T) {
	now := time.Now()
	for _, scheme := range []dnssec.Scheme{dnssec.SchemeCSK, dnssec.SchemeKSKZSK} {
		for _, phase := range []dnssec.Phase{dnssec.PhasePublish, dnssec.PhaseActivate, dnssec.PhaseWithdraw} {
			t.Run(string(scheme)+"/"+string(phase), func(t *testing.T) {
				pol := dnssec.KeyPolicy{Algorithm: dns.ECDSAP256SHA256, Scheme: scheme,
					DNSKEYTTL: time.Minute, MaxZoneTTL: time.Minute, ParentDSTTL: time.Minute}
				m := dnssec.Machine{Policy: pol, Make: dnssec.Generate}
				st, err := m.Next(dnssec.KeySet{Zone: atkZone}, dnssec.Observation{Now: now})
				if err != nil {
					t.Fatal(err)
				}
				set := st.Keys
				k := set.Keys[0] // the CSK, or the first key of the pair: Active
				set.Rollover = &dnssec.Rollover{Role: k.Role, Phase: phase, Since: now, Old: k.Tag() ^ 0x5a5a, New: k.Tag()}
				raw, err := set.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				set, err = dnssec.ParseKeySet(raw)
				if err != nil {
					return // refused: KeysInvalid
				}
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Fatalf("the machine panics on a hand-edited rollover: %v", r)
						}
					}()
					atkWalk(t, m, set, "", now)
				}()
			})
		}
	}
}
