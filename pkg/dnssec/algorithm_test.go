package dnssec_test

import (
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// TestMachine_RolloverKeepsTheAlgorithm: spec.dnssec.algorithm changed on a signed KSKZSK zone
// (a zone turned on again before its turn-off was done, or keys brought by hand), then a ZSK
// rollover (by lifetime or by hand): the new ZSK is made in the algorithm of the key it
// replaces. RFC 4035 §2.2: "There MUST be an RRSIG for each RRset using at
// least one DNSKEY of each algorithm in the zone apex DNSKEY RRset"; at every step, each
// algorithm of the DNSKEY RRset must have an Active key signing the DNSKEY RRset and one
// signing the rest, else strict validators and zone checkers (ldns-verify-zone,
// dnssec-verify) find the zone broken.
func TestMachine_RolloverKeepsTheAlgorithm(t *testing.T) {
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
