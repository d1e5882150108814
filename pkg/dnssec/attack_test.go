//go:build attack

package dnssec_test

import (
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

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
