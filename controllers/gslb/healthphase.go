package gslb

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
	"github.com/dnsplane/dnsplane/pkg/gslb/probe"
)

// healthPlan is the health phase's result, for planRecords, status and Ready. Its zero value
// (no spec.healthCheck) changes nothing.
type healthPlan struct {
	// decided holds, per host judged, the answer and this cluster's verdict record.
	decided map[string]decidedHost
	// status is status.targets.
	status []dnsv1.GslbTargetStatus
	// allDown, isolated and notes are lines of the Ready message: hosts whose every target is
	// down, hosts for which this cluster is isolated, and other remarks.
	allDown, isolated, notes []string
	// heard is the fewest members heard over the hosts decided; -1 before the first.
	heard int
}

// decidedHost is one host's health decision, for planRecords.
type decidedHost struct {
	// Answer replaces gslb.Compute's: the strategy over the targets decided Up.
	Answer gslb.Answer
	// VerdictTXT is this cluster's verdict record (health.Encode), published at
	// health.VerdictsName(host).
	VerdictTXT string
}

// hostWork is one host of the health phase between the probe declaration and the decision.
type hostWork struct {
	host  string
	mem   *hostMemory
	cands map[string][]netip.Addr
	left  int
}

// healthRound is what every host of one Gslb's health phase shares.
type healthRound struct {
	key       types.NamespacedName
	hold      time.Duration
	validFor  time.Duration
	now       time.Time
	published map[string]health.Record
	states    []probe.TargetState
}

// decideHealth is the health phase of a reconcile (docs/design.md, "Health and partitions").
// Without spec.healthCheck (or without a Scheduler) it forgets the Gslb and returns the zero
// plan. With it, per host: the candidates (own ready targets, each peer cluster's current or
// last localtargets, seeded after a restart from prev, the previous status.peers), declared to
// the Scheduler; the members' verdict records; the quorum decision (health.Judge.Decide) with
// this host's memory; the TargetDown and TargetUp Events; the isolation gauge; and this
// cluster's verdict record (nextRecord). It also writes, into g.Status.Peers, why a reachable
// peer's verdicts did not count. Errors: a healthCheck the probes cannot use (admission
// refuses those), a geo tag no record can carry.
func (r *Reconciler) decideHealth(g *dnsv1.Gslb, obs *observed, prev []dnsv1.PeerStatus) (healthPlan, error) {
	key := client.ObjectKeyFromObject(g)
	hc := g.Spec.HealthCheck
	if hc == nil || r.Scheduler == nil {
		r.forgetHealth(key)
		return healthPlan{}, nil
	}
	round := healthRound{key: key, hold: isolationHold(hc), now: r.Judge.Clock.Now(),
		validFor:  health.Validity(seconds(hc.IntervalSeconds, defaultProbeInterval), r.Interval),
		published: publishedRecords(obs.endpoints, r.GeoTag, obs.local.hosts)}

	r.mu.Lock()
	defer r.mu.Unlock()
	work, err := r.declareProbes(g, obs, prev)
	if err != nil {
		return healthPlan{}, err
	}
	round.states = r.Scheduler.States(key)
	hp := healthPlan{decided: map[string]decidedHost{}, heard: -1}
	for _, w := range work {
		if err := r.decideHost(g, obs, round, w, &hp); err != nil {
			return healthPlan{}, err
		}
	}
	return hp, nil
}

// declareProbes computes each host's candidates and declares them to the Scheduler; a host's
// memory is created at its first reconcile, its agreed decisions from status.targets and its
// silent peers' targets from prev. r.mu is held.
func (r *Reconciler) declareProbes(g *dnsv1.Gslb, obs *observed, prev []dnsv1.PeerStatus) ([]hostWork, error) {
	key := client.ObjectKeyFromObject(g)
	mem := r.hostMemories(key, obs.local.hosts)
	work := make([]hostWork, 0, len(obs.local.hosts))
	for _, h := range obs.local.hosts {
		check, err := probeCheck(g.Spec.HealthCheck, h)
		if err != nil {
			return nil, err
		}
		hm := mem[h]
		if hm == nil {
			hm = &hostMemory{decide: memoryFromStatus(g.Status.Targets, h, r.Judge.Clock.Now()), peers: seedPeers(prev, h)}
			mem[h] = hm
		}
		cands, peers := candidates(candidateInput{Self: r.GeoTag, Own: obs.local.healthy(h), Peers: obs.members.clusters, Reads: obs.reads[h], Memory: hm.peers})
		hm.peers = peers
		targets, left := probed(cands)
		r.Scheduler.Set(probe.HostKey{Gslb: key, Host: h}, targets, check)
		work = append(work, hostWork{host: h, mem: hm, cands: cands, left: left})
	}
	return work, nil
}

