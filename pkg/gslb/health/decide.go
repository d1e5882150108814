package health

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"k8s.io/utils/clock"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// DefaultMaxSkew is the clock skew between two clusters that Judge tolerates by default when it
// judges a record's freshness.
const DefaultMaxSkew = 30 * time.Second

// Reasons of a target's decision; equal to the API's TargetReason* values (apis/v1alpha1).
const (
	ReasonHealthy           = "Healthy"
	ReasonNotProbed         = "NotProbed"
	ReasonQuorumDown        = "QuorumDown"
	ReasonHeldWhileIsolated = "HeldWhileIsolated"
	ReasonOwnProbesOnly     = "OwnProbesOnly"
)

// Peer is what this cluster read from one known peer for one host.
type Peer struct {
	// GeoTag of the peer.
	GeoTag string
	// Record is the last verdict record decoded from the peer for the host, possibly by an
	// earlier query (its freshness bounds how long it counts); nil when none was read.
	Record *Record
	// Err is the latest query's error (timeout, refused, bad answer, bad record), nil when it
	// succeeded; it is reported when Record is nil or no longer fresh.
	Err error
	// NotVoting: the peer's DNS server answered, but without a verdict record (NXDOMAIN or
	// NODATA): it runs this Gslb without spec.healthCheck. It is reachable and has no say, so
	// it counts neither for nor against a majority.
	NotVoting bool
}

// Memory is what Decide remembers between two calls for one host; the caller keeps it (the zero
// value is a fresh start).
type Memory struct {
	// Agreed is every candidate's last decision taken while this cluster was not isolated: the
	// last agreed answer, kept while isolated.
	Agreed map[netip.Addr]Verdict
	// IsolatedSince is when this cluster last became isolated; zero while it is not.
	IsolatedSince time.Time
}

// Input is one host's decision input.
type Input struct {
	// Self is this cluster's geo tag.
	Self string
	// Strategy, PrimaryGeoTag, Weights, GeoRegions and DefaultGeoTag are spec.strategy (see
	// gslb.Strategy.Compute).
	Strategy      string
	PrimaryGeoTag string
	Weights       map[string]int32
	GeoRegions    map[string]string
	DefaultGeoTag string
	// Candidates are the host's targets by geo tag: this cluster's with readiness applied
	// (a target without ready endpoints is not here: readiness is the local fast signal), and
	// each peer's localtargets as read now, or as last read when the peer is silent.
	Candidates map[string][]netip.Addr
	// Own is this cluster's probe verdict per target; a target missing is Unknown.
	Own map[netip.Addr]Verdict
	// Peers are every known peer (the peer list: --ext-gslb-clusters or the edge NS set), one
	// per geo tag; an entry for Self, and any but the first for a geo tag, are ignored.
	Peers []Peer
	// Hold is healthCheck.isolationHoldSeconds.
	Hold time.Duration
	// Memory is the previous call's Result.Memory.
	Memory Memory
}

// PeerVerdict is one fresh peer verdict on a target.
type PeerVerdict struct {
	GeoTag  string
	Verdict Verdict
}

// TargetDecision is the decision on one target.
type TargetDecision struct {
	// Target is the address; its family is Target.Is4() / Is6().
	Target netip.Addr
	// GeoTag is the cluster whose candidate it is (Self first, then by geo tag, when several
	// list it).
	GeoTag string
	// Own is this cluster's probe verdict.
	Own Verdict
	// Peers are the fresh peers' verdicts on it (Up or Down), by geo tag.
	Peers []PeerVerdict
	// Voters and Downs count the clusters with a fresh verdict on it and those that call it
	// down (Self included when Own is not Unknown); counted even while isolated.
	Voters, Downs int
	// Decision is Up or Down.
	Decision Verdict
	// Reason is one of the Reason constants.
	Reason string
	// Served: the target is in the answer.
	Served bool
}

