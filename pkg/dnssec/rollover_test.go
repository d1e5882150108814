package dnssec

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestMachine_ZSKRolloverWaitsForEachTTL walks a ZSK rollover with every observation in at
// once: each phase ends exactly when its wait does, and the key set it leaves is the one the
// phase names.
func TestMachine_ZSKRolloverWaitsForEachTTL(t *testing.T) {
	pol := KeyPolicy{Algorithm: dns.ECDSAP256SHA256, Scheme: SchemeKSKZSK, ZSKLifetime: time.Hour,
		DNSKEYTTL: 5 * time.Minute, MaxZoneTTL: 20 * time.Minute, ParentDSTTL: 10 * time.Minute}
	m := Machine{Policy: pol, Make: fastKeys(rand.New(rand.NewPCG(1, 2)))}
	at := func(d time.Duration) Observation {
		return Observation{Now: t0.Add(d), Served: true, ParentDS: true}
	}
	st, err := m.Next(KeySet{Zone: "example.test."}, at(0))
	if err != nil || !st.Changed || len(st.Keys.Keys) != 2 || len(st.DS) != 1 {
		t.Fatalf("first keys: %+v, %v", st, err)
	}
	set := st.Keys
	step := func(d time.Duration, wantPhase Phase) Step {
		t.Helper()
		st, err := m.Next(set, at(d))
		if err != nil {
			t.Fatal(err)
		}
		set = st.Keys
		got := PhaseIdle
		if set.Rollover != nil {
			got = set.Rollover.Phase
		}
		if got != wantPhase {
			t.Fatalf("at %s: phase %q, want %q (wait: %s)", d, got, wantPhase, st.Wait)
		}
		return st
	}
	if st := step(59*time.Minute, PhaseIdle); !st.Wake.Equal(t0.Add(time.Hour)) {
		t.Fatalf("the next rollover wakes at %s, want its lifetime's end", st.Wake)
	}
	step(time.Hour, PhasePublish)                 // a new ZSK in the DNSKEY RRset
	step(time.Hour+time.Minute, PhasePublish)     // served now: the DNSKEY TTL from here
	step(time.Hour+6*time.Minute, PhaseActivate)  // the new ZSK signs
	step(time.Hour+7*time.Minute, PhaseActivate)  // served: the largest TTL from here
	step(time.Hour+26*time.Minute, PhaseActivate) // one minute before the wait ends
	step(time.Hour+27*time.Minute, PhaseWithdraw) // the old ZSK leaves
	st = step(time.Hour+28*time.Minute, PhaseIdle)
	if len(set.Keys) != 2 || !strings.Contains(st.Event, "done") {
		t.Fatalf("after the rollover: %d keys, event %q", len(set.Keys), st.Event)
	}
}

// TestMachine_ResumesFromTheSecret: a rollover written to the Secret and read back by another
// manager goes on from its phase, with the same keys.
func TestMachine_ResumesFromTheSecret(t *testing.T) {
	pol := KeyPolicy{Algorithm: dns.ED25519, Scheme: SchemeCSK, KSKLifetime: time.Hour,
		DNSKEYTTL: time.Minute, MaxZoneTTL: time.Minute, ParentDSTTL: time.Minute}
	m := Machine{Policy: pol, Make: Generate}
	st, err := m.Next(KeySet{Zone: "example.test."}, Observation{Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	st, err = m.Next(st.Keys, Observation{Now: t0.Add(2 * time.Hour), Served: true})
	if err != nil || st.Keys.Rollover == nil || st.Keys.Rollover.Phase != PhasePublish {
		t.Fatalf("no rollover started: %+v %v", st.Keys.Rollover, err)
	}
	raw, err := st.Keys.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseKeySet(raw)
	if err != nil {
		t.Fatal(err)
	}
	if *back.Rollover != *st.Keys.Rollover || len(back.Keys) != 2 || len(st.DS) != 2 {
		t.Fatalf("read back %+v, wrote %+v (DS %d)", back.Rollover, st.Keys.Rollover, len(st.DS))
	}
	// A rollover whose new key is gone, or of an unknown phase, is refused, not resumed.
	for _, bad := range []string{`"phase": "Publish"`, `"new": `} {
		mut := strings.Replace(string(raw), bad, map[string]string{`"phase": "Publish"`: `"phase": "Half"`, `"new": `: `"new": 1`}[bad], 1)
		if _, err := ParseKeySet([]byte(mut)); err == nil {
			t.Fatalf("accepted a rollover with %s changed", bad)
		}
	}
}
