package gslb

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
	"github.com/dnsplane/dnsplane/pkg/gslb/probe"
)

// This file is the health phase of a Gslb with spec.healthCheck (docs/design.md, "Health and
// partitions"): the candidates of each host, the peers' verdicts as the quorum reads them, the
// verdict record this cluster publishes, and the status, condition and Event texts. Everything
// here is pure; reconciler.go drives the probe.Scheduler and keeps the hostMemory.

// hostMemory is what the controller keeps between two reconciles for one host of one Gslb with
// spec.healthCheck, in memory (a manager restart starts over, seeded from status.targets).
type hostMemory struct {
	// decide is health.Result.Memory: the last agreed decisions and the isolation's start.
	decide health.Memory
	// peers are the last reads from each peer, by geo tag.
	peers map[string]peerMemory
	// decisions are the last decision per target, for the TargetDown and TargetUp Events.
	decisions map[netip.Addr]health.Verdict
	// skewed are the members whose clock offset was reported (a ClockSkew Event each time
	// one appears); long the members whose longer validity was (ValidityMismatch).
	skewed, long map[string]bool
}

// peerMemory is the last successful reads from one peer for one host.
type peerMemory struct {
	// targets is the last localtargets answer; seen: there was one.
	targets []netip.Addr
	seen    bool
	// record is the last verdict record decoded, nil when none.
	record *health.Record
}

// peerRead is one peer's answers for one host in this reconcile.
type peerRead struct {
	// Targets is the localtargets answer; TargetsErr is set when that query (or another
	// host's, which makes the peer silent for every host) failed.
	Targets    []string
	TargetsErr error
	// Verdicts is the TXT answer at health.VerdictsName (no record: the peer does not vote);
	// VerdictsErr is set when that query failed.
	Verdicts    [][]string
	VerdictsErr error
}

// parseAddrs returns the usable target addresses of ts (canonical strings, gslb.UsableTarget),
// in order: an unspecified, broadcast, multicast or link-local address is never a candidate,
// so it is never probed nor in a verdict record.
func parseAddrs(ts []string) []netip.Addr {
	out := make([]netip.Addr, 0, len(ts))
	for _, t := range ts {
		if a, err := netip.ParseAddr(t); err == nil && gslb.UsableTarget(a) {
			out = append(out, a.Unmap())
		}
	}
	return out
}

// candidateInput is what candidates needs for one host.
type candidateInput struct {
	// Self is this cluster's geo tag; Own its targets with readiness applied.
	Self string
	Own  []string
	// Peers is the peer list; Reads the answers by geo tag (a peer missing was not asked).
	Peers []gslb.Peer
	Reads map[string]peerRead
	// Memory is the host's memory before this reconcile (nil at the first one).
	Memory map[string]peerMemory
}

// candidates returns the host's candidates by geo tag (health.Input.Candidates): this
// cluster's ready targets, and each peer's localtargets as read now, or as last read when the
// peer is silent now (docs/design.md: silent peers keep their targets while they stay in the
// peer list); and the peers' memory updated with this reconcile's answers (a peer that left
// the list is dropped). Pure.
func candidates(in candidateInput) (map[string][]netip.Addr, map[string]peerMemory) {
	cands := map[string][]netip.Addr{in.Self: parseAddrs(in.Own)}
	mem := make(map[string]peerMemory, len(in.Peers))
	for _, p := range in.Peers {
		if p.GeoTag == in.Self {
			continue
		}
		m := in.Memory[p.GeoTag]
		if rd, ok := in.Reads[p.GeoTag]; ok && rd.TargetsErr == nil {
			m.targets, m.seen = parseAddrs(rd.Targets), true
		}
		mem[p.GeoTag] = m
		if m.seen {
			cands[p.GeoTag] = m.targets
		}
	}
	return cands, mem
}

// probed returns at most health.MaxVerdicts targets to probe from cands, the first in address
// order (a verdict record holds no more), and how many were left out.
func probed(cands map[string][]netip.Addr) ([]probe.Target, int) {
	ts := probeTargets(cands)
	if len(ts) <= health.MaxVerdicts {
		return ts, 0
	}
	return ts[:health.MaxVerdicts], len(ts) - health.MaxVerdicts
}

