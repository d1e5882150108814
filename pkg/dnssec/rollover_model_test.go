package dnssec

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// The rollover model check. A zone's keys are driven by Machine.Next for hours of simulated
// time while an adversary picks how long every publication takes to reach every server of the
// zone and every parent server, fails parent writes for a while, crashes the manager between
// a step and its write, and asks for rollovers by hand. A resolver is modelled by what it may
// hold: any version of the DNSKEY RRset, the DS RRset and the zone's signatures that some
// server could have answered within the RRset's TTL. The oracle is the chain of trust:
//
//   - V1: every DNSKEY RRset a resolver may hold validates under every non-empty DS RRset it
//     may hold at the same time (a DS matches a key that is in the set and signs it);
//   - V2: every signature a resolver may hold was made by a key in every DNSKEY RRset it may
//     hold at the same time;
//   - L: every rollover that starts ends, within a bound of its waits and propagation delays.
//
// A version is possibly served from its publication until a later version is at every server;
// a resolver may hold it for one TTL after that. V1 and V2 hold for resolvers that re-validate
// what they hold, which is stricter than validating once at insertion.

const tick = time.Minute

// version is one publication of the zone's keys or of the parent's DS RRset.
type version struct {
	pub, everywhere int // ticks; everywhere: when every server answers it (or a later one)
	// zone versions: the keys in the DNSKEY RRset, the keys signing it, the keys signing data
	keys, keySigners, zoneSigners []uint16
	// parent versions: the DS tags
	ds []uint16
}

// world is one run of the model.
type world struct {
	t        *testing.T
	rng      *rand.Rand
	pol      KeyPolicy
	zone     []version
	parent   []version
	maxDelay int
	// parentDown: parent writes fail until this tick
	parentDown int
}

// end is when no server answers versions[i] any more: the earliest everywhere of a later one.
func end(vs []version, i int) int {
	e := 1 << 30
	for _, v := range vs[i+1:] {
		e = min(e, v.everywhere)
	}
	return e
}

// held lists the versions a resolver may hold at t with ttl (in ticks).
func held(vs []version, t, ttl int) []version {
	var out []version
	for i, v := range vs {
		if v.pub <= t && t-ttl < end(vs, i) {
			out = append(out, v)
		}
	}
	return out
}

func ticks(d time.Duration) int { return int(d / tick) }

// check applies V1 and V2 at t.
func (w *world) check(t int) error {
	dnskeys := held(w.zone, t, ticks(w.pol.DNSKEYTTL))
	for _, k := range dnskeys {
		for _, d := range held(w.parent, t, ticks(w.pol.ParentDSTTL)) {
			if len(d.ds) > 0 && !slices.ContainsFunc(k.keySigners, func(s uint16) bool { return slices.Contains(d.ds, s) }) {
				return fmt.Errorf("V1 at %d: DNSKEY RRset %v signed by %v (published %d) under DS %v (published %d)", t, k.keys, k.keySigners, k.pub, d.ds, d.pub)
			}
		}
		for _, z := range held(w.zone, t, ticks(w.pol.MaxZoneTTL)) {
			if !slices.ContainsFunc(z.zoneSigners, func(s uint16) bool { return slices.Contains(k.keys, s) }) {
				return fmt.Errorf("V2 at %d: signatures by %v (published %d) under DNSKEY RRset %v (published %d)", t, z.zoneSigners, z.pub, k.keys, k.pub)
			}
		}
	}
	return nil
}

// publish records the key set's zone and parent versions at t when they changed.
func (w *world) publish(set KeySet, ds []dns.RR, t int) {
	var zv version
	for _, k := range set.Keys {
		if k.State == Generated {
			continue
		}
		zv.keys = append(zv.keys, k.Tag())
		if k.SignsKeys() {
			zv.keySigners = append(zv.keySigners, k.Tag())
		}
		if k.SignsZone() {
			zv.zoneSigners = append(zv.zoneSigners, k.Tag())
		}
	}
	if n := len(w.zone); n == 0 || !sameVersion(w.zone[n-1], zv) {
		zv.pub, zv.everywhere = t, t+w.rng.IntN(w.maxDelay+1)
		w.zone = append(w.zone, zv)
	}
	var pv version
	for _, rr := range ds {
		pv.ds = append(pv.ds, rr.(*dns.DS).KeyTag)
	}
	slices.Sort(pv.ds)
	if n := len(w.parent); n == 0 || !slices.Equal(w.parent[n-1].ds, pv.ds) {
		pv.pub, pv.everywhere = t, max(t, w.parentDown)+w.rng.IntN(w.maxDelay+1)
		w.parent = append(w.parent, pv)
	}
}

