package dnssec

import (
	"fmt"
	"slices"
	"time"

	"github.com/miekg/dns"
)

// Scheme is how a zone's keys are split: one combined signing key, or a KSK and a ZSK.
type Scheme string

// The key schemes.
const (
	SchemeCSK    Scheme = "CSK"
	SchemeKSKZSK Scheme = "KSKZSK"
)

// KeyPolicy is what the rollover machine needs to know of a zone's DNSSEC settings.
type KeyPolicy struct {
	// Algorithm is the algorithm of a zone's first keys. A rollover makes the new key in the
	// algorithm of the key it replaces: a key of another algorithm would enter a DNSKEY RRset
	// that no key of its algorithm signs (RFC 4035 §2.2); an algorithm rollover is not done.
	Algorithm uint8
	Scheme    Scheme
	// KSKLifetime is the KSK's (or the CSK's) and ZSKLifetime the ZSK's; 0: rolled only by hand.
	KSKLifetime, ZSKLifetime time.Duration
	// DNSKEYTTL is the TTL of the zone's DNSKEY RRset, MaxZoneTTL the largest TTL of any other
	// RRset in the zone (how long a resolver may hold a signature), ParentDSTTL the TTL of the
	// DS RRset at the parent.
	DNSKEYTTL, MaxZoneTTL, ParentDSTTL time.Duration
}

// Phase is where a rollover stands.
type Phase string

// The rollover phases. Publish: the new key is introduced (a ZSK or CSK in the DNSKEY RRset,
// not signing; a KSK's or CSK's DS at the parent beside the old one). Activate: the new key
// signs, the old one is Retired (still in the DNSKEY RRset and, for a KSK or CSK, its DS at
// the parent). Withdraw: the old key leaves the DNSKEY RRset and the parent's DS RRset.
const (
	PhaseIdle     Phase = ""
	PhasePublish  Phase = "Publish"
	PhaseActivate Phase = "Activate"
	PhaseWithdraw Phase = "Withdraw"
)

// Rollover is a rollover in progress, persisted beside the keys so that a manager killed in
// the middle resumes from its phase.
type Rollover struct {
	// Role is the role of the key being replaced (ZSK, KSK or CSK).
	Role Role `json:"role"`
	// Phase and Since: the phase and when its key set was written.
	Phase Phase     `json:"phase"`
	Since time.Time `json:"since"`
	// ServedAt is when every server of the zone was first seen answering this phase's key set,
	// ParentAt when every parent server was first seen answering its DS RRset; zero until then.
	ServedAt time.Time `json:"servedAt,omitzero"`
	ParentAt time.Time `json:"parentAt,omitzero"`
	// Old and New are the tags of the key leaving and the key coming.
	Old uint16 `json:"old"`
	New uint16 `json:"new"`
}

// Observation is what the controller saw of the zone's servers and its parent's at Now.
type Observation struct {
	Now time.Time
	// Served: every server of the zone answers the current key set (its DNSKEY RRset and the
	// signatures of the current signing keys).
	Served bool
	// ParentDS: every parent server answers exactly the DS RRset Step.DS asks for.
	ParentDS bool
	// Trigger asks for a rollover of the key in this role now ("" none); it starts only when no
	// rollover is in progress.
	Trigger Role
}

// KeyMaker makes a new key (Generate, or a deterministic one in tests).
type KeyMaker func(zone string, alg uint8, role Role, state State, now time.Time) (Key, error)

// Step is the machine's answer: the key set to persist (with its rollover), the DS RRset the parent must hold, and
// when to look again.
type Step struct {
	Keys KeySet
	// Changed: the keys or the rollover changed: persist Keys before acting on it.
	Changed bool
	// DS is the DS RRset (SHA-256) the parent must hold now: one per KSK or CSK in the set.
	DS []dns.RR
	// Wait says what the machine waits for ("" when idle with nothing due), Wake when a wait by
	// time ends (zero when it waits for an observation or nothing).
	Wait string
	Wake time.Time
	// Event describes the phase change, when there is one.
	Event string
}

// Machine drives a zone's keys through their rollovers. It is pure: Next computes the next state
// from the persisted one and an observation, and the same inputs give the same step.
type Machine struct {
	Policy KeyPolicy
	Make   KeyMaker
}