// peerVerdicts returns the health.Member of every peer in the list (not self) for one host
// from this reconcile's reads and the last records in mem, and mem with the records updated. A
// TXT answer without a record leaves the member without a record (it abstains); a failed query
// or a refused record keeps the last record with the error (health.Member.Err); known limits a
// record to the host's candidates (health.DecodeTXT). Pure.
func peerVerdicts(self string, peers []gslb.Peer, reads map[string]peerRead, known map[netip.Addr]bool, mem map[string]peerMemory) ([]health.Member, map[string]peerMemory) {
	out := make([]health.Member, 0, len(peers))
	for _, p := range peers {
		if p.GeoTag == self {
			continue
		}
		m := mem[p.GeoTag]
		hp := health.Member{GeoTag: p.GeoTag}
		rd, asked := reads[p.GeoTag]
		switch {
		case !asked:
			hp.Err = errors.New("not asked")
		case rd.VerdictsErr != nil:
			hp.Err = rd.VerdictsErr
		default:
			rec, err := health.DecodeTXT(rd.Verdicts, p.GeoTag, known)
			switch {
			case err != nil:
				hp.Err = err
			case rec == nil:
				hp.Err = errNoVerdictRecord
				m.record = nil
			default:
				m.record = rec
			}
		}
		hp.Record = m.record
		mem[p.GeoTag] = m
		out = append(out, hp)
	}
	return out, mem
}

// errNoVerdictRecord: a member answered without a verdict record (it runs the Gslb without
// spec.healthCheck): it abstains.
var errNoVerdictRecord = errors.New("answered without a verdict record (no spec.healthCheck there)")

// knownSet is the set of every candidate address.
func knownSet(cands map[string][]netip.Addr) map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	for _, ts := range cands {
		for _, a := range ts {
			out[a] = true
		}
	}
	return out
}

// recordInput is what nextRecord needs for one host.
type recordInput struct {
	// GeoTag is this cluster's.
	GeoTag string
	// Own are this cluster's probe verdicts; Local its probe states (their last probe times).
	Own   map[netip.Addr]health.Verdict
	Local map[netip.Addr]health.ProbeState
	// Published is the record in the owned DNSEndpoint, nil when none decodes.
	Published *health.Record
	// Known are the host's candidates: a published verdict on anything else is not carried.
	Known map[netip.Addr]bool
	// Now and ValidFor: this cluster's clock, and the validity it grants (health.Validity).
	Now      time.Time
	ValidFor time.Duration
}

// nextRecord is the verdict record this cluster publishes for one host: its own probe
// verdicts (never the quorum's decisions, so that no cluster echoes another's vote), and, for
// a probed candidate (probedSet) it has no verdict on yet (a restart, a leader change, a
// healthCheck change that starts its probes over), the published record's verdict while that
// record is valid, never more than health.MaxVerdicts verdicts in all. Its time
// is the oldest probe time among the verdicts it carries (the published record's time for a
// carried one), so a reader's freshness is the probes'. It is the published record itself when
// health.Republish does not ask for a new one, or when it would carry no verdict: an empty
// record is written only where none was published (at Now). Pure.
func nextRecord(in recordInput) health.Record {
	rec := health.Record{GeoTag: in.GeoTag, ValidFor: in.ValidFor}
	var at time.Time
	add := func(a netip.Addr, v health.Verdict, when time.Time) {
		switch v {
		case health.Up:
			rec.Up = append(rec.Up, a)
		case health.Down:
			rec.Down = append(rec.Down, a)
		default:
			return
		}
		if when.IsZero() {
			when = in.Now
		}
		if at.IsZero() || when.Before(at) {
			at = when
		}
	}
	for a, v := range in.Own {
		add(a, v, in.Local[a].LastProbe)
	}
	pub := in.Published
	if pub != nil && in.Now.Before(pub.IssuedAt.Add(pub.ValidFor)) {
		for _, a := range probedSet(in.Known) {
			if _, mine := in.Own[a]; !mine && len(rec.Up)+len(rec.Down) < health.MaxVerdicts {
				add(a, pub.Verdict(a), pub.IssuedAt)
			}
		}
	}
	slices.SortFunc(rec.Up, netip.Addr.Compare)
	slices.SortFunc(rec.Down, netip.Addr.Compare)
	switch {
	case at.IsZero() && pub != nil:
		return *pub
	case at.IsZero():
		at = in.Now
	}
	rec.IssuedAt = at.Truncate(time.Second)
	if pub != nil && !health.Republish(*pub, rec, in.Now) {
		return *pub
	}
	return rec
}