// Result is one host's decision.
type Result struct {
	// Answer is gslb.Compute's answer over the targets decided Up, or over every candidate
	// when none is (NoHealthyTargets).
	Answer gslb.Answer
	// A and AAAA are the targets served per family (every weighted or geo set's together),
	// sorted.
	A, AAAA []string
	// Targets are the decisions, sorted by address.
	Targets []TargetDecision
	// Known counts the known clusters (Self and every voting peer); Fresh those whose verdicts
	// this cluster could count (Self always).
	Known, Fresh int
	// PeerErrs holds, by geo tag, why a known peer's verdicts did not count (no record read,
	// stale, from the future).
	PeerErrs map[string]error
	// Isolated: Fresh is not a majority of Known.
	Isolated bool
	// OwnProbesOnly: isolated for longer than Hold; own probes decide alone.
	OwnProbesOnly bool
	// NoHealthyTargets: there are candidates and none is Up, so every candidate is served.
	NoHealthyTargets bool
	// Memory goes to the next call's Input.Memory.
	Memory Memory
}

// Judge takes the quorum decisions. The zero value is not usable: Clock is required.
type Judge struct {
	// Clock gives now (k8s.io/utils/clock; a fake one in tests).
	Clock clock.PassiveClock
	// MaxSkew is the clock skew between clusters tolerated in a record's freshness; <= 0
	// means DefaultMaxSkew.
	MaxSkew time.Duration
}

// Decide returns the decision on every candidate of one host (docs/design.md, "Health and
// partitions"):
//
//   - a peer's verdicts count when its record is fresh (Record.Fresh under MaxSkew); the known
//     clusters are Self and every peer that is not NotVoting;
//   - not isolated (the fresh clusters are a strict majority of the known ones): a target is
//     Down (QuorumDown) when a strict majority of the clusters with a fresh verdict on it call
//     it down, Up otherwise (Healthy), or NotProbed when no cluster has a verdict; the
//     decisions become Memory.Agreed;
//   - isolated, for at most Hold from the start of the isolation: every target keeps its
//     agreed decision (HeldWhileIsolated); a target without one is decided by own probes;
//   - isolated longer than Hold: own probes alone (OwnProbesOnly; NotProbed, Up, without one);
//   - the answer is gslb.Compute over the Up targets by geo tag; when no candidate is Up, over
//     every candidate (never an empty answer: NoHealthyTargets).
//
// The error is gslb.Compute's (an invalid strategy).
func (j Judge) Decide(in Input) (Result, error) {
	now := j.Clock.Now()
	skew := j.MaxSkew
	if skew <= 0 {
		skew = DefaultMaxSkew
	}
	res := Result{Known: 1, Fresh: 1, PeerErrs: map[string]error{}}
	fresh := freshPeers(in, now, skew, &res)
	res.Isolated = 2*res.Fresh <= res.Known

	mem := Memory{Agreed: in.Memory.Agreed, IsolatedSince: in.Memory.IsolatedSince}
	if res.Isolated {
		if mem.IsolatedSince.IsZero() {
			mem.IsolatedSince = now
		}
		res.OwnProbesOnly = now.Sub(mem.IsolatedSince) >= in.Hold
	} else {
		mem = Memory{Agreed: map[netip.Addr]Verdict{}}
	}

	owner := owners(in.Self, in.Candidates)
	addrs := make([]netip.Addr, 0, len(owner))
	for a := range owner {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, netip.Addr.Compare)

	up := map[string][]string{}
	all := map[string][]string{}
	for _, a := range addrs {
		d := decideTarget(in, &res, fresh, a, owner[a])
		if !res.Isolated {
			mem.Agreed[a] = d.Decision
		}
		res.Targets = append(res.Targets, d)
		for geo, ts := range in.Candidates {
			if slices.Contains(ts, a) {
				all[geo] = append(all[geo], a.String())
				if d.Decision == Up {
					up[geo] = append(up[geo], a.String())
				}
			}
		}
	}
	res.Memory = mem

	healthy := up
	if len(addrs) > 0 && len(up) == 0 {
		res.NoHealthyTargets = true
		healthy = all
	}
	ans, err := gslb.Strategy{Type: in.Strategy, PrimaryGeoTag: in.PrimaryGeoTag, Weights: in.Weights,
		GeoRegions: in.GeoRegions, DefaultGeoTag: in.DefaultGeoTag}.Compute(healthy)
	if err != nil {
		return Result{}, err
	}
	res.Answer = ans
	markServed(&res)
	return res, nil
}