// Next returns the step after observing o with the persisted key set s. A zone without keys gets its first ones
// (one CSK, or a KSK and a ZSK, all Active).
func (m Machine) Next(s KeySet, o Observation) (Step, error) {
	if len(s.Keys) == 0 {
		return m.initial(s.Zone, o.Now)
	}
	st := Step{Keys: KeySet{Zone: s.Zone, Keys: slices.Clone(s.Keys), Rollover: cloneRoll(s.Rollover)}}
	var err error
	if st.Keys.Rollover == nil {
		err = m.start(&st, o)
	} else {
		err = m.advance(&st, o)
	}
	st.DS = st.Keys.DS(uint32(m.Policy.ParentDSTTL/time.Second), Generated, Published, Active, Retired)
	return st, err
}

func (m Machine) initial(zone string, now time.Time) (Step, error) {
	roles := []Role{RoleCSK}
	if m.Policy.Scheme == SchemeKSKZSK {
		roles = []Role{RoleKSK, RoleZSK}
	}
	set := KeySet{Zone: zone}
	for _, r := range roles {
		k, err := m.Make(zone, m.Policy.Algorithm, r, Active, now)
		if err != nil {
			return Step{}, err
		}
		set.Keys = append(set.Keys, k)
	}
	st := Step{Keys: set, Changed: true, Event: "generated the zone's first keys"}
	st.DS = set.DS(uint32(m.Policy.ParentDSTTL/time.Second), Active)
	return st, nil
}

// start begins a rollover when one is asked for or a key's lifetime is over (the KSK or CSK
// first); else it says when the next one is due.
func (m Machine) start(st *Step, o Observation) error {
	role, due := m.due(st.Keys, o)
	if role == "" {
		st.Wake = due
		if !due.IsZero() {
			st.Wait = "the next rollover at " + due.UTC().Format(time.RFC3339)
		}
		return nil
	}
	old := activeKey(st.Keys, role)
	state := Published
	if role == RoleKSK {
		state = Generated // double-DS: the DS first, the DNSKEY when it is at every parent server
	}
	k, err := m.newKey(st.Keys, old.DNSKEY.Algorithm, role, state, o.Now)
	if err != nil {
		return err
	}
	st.Keys.Keys = append(st.Keys.Keys, k)
	st.Keys.Rollover = &Rollover{Role: role, Phase: PhasePublish, Since: o.Now, Old: old.Tag(), New: k.Tag()}
	st.Changed = true
	st.Event = fmt.Sprintf("%s rollover: publishing key %d to replace key %d", role, k.Tag(), old.Tag())
	st.Wait = m.waitText(st.Keys.Rollover)
	return nil
}

// newKey makes a key of algorithm alg whose tag no key of set has (the machine names keys by
// their tags).
func (m Machine) newKey(set KeySet, alg uint8, role Role, state State, now time.Time) (Key, error) {
	for range 16 {
		k, err := m.Make(set.Zone, alg, role, state, now)
		if err != nil {
			return Key{}, err
		}
		if !slices.ContainsFunc(set.Keys, func(o Key) bool { return o.Tag() == k.Tag() }) {
			return k, nil
		}
	}
	return Key{}, fmt.Errorf("dnssec: no %s with a free key tag in 16 tries", role)
}