// ownVotes is this cluster's vote for Judge.Decide: its probe verdicts and, on a candidate it
// has none on, the verdict its record carries (nextRecord) while that record is valid at now.
// The other members count the record this cluster publishes, so this cluster counts the same
// votes (after a restart or a leader change, until its probes pass their thresholds). Pure.
func ownVotes(own map[netip.Addr]health.Verdict, rec health.Record, now time.Time, known map[netip.Addr]bool) map[netip.Addr]health.Verdict {
	out := maps.Clone(own)
	if out == nil {
		out = map[netip.Addr]health.Verdict{}
	}
	if !now.Before(rec.IssuedAt.Add(rec.ValidFor)) {
		return out
	}
	for _, as := range [][]netip.Addr{rec.Up, rec.Down} {
		for _, a := range as {
			if _, mine := out[a]; !mine && known[a] {
				out[a] = rec.Verdict(a)
			}
		}
	}
	return out
}

// probedSet returns the targets of known that are probed: the first health.MaxVerdicts in
// address order, as probed declares them.
func probedSet(known map[netip.Addr]bool) []netip.Addr {
	as := slices.SortedFunc(maps.Keys(known), netip.Addr.Compare)
	return as[:min(len(as), health.MaxVerdicts)]
}

// seedPeers returns a host's peer memory at its first reconcile after a manager start: the
// targets status.peers holds for each peer cluster (its last localtargets), so that a silent
// peer keeps its targets across a restart.
func seedPeers(st []dnsv1.PeerStatus, host string) map[string]peerMemory {
	out := map[string]peerMemory{}
	for _, p := range st {
		if p.Role == dnsv1.PeerRoleWitness {
			continue
		}
		if ts := statusTargets(st, p.GeoTag, host); len(ts) > 0 {
			out[p.GeoTag] = peerMemory{targets: parseAddrs(ts), seen: true}
		}
	}
	return out
}

// publishedRecords decodes the verdict records of this cluster (geoTag) in its owned
// DNSEndpoint's endpoints, by host (hosts are matched by health.VerdictsName). A record that
// does not decode is left out: it is rewritten.
func publishedRecords(eps []dnsv1.Endpoint, geoTag string, hosts []string) map[string]health.Record {
	out := map[string]health.Record{}
	for _, h := range hosts {
		name := health.VerdictsName(h)
		for _, e := range eps {
			if e.RecordType != "TXT" || !strings.EqualFold(strings.TrimSuffix(e.DNSName, "."), name) || len(e.Targets) != 1 {
				continue
			}
			if r, err := health.Decode(e.Targets[0], geoTag, nil); err == nil {
				out[h] = r
			}
		}
	}
	return out
}

// memoryFromStatus seeds a fresh manager's memory of one host from the Gslb's status.targets
// (what the previous manager wrote), so that a restart or a new leader decides as the last one
// would have: the last agreed answer (each target's agreed decision, else its decision when it
// was agreed or held, not one taken by own probes alone), when the isolation began (its hold
// keeps counting) and each target's flap damping. A restored time later than now (the
// previous manager's clock ran ahead) is now: a hold or a dwell never outlasts its length by
// this manager's clock.
func memoryFromStatus(st []dnsv1.GslbTargetStatus, host string, now time.Time) health.Memory {
	mem := health.Memory{Agreed: map[netip.Addr]health.Verdict{}, Flaps: map[netip.Addr]health.Flap{}}
	for _, t := range st {
		a, err := netip.ParseAddr(t.Target)
		if t.Host != host || err != nil {
			continue
		}
		if v := restoredAgreed(t); v != health.Unknown {
			mem.Agreed[a] = v
		}
		if t.IsolatedSince != nil && (mem.IsolatedSince.IsZero() || t.IsolatedSince.Time.Before(mem.IsolatedSince)) {
			mem.IsolatedSince = notAfter(t.IsolatedSince.Time, now)
		}
		if t.Flap != nil {
			mem.Flaps[a] = restoredFlap(t.Flap, now)
		}
	}
	return mem
}

// restoredFlap is a target's flap damping from its status, no time later than now.
func restoredFlap(st *dnsv1.TargetFlapStatus, now time.Time) health.Flap {
	f := health.Flap{}
	for _, d := range st.Downs {
		f.Downs = append(f.Downs, notAfter(d.Time, now))
	}
	if st.UpSince != nil {
		f.UpSince = notAfter(st.UpSince.Time, now)
	}
	return f
}

