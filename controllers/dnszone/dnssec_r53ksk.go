package dnszone

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// AnnotationKSKRollover is the marker a provider-held KSK rollover (Route 53) persists on its
// DNSZone: "<new KSK name> <phase> <since>", since being RFC 3339 or "-" while the phase's
// condition is not seen yet. The phase itself is derived from what the provider lists and what
// the parent's name servers answer; the marker only carries a decision those facts do not show
// yet and the start of a wait. A marker that is lost restarts the wait of the phase the facts
// show, never skips one.
const AnnotationKSKRollover = "dnsplane.io/ksk-rollover"

// kskNamePrefix names the key-signing keys dnsplane makes: dnsplane_ksk<n>, n counting up.
const kskNamePrefix = "dnsplane_ksk"

// providerDNSKEYTTL is the DNSKEY TTL a provider-held KSK rollover waits out after the new key
// signs the DNSKEY set (taken as one hour).
const providerDNSKEYTTL = time.Hour

// kskPhase is where a provider-held KSK rollover stands.
type kskPhase string

// The phases, in order.
const (
	kskIdle       kskPhase = ""
	kskCreate     kskPhase = "Create"     // the new KSK is made, INACTIVE
	kskActivate   kskPhase = "Activate"   // the new KSK is activated
	kskPropagate  kskPhase = "Propagate"  // both sign the DNSKEY set: the DNSKEY TTL passes
	kskPublishDS  kskPhase = "PublishDS"  // both DS at the parent: every server answers both, then the DS TTL
	kskWithdrawDS kskPhase = "WithdrawDS" // the new DS alone: every server answers it alone, then the DS TTL
	kskDeactivate kskPhase = "Deactivate" // the old KSK is deactivated
	kskDelete     kskPhase = "Delete"     // the old KSK is deleted
)

// rank orders the phases in which both keys are active.
func (p kskPhase) rank() int {
	return slices.Index([]kskPhase{kskPropagate, kskPublishDS, kskWithdrawDS, kskDeactivate}, p)
}

// kskOp is a provider call a step makes.
type kskOp string

const (
	opNone       kskOp = ""
	opCreate     kskOp = "CreateKSK"
	opActivate   kskOp = "ActivateKSK"
	opDeactivate kskOp = "DeactivateKSK"
	opDelete     kskOp = "DeleteKSK"
)

// kskMarker is AnnotationKSKRollover's content.
type kskMarker struct {
	New   string
	Phase kskPhase
	Since time.Time // zero: the phase's condition is not seen yet
}

