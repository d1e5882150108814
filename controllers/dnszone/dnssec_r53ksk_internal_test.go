package dnszone

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// kskWorld is a model of a Route 53 zone under a parent of three name servers: the provider's
// key-signing keys, what each parent server answers, the DS set the controller hands the
// parent, the marker, and the history of both as resolvers may hold them.
type kskWorld struct {
	rng     *rand.Rand
	now     time.Time
	keys    []provider.KSK
	seq     int
	parent  [3][]string // what each parent server answers
	desired []string    // the DS set the parent link holds (status.dnssec.ds)
	marker  kskMarker
	history []kskSnap
	calls   int
}

// kskSnap is what the world served from t on: each parent server's DS set and the active keys.
type kskSnap struct {
	t      time.Time
	parent [3][]string
	active []string // DS keys of the active KSKs (the DNSKEY set's signers)
}

const (
	modelDNSKEYTTL = 5 * time.Minute
	modelDSTTL     = 10 * time.Minute
)

func newKSKWorld(seed uint64) *kskWorld {
	w := &kskWorld{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	k := w.makeKey("dnsplane_ksk1", provider.KSKActive)
	w.keys = []provider.KSK{k}
	w.desired = []string{dsKey(k.DS)}
	for i := range w.parent {
		w.parent[i] = slices.Clone(w.desired)
	}
	w.snap()
	return w
}

func (w *kskWorld) makeKey(name string, st provider.KSKState) provider.KSK {
	w.seq++
	ds := &dns.DS{Hdr: dns.RR_Header{Name: "c.example.", Rrtype: dns.TypeDS, Class: dns.ClassINET}, KeyTag: uint16(1000 + w.seq),
		Algorithm: dns.ECDSAP256SHA256, DigestType: dns.SHA256, Digest: fmt.Sprintf("%064X", w.seq)}
	return provider.KSK{Name: name, State: st, DS: ds, Created: w.now}
}

func (w *kskWorld) active() []string {
	var out []string
	for _, k := range w.keys {
		if k.State == provider.KSKActive {
			out = append(out, dsKey(k.DS))
		}
	}
	return out
}

func (w *kskWorld) snap() {
	var s kskSnap
	s.t = w.now
	for i := range w.parent {
		s.parent[i] = slices.Clone(w.parent[i])
	}
	s.active = w.active()
	w.history = append(w.history, s)
}

// call is the provider's answer to a step's call, with Route 53's refusals
// (KeySigningKeyInUse, KeySigningKeyInParentDSRecord, InvalidKeySigningKeyStatus) and random
// failures.
func (w *kskWorld) call(step kskStep) error {
	if step.Op == opNone {
		return nil
	}
	w.calls++
	if w.rng.IntN(4) == 0 {
		return fmt.Errorf("%w: random refusal", provider.ErrSigningRefused)
	}
	i := slices.IndexFunc(w.keys, func(k provider.KSK) bool { return k.Name == step.Name })
	switch step.Op {
	case opCreate:
		if i < 0 {
			w.keys = append(w.keys, w.makeKey(step.Name, provider.KSKInactive))
		}
	case opActivate:
		w.keys[i].State = provider.KSKActive
	case opDeactivate:
		if len(w.active()) == 1 && w.keys[i].State == provider.KSKActive {
			return fmt.Errorf("%w: KeySigningKeyInUse", provider.ErrSigningRefused)
		}
		for _, s := range w.parent {
			if slices.Contains(s, dsKey(w.keys[i].DS)) {
				return fmt.Errorf("%w: KeySigningKeyInParentDSRecord", provider.ErrSigningRefused)
			}
		}
		w.keys[i].State = provider.KSKInactive
	case opDelete:
		if w.keys[i].State != provider.KSKInactive {
			return fmt.Errorf("%w: InvalidKeySigningKeyStatus", provider.ErrSigningRefused)
		}
		w.keys = slices.Delete(w.keys, i, i+1)
	}
	return nil
}

// look is one reconcile: the controller's step from the facts, its call, then the marker and
// the DS set written (each write may fail, leaving what was there).
func (w *kskWorld) look(trigger bool) (kskStep, bool) {
	f := kskFacts{Now: w.now, KSKs: slices.Clone(w.keys), Linked: true, Trigger: trigger, Marker: w.marker,
		DNSKEYTTL: modelDNSKEYTTL, DSTTL: modelDSTTL}
	for _, s := range w.parent {
		if w.rng.IntN(10) == 0 {
			f.Parent = append(f.Parent, nil) // no answer
			continue
		}
		f.Parent = append(f.Parent, slices.Clone(s))
	}
	step, ok := nextKSK(f)
	if !ok {
		w.marker = kskMarker{}
		w.desired = w.active()
		return step, false
	}
	if err := w.call(step); err != nil {
		return step, true
	}
	if w.rng.IntN(6) == 0 {
		return step, true // the marker write fails: nothing moves
	}
	w.marker = step.Marker
	w.desired = dsKeyList(step.DS)
	return step, true
}

// tick moves time on and lets each parent server take the desired DS set, or not.
func (w *kskWorld) tick() {
	w.now = w.now.Add(time.Duration(w.rng.IntN(180)) * time.Second)
	for i := range w.parent {
		if w.rng.IntN(3) == 0 {
			w.parent[i] = slices.Clone(w.desired)
		}
	}
	if w.rng.IntN(20) == 0 {
		w.marker = kskMarker{} // a manager restarted without the marker
	}
	w.snap()
}

// held are the snapshots whose sets a resolver may still hold now for ttl: those served within
// ttl, and the one in force ttl ago.
func (w *kskWorld) held(ttl time.Duration) []kskSnap {
	from := 0
	for i, s := range w.history {
		if !s.t.After(w.now.Add(-ttl)) {
			from = i
		}
	}
	return w.history[from:]
}

// check is the invariant: every DS set a resolver may hold (any parent server's within the DS
// TTL) has a DS of a key that is active in every DNSKEY set it may hold (within the DNSKEY
// TTL), so that the DNSKEY set validates.
func (w *kskWorld) check() error {
	for _, d := range w.held(modelDSTTL) {
		for _, k := range w.held(modelDNSKEYTTL) {
			for i, ds := range d.parent {
				if !slices.ContainsFunc(ds, func(x string) bool { return slices.Contains(k.active, x) }) {
					return fmt.Errorf("at %s: parent server %d's DS %v (from %s) matches no key of the DNSKEY set %v (from %s)",
						w.now.Format(time.TimeOnly), i, ds, d.t.Format(time.TimeOnly), k.active, k.t.Format(time.TimeOnly))
				}
			}
		}
	}
	return nil
}

// TestNextKSK_ModelCheck runs 500 seeded worlds: a rollover asked for, with random provider
// refusals, failed marker writes, parent servers that take the DS set late or answer nothing,
// and markers lost to restarts. At every step no DS set a resolver may hold fails to match an
// active key of a DNSKEY set it may hold, and every rollover ends with the new key alone.
func TestNextKSK_ModelCheck(t *testing.T) {
	for seed := range uint64(500) {
		w := newKSKWorld(seed)
		trigger, phases := true, map[kskPhase]bool{}
		for n := 0; ; n++ {
			if n > 5000 {
				t.Fatalf("seed %d: the rollover does not end: keys %v, marker %v", seed, w.keys, w.marker)
			}
			step, ok := w.look(trigger)
			if ok {
				phases[step.Phase] = true
				trigger = trigger && len(w.keys) == 1 // the annotation goes once the new key exists
			}
			w.tick()
			if err := w.check(); err != nil {
				t.Fatalf("seed %d, look %d (phase %s): %v", seed, n, step.Phase, err)
			}
			if !trigger && !ok && len(w.keys) == 1 && w.keys[0].Name != "dnsplane_ksk1" {
				break
			}
		}
		for _, p := range []kskPhase{kskCreate, kskActivate, kskPropagate, kskPublishDS, kskWithdrawDS, kskDeactivate, kskDelete} {
			if !phases[p] {
				t.Fatalf("seed %d: phase %s never seen: %v", seed, p, phases)
			}
		}
	}
}

// TestNextKSK_WaitsAndRefusals: the waits are the TTLs after what every parent server answers,
// a marker that is lost restarts a wait and never skips one, and a state no rollover leaves is
// not handled.
func TestNextKSK_WaitsAndRefusals(t *testing.T) {
	w := newKSKWorld(1)
	w.keys = append(w.keys, w.makeKey("dnsplane_ksk2", provider.KSKActive))
	w.keys[1].Created = w.keys[0].Created.Add(time.Minute)
	old, nw := dsKey(w.keys[0].DS), dsKey(w.keys[1].DS)
	f := kskFacts{Now: w.now, KSKs: w.keys, Linked: true, DNSKEYTTL: modelDNSKEYTTL, DSTTL: modelDSTTL,
		Parent: [][]string{{old}, {old}}}
	step, _ := nextKSK(f)
	if step.Phase != kskPropagate || !step.Wake.Equal(w.now.Add(modelDNSKEYTTL)) || len(step.DS) != 1 {
		t.Fatalf("both active, parent old: %+v, want Propagate until the DNSKEY TTL with the old DS", step)
	}
	f.Marker, f.Now = step.Marker, step.Wake
	if step, _ = nextKSK(f); step.Phase != kskPublishDS || len(step.DS) != 2 {
		t.Fatalf("after the DNSKEY TTL: %+v, want PublishDS with both DS", step)
	}
	f.Marker, f.Parent = step.Marker, [][]string{{old, nw}, {old}}
	if step, _ = nextKSK(f); step.Phase != kskPublishDS || !step.Wake.IsZero() {
		t.Fatalf("one parent server without the new DS: %+v, want PublishDS waiting for it", step)
	}
	f.Marker, f.Parent = step.Marker, [][]string{{old, nw}, {nw, old}}
	if step, _ = nextKSK(f); step.Phase != kskPublishDS || !step.Wake.Equal(f.Now.Add(modelDSTTL)) {
		t.Fatalf("every parent server answers both: %+v, want the DS TTL", step)
	}
	f.Marker = kskMarker{} // restarted: the wait starts again
	f.Now = f.Now.Add(time.Minute)
	if step, _ = nextKSK(f); step.Phase != kskPublishDS || !step.Wake.Equal(f.Now.Add(modelDSTTL)) {
		t.Fatalf("marker lost: %+v, want PublishDS and its wait from now", step)
	}
	f.Marker, f.Now = step.Marker, step.Wake
	if step, _ = nextKSK(f); step.Phase != kskWithdrawDS || dsKey(step.DS[0]) != nw || len(step.DS) != 1 {
		t.Fatalf("after the DS TTL: %+v, want WithdrawDS with the new DS", step)
	}
	f.Marker, f.Parent = step.Marker, [][]string{{nw}, {nw}}
	step, _ = nextKSK(f)
	f.Marker, f.Now = step.Marker, step.Wake
	if step, _ = nextKSK(f); step.Phase != kskDeactivate || step.Op != opDeactivate || step.Name != "dnsplane_ksk1" {
		t.Fatalf("the new DS alone for the DS TTL: %+v, want DeactivateKSK dnsplane_ksk1", step)
	}
	f.Marker, f.Parent = step.Marker, [][]string{{nw}, {old, nw}} // the old DS is back at a server
	if step, _ = nextKSK(f); step.Phase != kskWithdrawDS || step.Op != opNone {
		t.Fatalf("the old DS back at the parent: %+v, want WithdrawDS, no call", step)
	}
	f.KSKs = []provider.KSK{w.keys[0], {Name: "hand_made", State: provider.KSKActive, DS: w.keys[1].DS, Created: w.now.Add(time.Hour)}}
	if _, ok := nextKSK(f); ok {
		t.Fatal("a newer key-signing key dnsplane did not make is handled")
	}
	if m := parseKSKMarker(kskMarker{New: "dnsplane_ksk2", Phase: kskPublishDS}.String()); m.New != "dnsplane_ksk2" || !m.Since.IsZero() {
		t.Fatalf("marker round trip: %+v", m)
	}
	if !strings.HasPrefix(nextKSKName(w.keys), kskNamePrefix+"3") {
		t.Fatalf("next name %s", nextKSKName(w.keys))
	}
}