// notAfter is t, or now when t is later.
func notAfter(t, now time.Time) time.Time {
	if t.After(now) {
		return now
	}
	return t
}

// restoredAgreed is a target status's agreed decision, else its decision when it was agreed or
// held; Unknown when neither.
func restoredAgreed(t dnsv1.GslbTargetStatus) health.Verdict {
	v := t.Agreed
	if v == "" && t.Reason != dnsv1.TargetReasonOwnProbesOnly {
		v = t.Decision
	}
	switch v {
	case dnsv1.VerdictUp:
		return health.Up
	case dnsv1.VerdictDown:
		return health.Down
	}
	return health.Unknown
}

// targetStatus returns status.targets for one host from its decision and this cluster's probe
// state of each target (localStates).
func targetStatus(host string, res health.Result, local map[netip.Addr]health.ProbeState) []dnsv1.GslbTargetStatus {
	out := make([]dnsv1.GslbTargetStatus, 0, len(res.Targets))
	for _, d := range res.Targets {
		ts := dnsv1.GslbTargetStatus{Host: host, Target: d.Target.String(), Family: family(d.Target), GeoTag: d.GeoTag,
			Decision: dnsv1.TargetVerdict(d.Decision.String()), Reason: d.Reason, Served: d.Served}
		if v := res.Memory.Agreed[d.Target]; v != health.Unknown {
			ts.Agreed = dnsv1.TargetVerdict(v.String())
		}
		if !res.Memory.IsolatedSince.IsZero() {
			t := metav1.NewTime(res.Memory.IsolatedSince)
			ts.IsolatedSince = &t
		}
		ts.Flap = flapStatus(res.Memory.Flaps[d.Target])
		if ps, ok := local[d.Target]; ok {
			ls := &dnsv1.LocalProbeStatus{Verdict: dnsv1.TargetVerdict(ps.Verdict.String()), LastError: ps.LastError}
			if len(ls.LastError) > 256 {
				ls.LastError = ls.LastError[:253] + "..."
			}
			if !ps.LastProbe.IsZero() {
				t := metav1.NewTime(ps.LastProbe)
				ls.LastProbeTime = &t
			}
			ts.Local = ls
		}
		for _, pv := range d.Peers {
			ts.Peers = append(ts.Peers, dnsv1.PeerTargetVerdict{GeoTag: pv.GeoTag, Verdict: dnsv1.TargetVerdict(pv.Verdict.String())})
		}
		out = append(out, ts)
	}
	return out
}

// flapStatus is a target's flap damping state for its status; nil when it has none.
func flapStatus(f health.Flap) *dnsv1.TargetFlapStatus {
	if len(f.Downs) == 0 && f.UpSince.IsZero() {
		return nil
	}
	out := &dnsv1.TargetFlapStatus{}
	for _, d := range f.Downs[max(0, len(f.Downs)-dnsv1.MaxFlapDowns):] {
		out.Downs = append(out.Downs, metav1.NewTime(d))
	}
	if !f.UpSince.IsZero() {
		t := metav1.NewTime(f.UpSince)
		out.UpSince = &t
	}
	return out
}

func family(a netip.Addr) dnsv1.TargetFamily {
	if a.Is4() {
		return dnsv1.FamilyIPv4
	}
	return dnsv1.FamilyIPv6
}

// targetEvent is one TargetDown or TargetUp Event.
type targetEvent struct {
	Type, Reason, Message string
}

// targetEvents returns an Event for each target whose decision changed since last (a target
// seen for the first time emits none): TargetDown (Warning) with the votes, TargetUp (Normal).
func targetEvents(host string, last map[netip.Addr]health.Verdict, res health.Result, local map[netip.Addr]health.ProbeState) []targetEvent {
	var out []targetEvent
	for _, d := range res.Targets {
		before, ok := last[d.Target]
		if !ok || before == d.Decision {
			continue
		}
		votes := []string{}
		if d.Own != health.Unknown {
			v := "here " + d.Own.String()
			if e := local[d.Target].LastError; e != "" && d.Own == health.Down {
				v += " (" + e + ")"
			}
			votes = append(votes, v)
		}
		for _, p := range d.Peers {
			v := p.GeoTag + " " + p.Verdict.String()
			if p.Owner {
				v += " (owner, not counted)"
			}
			votes = append(votes, v)
		}
		msg := fmt.Sprintf("%s: target %s (%s, %s) is %s: %s, %d of the %d members call it down, %d needed [%s]",
			host, d.Target, d.GeoTag, family(d.Target), d.Decision, d.Reason, d.Downs, res.Known, d.Needed, strings.Join(votes, ", "))
		if d.Decision == health.Down {
			out = append(out, targetEvent{Type: "Warning", Reason: dnsv1.ReasonTargetDown, Message: msg})
		} else {
			out = append(out, targetEvent{Type: "Normal", Reason: dnsv1.ReasonTargetUp, Message: msg})
		}
	}
	return out
}

