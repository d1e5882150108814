package gslb

import (
	"fmt"
	"net/netip"
	"slices"

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

// decideHealth is the health phase of a reconcile (docs/design.md, "Health and partitions").
// Without spec.healthCheck (or without a Scheduler) it forgets the Gslb and returns the zero
// plan. With it, per host: the candidates (own ready targets, each peer's current or last
// localtargets), declared to the Scheduler; the peers' verdict records; the quorum decision
// (health.Judge.Decide) with this host's memory; the TargetDown and TargetUp Events; the
// isolation gauge; and this cluster's verdict record, rewritten only when health.Republish says
// so. It also writes, into g.Status.Peers, why a reachable peer's verdicts did not count.
// Errors: a healthCheck the probes cannot use (admission refuses those), a geo tag no record
// can carry.
func (r *Reconciler) decideHealth(g *dnsv1.Gslb, obs *observed) (healthPlan, error) {
	key := client.ObjectKeyFromObject(g)
	hc := g.Spec.HealthCheck
	if hc == nil || r.Scheduler == nil {
		r.forgetHealth(key)
		return healthPlan{}, nil
	}
	now := r.Judge.Clock.Now()
	hold := isolationHold(hc)
	validFor := health.Validity(seconds(hc.IntervalSeconds, defaultProbeInterval), r.Interval)
	published := publishedRecords(obs.endpoints, r.GeoTag, obs.local.hosts)

	r.mu.Lock()
	defer r.mu.Unlock()
	mem := r.hostMemories(key, obs.local.hosts)
	var work []hostWork
	for _, h := range obs.local.hosts {
		check, err := probeCheck(hc, h)
		if err != nil {
			return healthPlan{}, err
		}
		hm := mem[h]
		if hm == nil {
			hm = &hostMemory{decide: health.Memory{Agreed: agreedFromStatus(g.Status.Targets, h)}}
			mem[h] = hm
		}
		cands, peers := candidates(candidateInput{Self: r.GeoTag, Own: obs.local.healthy(h), Peers: obs.peers, Reads: obs.reads[h], Memory: hm.peers})
		hm.peers = peers
		targets, left := probed(cands)
		r.Scheduler.Set(probe.HostKey{Gslb: key, Host: h}, targets, check)
		work = append(work, hostWork{host: h, mem: hm, cands: cands, left: left})
	}

	states := r.Scheduler.States(key)
	hp := healthPlan{decided: map[string]decidedHost{}}
	for _, w := range work {
		h, hm := w.host, w.mem
		own := r.Scheduler.Verdicts(probe.HostKey{Gslb: key, Host: h})
		peers, pm := peerVerdicts(r.GeoTag, obs.peers, obs.reads[h], knownSet(w.cands), hm.peers)
		hm.peers = pm
		res, err := r.Judge.Decide(health.Input{
			Self: r.GeoTag, Strategy: strategyType(g.Spec.Strategy), PrimaryGeoTag: g.Spec.Strategy.PrimaryGeoTag,
			Weights: g.Spec.Strategy.Weights, GeoRegions: g.Spec.Strategy.GeoRegions, DefaultGeoTag: g.Spec.Strategy.DefaultGeoTag,
			Candidates: w.cands, Own: own, Members: peers, Hold: hold, AfterHold: health.AfterHold(hc.AfterIsolationHold), Memory: hm.decide,
		})
		if err != nil {
			continue // an invalid strategy: planRecords reports it (InvalidStrategy)
		}
		hm.decide = res.Memory
		local := localStates(states, h)
		for _, e := range targetEvents(h, hm.decisions, res, local) {
			r.Recorder.Event(g, e.Type, e.Reason, e.Message)
		}
		hm.decisions = make(map[netip.Addr]health.Verdict, len(res.Targets))
		for _, d := range res.Targets {
			hm.decisions[d.Target] = d.Decision
		}

		rec := ownRecord(r.GeoTag, own, now, validFor)
		if pub, ok := published[h]; ok && !health.Republish(pub, rec, now) {
			rec = pub
		}
		txt, err := health.Encode(rec)
		if err != nil {
			return healthPlan{}, fmt.Errorf("verdict record of %s: %w", h, err)
		}
		hp.decided[h] = decidedHost{Answer: res.Answer(), VerdictTXT: txt}
		hp.status = append(hp.status, targetStatus(h, res, local)...)
		r.ProbeMetrics.SetIsolated(key, h, res.Isolated)
		if res.Isolated {
			hp.isolated = append(hp.isolated, isolationNote(h, res, hold, res.Memory.IsolatedSince))
		}
		if res.NoHealthyTargets() {
			hp.allDown = append(hp.allDown, allDownNote(h, res))
		}
		if w.left > 0 {
			hp.notes = append(hp.notes, fmt.Sprintf("%s: the %d targets after the first %d (by address) are not health-checked, readiness alone decides them",
				h, w.left, health.MaxVerdicts))
		}
		notePeerErrors(g.Status.Peers, h, res.MemberErrs)
	}
	return hp, nil
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