// decideHost decides one host and adds its answer, record, status and Ready lines to hp.
// r.mu is held.
func (r *Reconciler) decideHost(g *dnsv1.Gslb, obs *observed, round healthRound, w hostWork, hp *healthPlan) error {
	h, hm := w.host, w.mem
	own := r.Scheduler.Verdicts(probe.HostKey{Gslb: round.key, Host: h})
	members, pm := peerVerdicts(r.GeoTag, obs.peers, obs.reads[h], knownSet(w.cands), hm.peers)
	hm.peers = pm
	for i := range members {
		members[i].Witness = obs.members.isWitness(members[i].GeoTag)
	}
	local := localStates(round.states, h)
	var pub *health.Record
	if p, ok := round.published[h]; ok {
		pub = &p
	}
	known := knownSet(w.cands)
	rec := nextRecord(recordInput{GeoTag: r.GeoTag, Own: own, Local: local, Published: pub, Known: known,
		Now: round.now, ValidFor: round.validFor})
	hc := g.Spec.HealthCheck
	res, err := r.Judge.Decide(health.Input{
		Self: r.GeoTag, Strategy: strategyType(g.Spec.Strategy), PrimaryGeoTag: g.Spec.Strategy.PrimaryGeoTag,
		Weights: g.Spec.Strategy.Weights, GeoRegions: g.Spec.Strategy.GeoRegions, DefaultGeoTag: g.Spec.Strategy.DefaultGeoTag,
		Candidates: w.cands, Own: ownVotes(own, rec, round.now, known), Members: members, ValidityCap: round.validFor,
		Hold: round.hold, AfterHold: health.AfterHold(hc.AfterIsolationHold), Memory: hm.decide,
	})
	if err != nil {
		return nil // an invalid strategy: planRecords reports it (InvalidStrategy)
	}
	hm.decide = res.Memory
	for _, e := range targetEvents(h, hm.decisions, res, local) {
		r.Recorder.Event(g, e.Type, e.Reason, e.Message)
	}
	hm.decisions = make(map[netip.Addr]health.Verdict, len(res.Targets))
	for _, d := range res.Targets {
		hm.decisions[d.Target] = d.Decision
	}
	txt, err := health.Encode(rec)
	if err != nil {
		txt = publishedTXT(pub)
		hp.notes = append(hp.notes, fmt.Sprintf("%s: this cluster's verdict record does not encode (%v); the published one stays", h, err))
	}
	hp.decided[h] = decidedHost{Answer: res.Answer(), VerdictTXT: txt}
	hp.status = append(hp.status, targetStatus(h, res, local)...)
	r.ProbeMetrics.SetIsolated(round.key, h, res.Isolated)
	hp.addLines(h, res, round.hold, round.now, w.left)
	if hp.heard < 0 || res.Heard < hp.heard {
		hp.heard = res.Heard
	}
	notePeerErrors(g.Status.Peers, h, res.MemberErrs)
	var skew []targetEvent
	skew, hm.skewed = clockSkewEvents(g.Status.Peers, h, res.ClockOffsets, hm.skewed)
	var long []targetEvent
	long, hm.long = validityEvents(h, round.validFor, res.LongValidity, hm.long)
	for _, e := range append(skew, long...) {
		r.Recorder.Event(g, e.Type, e.Reason, e.Message)
	}
	return nil
}

// publishedTXT is the published verdict record's text, "" when none (or it does not encode):
// a record that does not encode leaves the published one in place, or none, and never stops
// the other hosts' decisions.
func publishedTXT(pub *health.Record) string {
	if pub == nil {
		return ""
	}
	txt, err := health.Encode(*pub)
	if err != nil {
		return ""
	}
	return txt
}

// addLines adds host's Ready lines: isolated, all down, targets beyond the record's bound.
func (hp *healthPlan) addLines(h string, res health.Result, hold time.Duration, now time.Time, left int) {
	if res.Isolated {
		hp.isolated = append(hp.isolated, isolationNote(h, res, hold, res.Memory.IsolatedSince, now))
	}
	if res.NoHealthyTargets() {
		hp.allDown = append(hp.allDown, allDownNote(h, res))
	}
	if left > 0 {
		hp.notes = append(hp.notes, fmt.Sprintf("%s: the %d targets after the first %d (by address) are not health-checked, readiness alone decides them",
			h, left, health.MaxVerdicts))
	}
}

// setMembership sets status.members, status.heard and status.quorum: members counts this
// cluster and its peers, heard the fewest members heard over the hosts judged (hp), else this
// cluster and the peers that answered.
func setMembership(st *dnsv1.GslbStatus, members int, hp healthPlan) {
	heard := hp.heard
	if hp.decided == nil || heard < 0 {
		heard = heardWithoutHealth(st.Peers)
	}
	st.Members, st.Heard, st.Quorum = int32(members), int32(heard), int32(quorum(members))
}

// hostMemories returns the Gslb's host memories, created when missing; a host no longer in
// hosts is forgotten, with its probes (Scheduler.Set with no target). r.mu is held.
func (r *Reconciler) hostMemories(key types.NamespacedName, hosts []string) map[string]*hostMemory {
	if r.health == nil {
		r.health = map[types.NamespacedName]map[string]*hostMemory{}
	}
	mem := r.health[key]
	if mem == nil {
		mem = map[string]*hostMemory{}
		r.health[key] = mem
	}
	for h := range mem {
		if !slices.Contains(hosts, h) {
			r.Scheduler.Set(probe.HostKey{Gslb: key, Host: h}, nil, probe.Check{})
			delete(mem, h)
		}
	}
	return mem
}

// forgetHealth forgets a Gslb's health memory, probes and probe metrics (deleted, or without
// spec.healthCheck).
func (r *Reconciler) forgetHealth(key types.NamespacedName) {
	if r.Scheduler == nil {
		return
	}
	r.mu.Lock()
	_, had := r.health[key]
	delete(r.health, key)
	r.mu.Unlock()
	if had {
		r.Scheduler.Forget(key)
	}
}

// localStates returns this cluster's probe state of each target of host.
func localStates(states []probe.TargetState, host string) map[netip.Addr]health.ProbeState {
	out := map[netip.Addr]health.ProbeState{}
	for _, s := range states {
		if s.Host == host {
			out[s.Target] = s.State
		}
	}
	return out
}

// notePeerErrors adds to each reachable peer's status (no query error) why its verdicts for
// host did not count (stale, from the future, refused), once.
func notePeerErrors(peers []dnsv1.PeerStatus, host string, errs map[string]error) {
	for i := range peers {
		if err, ok := errs[peers[i].GeoTag]; ok && peers[i].Error == "" {
			peers[i].Error = fmt.Sprintf("verdicts for %s do not count: %v", host, err)
		}
	}
}