// isolationNote says, for the Ready message, that this cluster is isolated for host and in
// which phase (res.Isolated must be true); since is when the isolation started.
func isolationNote(host string, res health.Result, hold time.Duration, since, now time.Time) string {
	geos := make([]string, 0, len(res.MemberErrs))
	for g := range res.MemberErrs {
		geos = append(geos, g)
	}
	slices.Sort(geos)
	var why []string
	for _, g := range geos {
		why = append(why, g+": "+res.MemberErrs[g].Error())
	}
	phase := fmt.Sprintf("serving the last agreed answer until %s (isolationHoldSeconds %d)", since.Add(hold).UTC().Format(time.RFC3339), int64(hold/time.Second))
	if !res.OwnProbesOnly && !res.Memory.IsolatedSince.IsZero() && res.Memory.IsolatedSince.Add(hold).Before(now) {
		phase = fmt.Sprintf("serving the last agreed answer for as long as the isolation lasts (afterIsolationHold Hold; isolated since %s)", since.UTC().Format(time.RFC3339))
	}
	if res.OwnProbesOnly {
		phase = fmt.Sprintf("isolated for longer than isolationHoldSeconds (%d): deciding by this cluster's own probes alone", int64(hold/time.Second))
	}
	return fmt.Sprintf("%s: fresh verdicts from %d of %d members (%s); %s", host, res.Heard, res.Known, strings.Join(why, "; "), phase)
}

// allDownNote says, for the Ready message, that every candidate of host is down.
func allDownNote(host string, res health.Result) string {
	return fmt.Sprintf("%s: all %d targets are down by the health checks; all are served, since an answer is never empty", host, len(res.Targets))
}

// clockSkewEvents sets each member's status.peers[].clockOffset from offsets
// (health.Result.ClockOffsets) and returns a ClockSkew Warning for each member not in before,
// and the members skewed now. Pure but for peers.
func clockSkewEvents(peers []dnsv1.PeerStatus, host string, offsets map[string]time.Duration, before map[string]bool) ([]targetEvent, map[string]bool) {
	now := map[string]bool{}
	var out []targetEvent
	for i := range peers {
		off, ok := offsets[peers[i].GeoTag]
		if !ok {
			continue
		}
		now[peers[i].GeoTag] = true
		peers[i].ClockOffset = off.Round(time.Second).String()
		if !before[peers[i].GeoTag] {
			out = append(out, targetEvent{Type: "Warning", Reason: dnsv1.ReasonClockSkew, Message: fmt.Sprintf(
				"%s: member %s's verdict record time is %s off this cluster's clock, beyond the skew tolerated; it counts once its time advances: check NTP on both",
				host, peers[i].GeoTag, off.Round(time.Second))})
		}
	}
	return out, now
}

// validityEvents returns a ValidityMismatch Warning for each member in long
// (health.Result.LongValidity) not in before, and the members reported now. Pure.
func validityEvents(host string, own time.Duration, long map[string]time.Duration, before map[string]bool) ([]targetEvent, map[string]bool) {
	now := map[string]bool{}
	var out []targetEvent
	for _, g := range slices.Sorted(maps.Keys(long)) {
		now[g] = true
		if !before[g] {
			out = append(out, targetEvent{Type: "Warning", Reason: dnsv1.ReasonValidityMismatch, Message: fmt.Sprintf(
				"%s: member %s's verdict records claim a validity of %s, longer than this cluster's %s: its records count that long, so its verdicts outlive it by as much; give every member the same --gslb-interval and healthCheck interval",
				host, g, long[g].Round(time.Second), own.Round(time.Second))})
		}
	}
	return out, now
}