// freshPeers counts the known clusters (this one and each voting peer, by geo tag, once) and
// the fresh ones into res, records why each other peer is not fresh in res.PeerErrs, and
// returns the fresh peers sorted by geo tag.
func freshPeers(in Input, now time.Time, skew time.Duration, res *Result) []Peer {
	var fresh []Peer
	seen := map[string]bool{in.Self: true}
	for _, p := range in.Peers {
		if p.NotVoting || seen[p.GeoTag] {
			continue // a peer without a say, this cluster, or a geo tag given twice
		}
		seen[p.GeoTag] = true
		res.Known++
		var err error
		if p.Record == nil {
			err = errors.New("no verdict record read")
		} else {
			err = p.Record.Fresh(now, skew)
		}
		if err != nil {
			if p.Err != nil {
				err = fmt.Errorf("%w (last query: %w)", err, p.Err)
			}
			res.PeerErrs[p.GeoTag] = err
			continue
		}
		res.Fresh++
		fresh = append(fresh, p)
	}
	slices.SortFunc(fresh, func(a, b Peer) int { return cmp.Compare(a.GeoTag, b.GeoTag) })
	return fresh
}

// decideTarget gathers target a's votes (this cluster's own probe verdict and each fresh
// peer's) and decides it: by quorum when this cluster is not isolated, else by the last agreed
// decision while the hold lasts, else by its own probes alone. res gives the isolation state.
func decideTarget(in Input, res *Result, fresh []Peer, a netip.Addr, geo string) TargetDecision {
	d := TargetDecision{Target: a, GeoTag: geo, Own: in.Own[a]}
	if d.Own != Unknown {
		d.Voters++
		if d.Own == Down {
			d.Downs++
		}
	}
	for _, p := range fresh {
		if v := p.Record.Verdict(a); v != Unknown {
			d.Peers = append(d.Peers, PeerVerdict{GeoTag: p.GeoTag, Verdict: v})
			d.Voters++
			if v == Down {
				d.Downs++
			}
		}
	}
	switch {
	case !res.Isolated:
		d.Decision, d.Reason = quorum(d.Voters, d.Downs)
	case !res.OwnProbesOnly && in.Memory.Agreed[a] != Unknown:
		d.Decision, d.Reason = in.Memory.Agreed[a], ReasonHeldWhileIsolated
	default:
		d.Decision, d.Reason = ownOnly(d.Own)
	}
	return d
}

// markServed sets Served on each of res.Targets that res.Answer serves (plain or weighted), and
// lists them by family in res.A and res.AAAA.
func markServed(res *Result) {
	served := map[string]bool{}
	for _, t := range res.Answer.Targets {
		served[t] = true
	}
	for _, ws := range res.Answer.Weighted {
		for _, t := range ws.Targets {
			served[t] = true
		}
	}
	for _, gs := range res.Answer.Geo {
		for _, t := range gs.Targets {
			served[t] = true
		}
	}
	for i := range res.Targets {
		t := &res.Targets[i]
		if served[t.Target.String()] {
			t.Served = true
			if t.Target.Is4() {
				res.A = append(res.A, t.Target.String())
			} else {
				res.AAAA = append(res.AAAA, t.Target.String())
			}
		}
	}
}

// quorum: Down when a strict majority of the voters call the target down.
func quorum(voters, downs int) (Verdict, string) {
	switch {
	case voters == 0:
		return Up, ReasonNotProbed
	case 2*downs > voters:
		return Down, ReasonQuorumDown
	}
	return Up, ReasonHealthy
}

func ownOnly(own Verdict) (Verdict, string) {
	if own == Unknown {
		return Up, ReasonNotProbed
	}
	return own, ReasonOwnProbesOnly
}

// owners maps every valid candidate address to its geo tag: self's first, then the others by
// geo tag.
func owners(self string, cands map[string][]netip.Addr) map[netip.Addr]string {
	geos := make([]string, 0, len(cands))
	for g := range cands {
		geos = append(geos, g)
	}
	slices.SortFunc(geos, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == self:
			return -1
		case b == self:
			return 1
		}
		return cmp.Compare(a, b)
	})
	out := map[netip.Addr]string{}
	for _, g := range geos {
		for _, a := range cands[g] {
			if _, seen := out[a]; !seen && a.IsValid() {
				out[a] = g
			}
		}
	}
	return out
}