func sameVersion(a, b version) bool {
	return slices.Equal(a.keys, b.keys) && slices.Equal(a.keySigners, b.keySigners) && slices.Equal(a.zoneSigners, b.zoneSigners)
}

// observe is what the controller sees at t: the latest versions at every server.
func (w *world) observe(t int, trigger Role) Observation {
	now := t0.Add(time.Duration(t) * tick)
	return Observation{Now: now, Trigger: trigger,
		Served:   len(w.zone) > 0 && w.zone[len(w.zone)-1].everywhere <= t,
		ParentDS: len(w.parent) > 0 && w.parent[len(w.parent)-1].everywhere <= t}
}

var t0 = time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)

// fastKeys makes keys with distinct tags and no cryptography: the model needs tags only.
func fastKeys(rng *rand.Rand) KeyMaker {
	return func(zone string, alg uint8, role Role, state State, now time.Time) (Key, error) {
		k := &dns.DNSKEY{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET},
			Flags: dns.ZONE, Protocol: 3, Algorithm: alg, PublicKey: base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, rng.Uint64()))}
		if role != RoleZSK {
			k.Flags |= dns.SEP
		}
		return Key{Role: role, State: state, Created: now, Since: now, DNSKEY: k}, nil
	}
}

// runModel drives one seeded world for steps ticks and returns the rollovers it completed.
func runModel(t *testing.T, seed uint64, scheme Scheme, steps int) (map[Role]int, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pol := KeyPolicy{Algorithm: dns.ECDSAP256SHA256, Scheme: scheme,
		KSKLifetime: time.Duration(40+rng.IntN(80)) * tick, ZSKLifetime: time.Duration(15+rng.IntN(40)) * tick,
		DNSKEYTTL: time.Duration(1+rng.IntN(5)) * tick, MaxZoneTTL: time.Duration(1+rng.IntN(8)) * tick,
		ParentDSTTL: time.Duration(1+rng.IntN(6)) * tick}
	w := &world{t: t, rng: rng, pol: pol, maxDelay: 1 + rng.IntN(6)}
	m := Machine{Policy: pol, Make: fastKeys(rng)}
	set := KeySet{Zone: "example.test."}
	done := map[Role]int{}
	var startedAt int
	for tk := range steps {
		if rng.IntN(200) == 0 {
			w.parentDown = tk + rng.IntN(30) // the parent provider fails writes for a while
		}
		var trigger Role
		if rng.IntN(60) == 0 {
			trigger = []Role{RoleCSK, RoleKSK, RoleZSK}[rng.IntN(3)]
		}
		st, err := m.Next(set, w.observe(tk, trigger))
		if err != nil {
			return done, err
		}
		if st.Changed && rng.IntN(10) == 0 {
			continue // the manager dies before it writes the step: nothing is published
		}
		if set.Rollover == nil && st.Keys.Rollover != nil {
			startedAt = tk
		}
		if set.Rollover != nil && st.Keys.Rollover == nil {
			done[set.Rollover.Role]++
		}
		set = st.Keys
		w.publish(set, st.DS, tk)
		if err := w.check(tk); err != nil {
			return done, err
		}
		if bound := 3*(2*w.maxDelay+30+ticks(pol.DNSKEYTTL+pol.MaxZoneTTL+pol.ParentDSTTL)) + 60; set.Rollover != nil && tk-startedAt > bound {
			return done, fmt.Errorf("L: the %s rollover started at %d is in %s at %d, past its bound %d", set.Rollover.Role, startedAt, set.Rollover.Phase, tk, bound)
		}
	}
	return done, nil
}

// TestModelCheck_Rollovers: V1, V2 and L over generated worlds, both schemes.
func TestModelCheck_Rollovers(t *testing.T) {
	seeds := 400
	if testing.Short() {
		seeds = 50
	}
	total := map[Scheme]map[Role]int{SchemeCSK: {}, SchemeKSKZSK: {}}
	for _, scheme := range []Scheme{SchemeCSK, SchemeKSKZSK} {
		for seed := range uint64(seeds) {
			done, err := runModel(t, seed, scheme, 600)
			if err != nil {
				t.Fatalf("%s seed %d: %v", scheme, seed, err)
			}
			for r, n := range done {
				total[scheme][r] += n
			}
		}
	}
	t.Logf("rollovers completed: %v", total)
	if total[SchemeCSK][RoleCSK] == 0 || total[SchemeKSKZSK][RoleKSK] == 0 || total[SchemeKSKZSK][RoleZSK] == 0 {
		t.Fatalf("some rollover never completed: %v", total)
	}
}
