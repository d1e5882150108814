package health

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"k8s.io/utils/clock"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// DefaultMaxSkew is the clock skew between two members that Judge tolerates by default when it
// judges a record seen for the first time (the wall-clock rule, Freshness).
const DefaultMaxSkew = 30 * time.Second

// Flap damping defaults (Judge.FlapWindow, Judge.FlapDwell).
const (
	DefaultFlapWindow = 10 * time.Minute
	DefaultFlapDwell  = 2 * time.Minute
)

// Reasons of a target's decision; equal to the API's TargetReason* values (apis/v1alpha1).
const (
	ReasonHealthy           = "Healthy"
	ReasonNotProbed         = "NotProbed"
	ReasonQuorumDown        = "QuorumDown"
	ReasonHeldWhileIsolated = "HeldWhileIsolated"
	ReasonOwnProbesOnly     = "OwnProbesOnly"
	ReasonFlapDamped        = "FlapDamped"
)

// AfterHold is what an isolated member does once it has been isolated for Input.Hold: the
// API's spec.healthCheck.afterIsolationHold.
type AfterHold string

const (
	// AfterHoldHold keeps every last agreed decision for as long as the isolation lasts (the
	// default; the empty value means it too).
	AfterHoldHold AfterHold = "Hold"
	// AfterHoldOwnProbes decides by this member's own probes alone (ReasonOwnProbesOnly).
	AfterHoldOwnProbes AfterHold = "OwnProbes"
)

// Member is what this member read from one other member of the fleet for one host.
type Member struct {
	// GeoTag names the member (a cluster's geo tag, or a witness's).
	GeoTag string
	// Witness: a member with no targets of its own; it counts in the membership and votes like
	// any other member. Candidates listed under a witness's geo tag are ignored.
	Witness bool
	// Record is the last verdict record decoded from the member for the host, possibly read
	// by an earlier query (Memory.Seen decides whether it is still fresh); nil when none.
	Record *Record
	// Err is the latest query's error, nil when it succeeded; it is reported in
	// Result.MemberErrs when the member is not heard.
	Err error
}

// Input is one host's decision input.
type Input struct {
	// Self is this member's geo tag.
	Self string
	// Strategy, PrimaryGeoTag, Weights, GeoRegions and DefaultGeoTag are spec.strategy (see
	// gslb.Strategy.Compute); the strategy runs once per address family.
	Strategy      string
	PrimaryGeoTag string
	Weights       map[string]int32
	GeoRegions    map[string]string
	DefaultGeoTag string
	// Candidates are the host's targets by geo tag: this member's with readiness applied (a
	// target without ready endpoints is not here) and every other member's localtargets as
	// read now, or as last read when it is silent. The geo tags listing a target own it.
	Candidates map[string][]netip.Addr
	// Own is this member's probe verdict per target; a target missing is Unknown.
	Own map[netip.Addr]Verdict
	// Members is the membership but Self: every configured or last discovered cluster and
	// every witness, one per geo tag (an entry for Self, and any but the first for a geo tag,
	// are ignored). n, the membership's size, is len(Members)+1.
	Members []Member
	// ValidityCap is this reader's own record validity (Validity of its own settings); <= 0
	// means MaxValidFor. A record counts for min(Record.ValidFor, max(ValidityCap,
	// min(Record.ValidFor, MaxValidFor))): its claim, never more than MaxValidFor; a claim
	// longer than ValidityCap is reported (Result.LongValidity). Clock offsets behind are
	// judged against min(Record.ValidFor, ValidityCap).
	ValidityCap time.Duration
	// Hold is healthCheck.isolationHoldSeconds; AfterHold says what happens after it.
	Hold      time.Duration
	AfterHold AfterHold
	// Memory is the previous call's Result.Memory (restored from status after a restart).
	Memory Memory
}

// PeerVerdict is one heard member's verdict on a target.
type PeerVerdict struct {
	GeoTag  string
	Verdict Verdict
	// Owner: the member owns the target; its verdict is shown, never counted.
	Owner bool
}