// due returns the role whose rollover should start now, else the time the next one is due.
func (m Machine) due(set KeySet, o Observation) (Role, time.Time) {
	if o.Trigger != "" && activeKey(set, o.Trigger).DNSKEY != nil {
		return o.Trigger, time.Time{}
	}
	var next time.Time
	for _, role := range []Role{RoleCSK, RoleKSK, RoleZSK} {
		k := activeKey(set, role)
		life := m.Policy.KSKLifetime
		if role == RoleZSK {
			life = m.Policy.ZSKLifetime
		}
		if k.DNSKEY == nil || life <= 0 {
			continue
		}
		at := k.Since.Add(life)
		if !o.Now.Before(at) {
			return role, time.Time{}
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return "", next
}

// advance records what o saw for the current phase and moves to the next phase once its waits
// are over.
func (m Machine) advance(st *Step, o Observation) error {
	r := st.Keys.Rollover
	if o.Served && r.ServedAt.IsZero() {
		r.ServedAt, st.Changed = o.Now, true
	}
	if o.ParentDS && r.ParentAt.IsZero() {
		r.ParentAt, st.Changed = o.Now, true
	}
	ready, wake := m.phaseOver(r, o.Now)
	if !ready {
		st.Wait, st.Wake = m.waitText(r), wake
		return nil
	}
	return m.nextPhase(st, o.Now)
}

// phaseOver says whether the current phase's waits are over at now; else when they will be,
// once their observations are in (zero while an observation is missing).
func (m Machine) phaseOver(r *Rollover, now time.Time) (bool, time.Time) {
	var after []time.Time
	need := func(seen time.Time, wait time.Duration) {
		if seen.IsZero() {
			after = append(after, time.Time{})
			return
		}
		after = append(after, seen.Add(wait))
	}
	p := m.Policy
	switch {
	case r.Phase == PhasePublish && r.Role == RoleZSK:
		need(r.ServedAt, p.DNSKEYTTL)
	case r.Phase == PhasePublish: // KSK or CSK: the new DS everywhere, and a CSK's DNSKEY
		need(r.ParentAt, p.ParentDSTTL)
		if r.Role == RoleCSK {
			need(r.ServedAt, p.DNSKEYTTL)
		}
	case r.Phase == PhaseActivate:
		wait := p.DNSKEYTTL
		if r.Role != RoleKSK {
			wait = max(wait, p.MaxZoneTTL)
		}
		need(r.ServedAt, wait)
	case r.Phase == PhaseWithdraw:
		need(r.ServedAt, 0)
		if r.Role != RoleZSK {
			need(r.ParentAt, 0)
		}
	}
	var wake time.Time
	for _, t := range after {
		if t.IsZero() {
			return false, time.Time{}
		}
		wake = later(wake, t)
	}
	return !now.Before(wake), wake
}

// nextPhase moves the rollover to its next phase (or ends it) at now.
func (m Machine) nextPhase(st *Step, now time.Time) error {
	r := st.Keys.Rollover
	keys := st.Keys.Keys
	switch r.Phase {
	case PhasePublish:
		setState(keys, r.Old, Retired, now)
		setState(keys, r.New, Active, now)
		r.Phase = PhaseActivate
	case PhaseActivate:
		st.Keys.Keys = slices.DeleteFunc(keys, func(k Key) bool { return k.Tag() == r.Old })
		r.Phase = PhaseWithdraw
	case PhaseWithdraw:
		st.Keys.Rollover = nil
		st.Changed = true
		st.Event = fmt.Sprintf("%s rollover done: key %d replaced key %d", r.Role, r.New, r.Old)
		return nil
	}
	r.Since, r.ServedAt, r.ParentAt = now, time.Time{}, time.Time{}
	st.Changed = true
	st.Event = fmt.Sprintf("%s rollover: %s (key %d replacing key %d)", r.Role, r.Phase, r.New, r.Old)
	st.Wait = m.waitText(r)
	return nil
}

// waitText says what the current phase waits for.
func (m Machine) waitText(r *Rollover) string {
	p := m.Policy
	switch {
	case r.Phase == PhasePublish && r.Role == RoleZSK:
		return fmt.Sprintf("every server to answer the new DNSKEY RRset, then its TTL (%s)", p.DNSKEYTTL)
	case r.Phase == PhasePublish:
		return fmt.Sprintf("every parent server to answer the new DS, then its TTL (%s)", p.ParentDSTTL)
	case r.Phase == PhaseActivate:
		return "every server to answer the new signatures, then the cached ones to expire"
	default:
		return "every server, and every parent server, to drop the old key"
	}
}

// activeKey is the Active key of role in set (a zero Key when none).
func activeKey(set KeySet, role Role) Key {
	for _, k := range set.Keys {
		if k.Role == role && k.State == Active {
			return k
		}
	}
	return Key{}
}

func setState(keys []Key, tag uint16, s State, now time.Time) {
	for i := range keys {
		if keys[i].Tag() == tag {
			keys[i].State, keys[i].Since = s, now
		}
	}
}

func cloneRoll(r *Rollover) *Rollover {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