// String is the annotation's value.
func (m kskMarker) String() string {
	since := "-"
	if !m.Since.IsZero() {
		since = m.Since.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s %s %s", m.New, m.Phase, since)
}

// parseKSKMarker reads the annotation; anything that does not parse is no marker.
func parseKSKMarker(v string) kskMarker {
	f := strings.Fields(v)
	if len(f) != 3 {
		return kskMarker{}
	}
	m := kskMarker{New: f[0], Phase: kskPhase(f[1])}
	if t, err := time.Parse(time.RFC3339, f[2]); err == nil {
		m.Since = t
	}
	return m
}

// kskFacts is what a step of the rollover is decided from.
type kskFacts struct {
	Now time.Time
	// KSKs are the zone's key-signing keys as the provider lists them.
	KSKs []provider.KSK
	// Parent is the DS set each parent name server answers (dsKeys form; nil: no answer), and
	// Linked whether the parent is a DNSZone whose servers are asked.
	Parent [][]string
	Linked bool
	// Trigger: a rollover is asked for (the annotation, or the KSK's lifetime is over).
	Trigger bool
	Marker  kskMarker
	// DNSKEYTTL and DSTTL are the waits.
	DNSKEYTTL, DSTTL time.Duration
}

// kskStep is a step of the rollover: the call to make now, the DS set the parent is to hold,
// the marker to persist, and what it waits for until when (zero Wake: the next look).
type kskStep struct {
	Phase  kskPhase
	Op     kskOp
	Name   string
	DS     []*dns.DS
	Marker kskMarker
	Wait   string
	Wake   time.Time
}

// nextKSK is the rollover's next step from the facts (pure). ok is false when no rollover is
// under way or asked for, or the keys are in no state a rollover of dnsplane's leaves them in.
func nextKSK(f kskFacts) (step kskStep, ok bool) {
	old, nw, ok := rolloverPair(f.KSKs)
	switch {
	case !ok:
		return kskStep{}, false
	case nw == nil:
		if !f.Trigger {
			return kskStep{}, false
		}
		name := nextKSKName(f.KSKs)
		return kskStep{Phase: kskCreate, Op: opCreate, Name: name, DS: dsOf(old), Marker: kskMarker{New: name, Phase: kskCreate, Since: f.Now},
			Wait: "the new key-signing key " + name}, true
	case nw.State == provider.KSKInactive:
		return kskStep{Phase: kskActivate, Op: opActivate, Name: nw.Name, DS: dsOf(old), Marker: keep(f, nw.Name, kskActivate, f.Now),
			Wait: "key-signing key " + nw.Name + " to be active"}, true
	case old.State == provider.KSKInactive:
		return kskStep{Phase: kskDelete, Op: opDelete, Name: old.Name, DS: dsOf(nw), Marker: keep(f, nw.Name, kskDelete, f.Now),
			Wait: "key-signing key " + old.Name + " to be deleted"}, true
	}
	return bothActive(f, old, nw), true
}

// keep is the marker of phase for the new key: the persisted one when it is that phase's, else
// a new one since since.
func keep(f kskFacts, name string, phase kskPhase, since time.Time) kskMarker {
	if f.Marker.New == name && f.Marker.Phase == phase {
		return f.Marker
	}
	return kskMarker{New: name, Phase: phase, Since: since}
}

// bothActive steps a rollover whose old and new keys both sign the DNSKEY set. The phase is the
// furthest of what the parent shows (a server answering the new DS: PublishDS or later; one
// answering it without the old: WithdrawDS) and what the marker records, but Deactivate only
// while every parent server answers the new DS alone.
func bothActive(f kskFacts, old, nw *provider.KSK) kskStep {
	oldDS, newDS, both := dsOf(old), dsOf(nw), append(dsOf(old), dsOf(nw)...)
	phase := kskPropagate
	if anyAnswer(f.Parent, func(s []string) bool { return slices.Contains(s, dsKey(nw.DS)) }) {
		phase = kskPublishDS
	}
	if anyAnswer(f.Parent, func(s []string) bool { return slices.Contains(s, dsKey(nw.DS)) && !slices.Contains(s, dsKey(old.DS)) }) {
		phase = kskWithdrawDS
	}
	if f.Marker.New == nw.Name && f.Marker.Phase.rank() > phase.rank() {
		phase = f.Marker.Phase
	}
	if phase == kskDeactivate && !everyAnswers(f, newDS) {
		phase = kskWithdrawDS
	}
	switch phase {
	case kskPropagate:
		m := keep(f, nw.Name, kskPropagate, f.Now)
		if end := m.Since.Add(f.DNSKEYTTL); f.Now.Before(end) {
			return kskStep{Phase: phase, DS: oldDS, Marker: m, Wait: "the DNSKEY TTL after both keys sign the DNSKEY set", Wake: end}
		}
		return kskStep{Phase: kskPublishDS, DS: both, Marker: kskMarker{New: nw.Name, Phase: kskPublishDS}, Wait: "every parent name server to answer both DS"}
	case kskPublishDS:
		return dsWait(f, nw.Name, kskPublishDS, both, kskStep{Phase: kskWithdrawDS, DS: newDS,
			Marker: kskMarker{New: nw.Name, Phase: kskWithdrawDS}, Wait: "every parent name server to answer the new DS alone"})
	case kskWithdrawDS:
		return dsWait(f, nw.Name, kskWithdrawDS, newDS, kskStep{Phase: kskDeactivate, Op: opDeactivate, Name: old.Name, DS: newDS,
			Marker: kskMarker{New: nw.Name, Phase: kskDeactivate, Since: f.Now}, Wait: "key-signing key " + old.Name + " to be inactive"})
	}
	return kskStep{Phase: kskDeactivate, Op: opDeactivate, Name: old.Name, DS: newDS, Marker: keep(f, nw.Name, kskDeactivate, f.Now),
		Wait: "key-signing key " + old.Name + " to be inactive"}
}

// dsWait is a phase that hands ds to the parent and waits until every parent name server
// answers exactly it, then the DS TTL; then it is next.
func dsWait(f kskFacts, name string, phase kskPhase, ds []*dns.DS, next kskStep) kskStep {
	m := keep(f, name, phase, time.Time{})
	if !everyAnswers(f, ds) {
		m.Since = time.Time{}
		return kskStep{Phase: phase, DS: ds, Marker: m, Wait: "every parent name server to answer DS " + strings.Join(dsKeyList(ds), ", ")}
	}
	if m.Since.IsZero() {
		m.Since = f.Now
	}
	if end := m.Since.Add(f.DSTTL); f.Now.Before(end) {
		return kskStep{Phase: phase, DS: ds, Marker: m, Wait: "the parent's DS TTL", Wake: end}
	}
	return next
}

// everyAnswers says whether every parent name server answers exactly ds (a linked parent with
// servers only).
func everyAnswers(f kskFacts, ds []*dns.DS) bool {
	if !f.Linked || len(f.Parent) == 0 {
		return false
	}
	want := dsKeyList(ds)
	for _, s := range f.Parent {
		if s == nil || !slices.Equal(sortedCopy(s), want) {
			return false
		}
	}
	return true
}

// anyAnswer says whether a parent name server's answer satisfies pred.
func anyAnswer(parent [][]string, pred func([]string) bool) bool {
	return slices.ContainsFunc(parent, func(s []string) bool { return s != nil && pred(s) })
}

// rolloverPair is the zone's old and new key-signing keys: one ACTIVE key alone (new nil), or
// two of which the newer is dnsplane's and at least one is ACTIVE and none in another state.
func rolloverPair(ksks []provider.KSK) (old, nw *provider.KSK, ok bool) {
	switch len(ksks) {
	case 1:
		k := ksks[0]
		return &k, nil, k.State == provider.KSKActive
	case 2:
	default:
		return nil, nil, false
	}
	ks := slices.Clone(ksks)
	slices.SortFunc(ks, func(a, b provider.KSK) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(kskOrdinal(a.Name), kskOrdinal(b.Name)), strings.Compare(a.Name, b.Name))
	})
	old, nw = &ks[0], &ks[1]
	states := []provider.KSKState{old.State, nw.State}
	valid := slices.Equal(states, []provider.KSKState{provider.KSKActive, provider.KSKInactive}) ||
		slices.Equal(states, []provider.KSKState{provider.KSKInactive, provider.KSKActive}) ||
		slices.Equal(states, []provider.KSKState{provider.KSKActive, provider.KSKActive})
	return old, nw, valid && kskOrdinal(nw.Name) > 0 && old.DS != nil && nw.DS != nil
}