// TargetDecision is the decision on one target.
type TargetDecision struct {
	// Target is the address; its family is Target.Is4() / Is6().
	Target netip.Addr
	// GeoTag is the member whose candidate it is (Self first, then by geo tag, when several
	// list it).
	GeoTag string
	// Own is this member's probe verdict.
	Own Verdict
	// Peers are the heard members' verdicts on it (Up or Down), by geo tag, owners included
	// and marked.
	Peers []PeerVerdict
	// Voters counts the heard members (Self included) that do not own the target and have a
	// verdict on it; Downs those of them that call it Down; Needed is the Downs that make it
	// Down: more than half of the membership (Known/2+1). Counted even while isolated.
	Voters, Downs, Needed int
	// Decision is Up or Down.
	Decision Verdict
	// Reason is one of the Reason constants.
	Reason string
	// Served: the target is in its family's answer.
	Served bool
}

// Result is one host's decision.
type Result struct {
	// AnswerA is Strategy.Compute over the IPv4 candidates decided Up, or over every IPv4
	// candidate when none is (NoHealthyTargetsA); AnswerAAAA the same for IPv6. A family with a
	// candidate never has an empty answer.
	AnswerA, AnswerAAAA gslb.Answer
	// NoHealthyTargetsA, NoHealthyTargetsAAAA: the family has candidates and none is Up, so all
	// of them are served.
	NoHealthyTargetsA, NoHealthyTargetsAAAA bool
	// ServedA and ServedAAAA are the targets served per family (every weighted or geo set's
	// together), sorted.
	ServedA, ServedAAAA []string
	// Targets are the decisions, sorted by address.
	Targets []TargetDecision
	// Known is n, the membership's size (Self and every member); Heard counts Self and every
	// member whose record is fresh.
	Known, Heard int
	// Isolated: Heard is at most half of Known.
	Isolated bool
	// OwnProbesOnly: isolated for at least Hold with AfterHold OwnProbes; own probes decide.
	OwnProbesOnly bool
	// MemberErrs holds, by geo tag, why a member is not heard (no record read, stale, from the
	// future), wrapping its last query's error.
	MemberErrs map[string]error
	// ClockOffsets holds, by geo tag, each member whose record time is off this member's clock
	// by more than Judge.MaxSkew (ahead), or by more than Judge.MaxSkew plus a third of
	// min(the record's validity, Input.ValidityCap) (behind: a record's time is its oldest
	// probe's; a writer's claim never widens it): the record's time minus this member's clock
	// when it was first seen. A member whose time advances still counts.
	ClockOffsets map[string]time.Duration
	// LongValidity holds, by geo tag, each member whose record claims a validity longer than
	// this reader's own (Input.ValidityCap): the validity granted to it (its claim, at most
	// MaxValidFor). Such a member republishes less often than this one (a longer
	// --gslb-interval or intervalSeconds), so its records count for their claim; the fleet's
	// settings differ and the controller warns, naming the member.
	LongValidity map[string]time.Duration
	// Memory goes to the next call's Input.Memory.
	Memory Memory
}

// Answer returns the answer the controller publishes for the host: AnswerA and AnswerAAAA
// merged (plain targets concatenated, IPv4 first; weighted and geo sets joined by geo tag).
func (r Result) Answer() gslb.Answer {
	return mergeAnswers(r.AnswerA, r.AnswerAAAA)
}

// NoHealthyTargets reports whether a family has candidates and none is Up.
func (r Result) NoHealthyTargets() bool {
	return r.NoHealthyTargetsA || r.NoHealthyTargetsAAAA
}

// Judge takes the quorum decisions. The zero value is not usable: Clock is required.
type Judge struct {
	// Clock gives now (k8s.io/utils/clock; a fake one in tests).
	Clock clock.PassiveClock
	// MaxSkew is the clock skew tolerated when a record is seen for the first time, and the
	// offset beyond which a member's clock is reported; <= 0 means DefaultMaxSkew.
	MaxSkew time.Duration
	// FlapWindow and FlapDwell damp flapping: a target whose decision went from Up to Down
	// twice within FlapWindow comes back Up only once the quorum has said Up for FlapDwell.
	// 0 means the defaults; a negative FlapDwell turns damping off.
	FlapWindow, FlapDwell time.Duration
}

// Decide returns the decision on every candidate of one host (docs/design.md, "Health and
// partitions"):
//
//   - a member is heard when its record is fresh (Freshness); Self is always heard;
//   - isolated (Heard <= Known/2): every target keeps its last agreed decision
//     (HeldWhileIsolated; a target never agreed is Up, NotProbed); after Hold, with AfterHold
//     OwnProbes, own probes decide alone (OwnProbesOnly);
//   - not isolated: a target is Down (QuorumDown) iff more than Known/2 heard members that do
//     not own it call it Down; Up otherwise (Healthy, or NotProbed without any verdict), with
//     flap damping (FlapDamped); the decisions become Memory.Agreed;
//   - per family, the answer is the strategy over the family's Up targets, or over all of the
//     family's candidates when none is Up (never empty).
//
// The error is gslb.Strategy.Compute's (an invalid strategy).
func (j Judge) Decide(in Input) (Result, error) {
	now := j.Clock.Now()
	res := Result{Known: 1, Heard: 1, MemberErrs: map[string]error{}, ClockOffsets: map[string]time.Duration{},
		LongValidity: map[string]time.Duration{}}
	mem := Memory{Agreed: maps.Clone(in.Memory.Agreed), IsolatedSince: notAfter(in.Memory.IsolatedSince, now), Flaps: map[netip.Addr]Flap{},
		MajorityUp: maps.Clone(in.Memory.MajorityUp)}
	heard, seen := j.hear(in, now, &res)
	mem.Seen = seen
	res.Isolated = 2*res.Heard <= res.Known
	if res.Isolated {
		if mem.IsolatedSince.IsZero() {
			mem.IsolatedSince = now
		}
		res.OwnProbesOnly = in.AfterHold == AfterHoldOwnProbes && now.Sub(mem.IsolatedSince) >= in.Hold
		// What a majority voted while this member heard none is unknown: after the heal, only
		// a majority Up heard again makes the next Down an onset.
		mem.MajorityUp = map[netip.Addr]bool{}
	} else {
		mem.Agreed, mem.IsolatedSince, mem.MajorityUp = map[netip.Addr]Verdict{}, time.Time{}, map[netip.Addr]bool{}
	}
	if mem.MajorityUp == nil {
		mem.MajorityUp = map[netip.Addr]bool{}
	}
	owners := ownersOf(in)
	addrs := make([]netip.Addr, 0, len(owners))
	for a := range owners {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	for _, a := range addrs {
		d := j.decideTarget(in, &res, heard, a, owners[a], now, &mem)
		res.Targets = append(res.Targets, d)
	}
	j.keepFlaps(in, now, &mem)
	res.Memory = mem
	if err := answer(in, &res); err != nil {
		return Result{}, err
	}
	return res, nil
}

// heardMember is a member whose record is fresh.
type heardMember struct {
	GeoTag string
	Record *Record
}

// hear counts the membership and the heard members into res, judges every member's record
// (Freshness), reports why a member is not heard and any clock offset, and returns the heard
// members sorted by geo tag with the freshness memory for the next call.
func (j Judge) hear(in Input, now time.Time, res *Result) ([]heardMember, map[string]Sighting) {
	skew := j.MaxSkew
	if skew <= 0 {
		skew = DefaultMaxSkew
	}
	var heard []heardMember
	seen := map[string]Sighting{}
	dup := map[string]bool{in.Self: true}
	for _, m := range in.Members {
		if dup[m.GeoTag] {
			continue // this member, or a geo tag given twice
		}
		dup[m.GeoTag] = true
		res.Known++
		var err error
		if m.Record == nil {
			err = errors.New("no verdict record read")
			if s, ok := in.Memory.Seen[m.GeoTag]; ok {
				seen[m.GeoTag] = s
			}
		} else {
			prev, had := in.Memory.Seen[m.GeoTag]
			f := Freshness(*m.Record, prev, had, now, skew, readerCap(m.Record.ValidFor, in.ValidityCap))
			if own := ownValidity(MaxValidFor, in.ValidityCap); m.Record.ValidFor > own {
				res.LongValidity[m.GeoTag] = min(m.Record.ValidFor, MaxValidFor)
			}
			seen[m.GeoTag], err = f.Sighting, f.Err
			// A record's time is its oldest probe's: up to one probe interval (a third of its
			// validity, as this reader caps it) behind its writer's clock without any skew.
			if f.Offset > skew || f.Offset < -(skew+ownValidity(m.Record.ValidFor, in.ValidityCap)/3) {
				res.ClockOffsets[m.GeoTag] = f.Offset
			}
		}
		if err != nil {
			if m.Err != nil {
				err = fmt.Errorf("%w (last query: %w)", err, m.Err)
			}
			res.MemberErrs[m.GeoTag] = err
			continue
		}
		res.Heard++
		heard = append(heard, heardMember{GeoTag: m.GeoTag, Record: m.Record})
	}
	slices.SortFunc(heard, func(a, b heardMember) int { return cmp.Compare(a.GeoTag, b.GeoTag) })
	return heard, seen
}

// readerCap is the validity cap this reader applies to a record claiming validFor: the
// longer of its own cap (validityCap, <= 0 meaning MaxValidFor) and the claim bounded by
// MaxValidFor. A member whose longer --gslb-interval or intervalSeconds makes it republish
// less often than this reader's own validity stays heard; no claim counts past MaxValidFor.
func readerCap(validFor, validityCap time.Duration) time.Duration {
	return max(ownValidity(MaxValidFor, validityCap), min(validFor, MaxValidFor))
}

// ownValidity is the validity this reader's own cap grants a record claiming validFor:
// min(validFor, validityCap), validityCap <= 0 meaning MaxValidFor.
func ownValidity(validFor, validityCap time.Duration) time.Duration {
	if validityCap <= 0 {
		validityCap = MaxValidFor
	}
	return min(validFor, validityCap)
}

// decideTarget gathers target a's votes (Self's own verdict and every heard member's, the
// owners' shown but not counted) and decides it: by quorum with damping when not isolated,
// else by the hold or, after it, by own probes. mem receives the agreed decision and the
// damping state.
func (j Judge) decideTarget(in Input, res *Result, heard []heardMember, a netip.Addr, geo string, now time.Time, mem *Memory) TargetDecision {
	d := TargetDecision{Target: a, GeoTag: geo, Own: in.Own[a], Needed: res.Known/2 + 1}
	owned := ownedBy(in.Candidates, witnesses(in), a)
	count := func(g string, v Verdict) {
		if v == Unknown || owned[g] {
			return
		}
		d.Voters++
		if v == Down {
			d.Downs++
		}
	}
	count(in.Self, d.Own)
	for _, m := range heard {
		if v := m.Record.Verdict(a); v != Unknown {
			d.Peers = append(d.Peers, PeerVerdict{GeoTag: m.GeoTag, Verdict: v, Owner: owned[m.GeoTag]})
			count(m.GeoTag, v)
		}
	}
	agreed := in.Memory.Agreed[a]
	switch {
	case !res.Isolated:
		d.Decision, d.Reason = quorum(d.Voters, d.Downs, res.Known)
		// A Down is a flap's onset only after an Up that a majority voted for, and never in
		// the first decision after an isolation, which resyncs with the fleet (the held
		// decision was no agreement of now).
		onset := in.Memory.IsolatedSince.IsZero() && in.Memory.MajorityUp[a]
		d.Decision, d.Reason = j.damp(a, agreed, d.Decision, d.Reason, now, in.Memory.Flaps[a], onset, mem)
		mem.Agreed[a] = d.Decision
		if d.Decision == Up && (in.Memory.MajorityUp[a] || 2*(d.Voters-d.Downs) > res.Known) {
			mem.MajorityUp[a] = true
		}
	case res.OwnProbesOnly:
		d.Decision, d.Reason = ownOnly(d.Own)
	case agreed != Unknown:
		d.Decision, d.Reason = j.held(agreed, in.Memory.Flaps[a], now)
	default:
		d.Decision, d.Reason = Up, ReasonNotProbed
	}
	return d
}

// held is the decision an isolated member holds: its last agreed one, except a Down that only
// damping made (the quorum had said Up since UpSince), which is held as Up once the dwell is
// over, as it would have been with the fleet heard.
func (j Judge) held(agreed Verdict, f Flap, now time.Time) (Verdict, string) {
	_, dwell := j.flapTimes()
	if agreed == Down && !f.UpSince.IsZero() {
		if now.Sub(notAfter(f.UpSince, now)) < dwell {
			return Down, ReasonFlapDamped
		}
		return Up, ReasonHeldWhileIsolated
	}
	return agreed, ReasonHeldWhileIsolated
}

// keepFlaps carries into mem the damping state that no decision of this call replaced (every
// target while isolated, and targets that are not candidates now), pruned by time alone: a
// state is kept while its last Down is within FlapWindow + FlapDwell or its dwell is running.
// A target kept that way also keeps its agreed decision, so that a target leaving the
// candidates for a while (its owner's readiness, a member left out of the membership) comes
// back as damped as it left.
func (j Judge) keepFlaps(in Input, now time.Time, mem *Memory) {
	window, dwell := j.flapTimes()
	for a, f := range in.Memory.Flaps {
		if _, decided := mem.Flaps[a]; decided || !f.recent(now, window, dwell) {
			continue
		}
		if _, candidate := mem.Agreed[a]; candidate && !isolatedMem(mem) {
			continue // decided now and no longer damped: the state is over
		}
		mem.Flaps[a] = f
		if v, ok := in.Memory.Agreed[a]; ok && !isolatedMem(mem) {
			mem.Agreed[a] = v
			if in.Memory.MajorityUp[a] {
				mem.MajorityUp[a] = true
			}
		}
	}
}

// isolatedMem: mem is the memory of an isolated decision.
func isolatedMem(mem *Memory) bool { return !mem.IsolatedSince.IsZero() }

// recent: f's last Down is within window+dwell of now, or its dwell is running.
func (f Flap) recent(now time.Time, window, dwell time.Duration) bool {
	if !f.UpSince.IsZero() && now.Sub(f.UpSince) < max(dwell, 0) {
		return true
	}
	return slices.ContainsFunc(f.Downs, func(t time.Time) bool { return now.Sub(t) <= window+max(dwell, 0) })
}

// flapTimes returns FlapWindow and FlapDwell with their defaults applied.
func (j Judge) flapTimes() (window, dwell time.Duration) {
	window, dwell = j.FlapWindow, j.FlapDwell
	if window <= 0 {
		window = DefaultFlapWindow
	}
	if dwell == 0 {
		dwell = DefaultFlapDwell
	}
	return window, dwell
}

// damp applies flap damping to the quorum's decision q on a, whose last agreed decision is
// prev. A flap's onset (onset: the Up it ends was voted by a majority, and it is not the first
// decision after an isolation) is a change from Up to Down; its time is kept. A target whose
// last two onsets are within FlapWindow of each other is damped: it comes back Up only once
// the quorum has said Up for FlapDwell without a Down between (FlapDamped until then), and
// the flap is over once it has. A Down during the dwell restarts it. Damping only delays an
// Up, never a Down. mem.Flaps receives the new state.
func (j Judge) damp(a netip.Addr, prev, q Verdict, reason string, now time.Time, f Flap, onset bool, mem *Memory) (Verdict, string) {
	window, dwell := j.flapTimes()
	downs := make([]time.Time, 0, len(f.Downs)+1)
	for _, t := range f.Downs {
		downs = append(downs, notAfter(t, now))
	}
	upSince := notAfter(f.UpSince, now)
	out, why := q, reason
	switch {
	case q == Down:
		if prev == Up && onset {
			downs = append(downs, now)
		}
		upSince = time.Time{}
	case flapping(downs, window) && dwell > 0:
		if upSince.IsZero() {
			upSince = now
		}
		if now.Sub(upSince) < dwell {
			out, why = Down, ReasonFlapDamped
		} else {
			downs, upSince = nil, time.Time{} // the dwell is over, and the flap with it
		}
	default:
		upSince = time.Time{}
	}
	downs = pruneDowns(downs, now, window)
	if len(downs) > 0 || !upSince.IsZero() {
		mem.Flaps[a] = Flap{Downs: downs, UpSince: upSince}
	}
	return out, why
}

// flapping: the last two onsets in downs are within window of each other.
func flapping(downs []time.Time, window time.Duration) bool {
	n := len(downs)
	return n >= 2 && downs[n-1].Sub(downs[n-2]) <= window
}

// pruneDowns keeps what damping needs of downs: while flapping, the last two onsets (until
// the dwell ends the flap); otherwise the onsets within window of now.
func pruneDowns(downs []time.Time, now time.Time, window time.Duration) []time.Time {
	if flapping(downs, window) {
		return downs[len(downs)-2:]
	}
	return slices.DeleteFunc(downs, func(t time.Time) bool { return now.Sub(t) > window })
}

// quorum: Down when more than half of the membership (n) call the target Down.
func quorum(voters, downs, n int) (Verdict, string) {
	switch {
	case 2*downs > n:
		return Down, ReasonQuorumDown
	case voters == 0:
		return Up, ReasonNotProbed
	}
	return Up, ReasonHealthy
}

func ownOnly(own Verdict) (Verdict, string) {
	if own == Unknown {
		return Up, ReasonNotProbed
	}
	return own, ReasonOwnProbesOnly
}

// ownedBy returns the geo tags whose candidates list a, witnesses left out (a witness owns no
// target, whatever its localtargets says).
func ownedBy(cands map[string][]netip.Addr, witness map[string]bool, a netip.Addr) map[string]bool {
	out := map[string]bool{}
	for g, ts := range cands {
		if !witness[g] && slices.Contains(ts, a) {
			out[g] = true
		}
	}
	return out
}

// ownersOf maps every valid candidate address to its geo tag: Self's first, then the others by
// geo tag; a witness's candidates are left out.
func ownersOf(in Input) map[netip.Addr]string {
	witness := witnesses(in)
	geos := make([]string, 0, len(in.Candidates))
	for g := range in.Candidates {
		if !witness[g] {
			geos = append(geos, g)
		}
	}
	slices.SortFunc(geos, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == in.Self:
			return -1
		case b == in.Self:
			return 1
		}
		return cmp.Compare(a, b)
	})
	out := map[netip.Addr]string{}
	for _, g := range geos {
		for _, a := range in.Candidates[g] {
			if _, seen := out[a]; !seen && a.IsValid() {
				out[a] = g
			}
		}
	}
	return out
}

// witnesses returns the geo tags of in.Members that are witnesses, each judged by its first
// entry (as hear counts it); Self is never one.
func witnesses(in Input) map[string]bool {
	first := map[string]bool{in.Self: true}
	out := map[string]bool{}
	for _, m := range in.Members {
		if first[m.GeoTag] {
			continue
		}
		first[m.GeoTag] = true
		if m.Witness {
			out[m.GeoTag] = true
		}
	}
	return out
}

// notAfter is t, or now when t is later: a remembered time (restored from another manager's
// status, written by its clock) is never in this member's future, so a hold or a dwell never
// lasts longer than its length by this member's clock.
func notAfter(t, now time.Time) time.Time {
	if t.After(now) {
		return now
	}
	return t
}