// kskOrdinal is n of a name dnsplane_ksk<n>, else 0.
func kskOrdinal(name string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(name, kskNamePrefix))
	if err != nil || !strings.HasPrefix(name, kskNamePrefix) || n < 0 {
		return 0
	}
	return n
}

// nextKSKName is dnsplane_ksk<n+1>, n the largest ordinal of the zone's keys.
func nextKSKName(ksks []provider.KSK) string {
	n := 0
	for _, k := range ksks {
		n = max(n, kskOrdinal(k.Name))
	}
	return fmt.Sprintf("%s%d", kskNamePrefix, n+1)
}

// dsOf is the key's DS as a one-element set (none for a key without one).
func dsOf(k *provider.KSK) []*dns.DS {
	if k == nil || k.DS == nil {
		return nil
	}
	return []*dns.DS{k.DS}
}

// dsKey is a DS as dsKeys writes it.
func dsKey(d *dns.DS) string {
	if d == nil {
		return ""
	}
	return fmt.Sprintf("%d %d %d %s", d.KeyTag, d.Algorithm, d.DigestType, strings.ToUpper(d.Digest))
}

// dsKeyList is ds in dsKeys form, sorted.
func dsKeyList(ds []*dns.DS) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, dsKey(d))
	}
	slices.Sort(out)
	return out
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
