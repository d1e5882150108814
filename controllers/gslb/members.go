package gslb

import (
	"context"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

// membership is a Gslb's members other than this cluster, as one reconcile asks them
// (docs/design.md, "The controller's health phase"): the peer clusters and the witnesses.
type membership struct {
	// clusters are the peer clusters: --ext-gslb-clusters, else the edge NS set as last read.
	clusters []gslb.Peer
	// witnesses are --ext-gslb-witnesses: they vote and own no targets.
	witnesses []gslb.Peer
}

// all returns the clusters, then the witnesses.
func (m membership) all() []gslb.Peer { return append(slices.Clone(m.clusters), m.witnesses...) }

// size counts the members, this one included.
func (m membership) size() int { return 1 + len(m.clusters) + len(m.witnesses) }

// isWitness reports whether geo is one of the witnesses.
func (m membership) isWitness(geo string) bool {
	return slices.ContainsFunc(m.witnesses, func(p gslb.Peer) bool { return p.GeoTag == geo })
}

// quorum is the number of members that is more than half of n.
func quorum(n int) int { return n/2 + 1 }

// members returns the Gslb's membership: the configured peers, or, with spec.edge and none
// configured, the edge NS set's clusters; either way without this cluster or a witness
// (peerClusters), so a fleet-wide --ext-gslb-clusters naming this cluster counts it once. A failed discovery keeps the last set read (by this
// manager, else the Member peers of status.peers, which a previous manager wrote), never an
// empty one; its error is returned beside it (the condition names it).
func (r *Reconciler) members(ctx context.Context, g *dnsv1.Gslb) (membership, error) {
	m := membership{witnesses: r.Witnesses}
	if len(r.Peers) > 0 || g.Spec.Edge == nil {
		m.clusters = peerClusters(r.Peers, r.GeoTag, m)
		return m, nil
	}
	found, err := r.discoverPeers(ctx, g)
	key := client.ObjectKeyFromObject(g)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.discovered == nil {
		r.discovered = map[types.NamespacedName][]gslb.Peer{}
	}
	if err == nil {
		r.discovered[key] = found
	} else if _, ok := r.discovered[key]; !ok {
		r.discovered[key] = rememberedClusters(g.Status.Peers)
	}
	m.clusters = peerClusters(r.discovered[key], r.GeoTag, m)
	return m, err
}

// peerClusters returns the clusters of found that are neither this cluster (self) nor a
// witness of m, each geo tag once (the first), in order: --ext-gslb-clusters, a discovered NS
// set or a status.peers edited by hand never makes this cluster or a witness a peer cluster. Pure.
func peerClusters(found []gslb.Peer, self string, m membership) []gslb.Peer {
	seen := map[string]bool{self: true}
	var out []gslb.Peer
	for _, p := range found {
		if seen[p.GeoTag] || m.isWitness(p.GeoTag) {
			continue
		}
		seen[p.GeoTag] = true
		out = append(out, p)
	}
	return out
}

// rememberedClusters returns the peer clusters of status.peers (role Member, or none: a status
// written before roles), in order.
func rememberedClusters(st []dnsv1.PeerStatus) []gslb.Peer {
	var out []gslb.Peer
	for _, p := range st {
		if p.Role != dnsv1.PeerRoleWitness && p.GeoTag != "" && p.Address != "" {
			out = append(out, gslb.Peer{GeoTag: p.GeoTag, Addr: p.Address})
		}
	}
	return out
}

// forgetMembers forgets a deleted Gslb's discovered clusters.
func (r *Reconciler) forgetMembers(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.discovered, key)
	r.mu.Unlock()
}

// peerAnswer is one peer query's answer: localtargets (txt false) or the verdict record.
type peerAnswer struct {
	peer    int
	host    string
	txt     bool
	targets []string
	rrs     [][]string
	err     error
}

// ask queries, at once, every peer cluster's localtargets-<host> for every host and, when
// verdicts is set, every member's verdicts-<host> (a witness has no localtargets to ask).
// Peers are indexed as m.all().
func (r *Reconciler) ask(ctx context.Context, m membership, hosts []string, verdicts bool) []peerAnswer {
	peers := m.all()
	results := make(chan peerAnswer, 2*len(peers)*len(hosts))
	var wg sync.WaitGroup
	for i, p := range peers {
		witness := i >= len(m.clusters)
		for _, h := range hosts {
			if !witness {
				wg.Go(func() {
					t, err := r.Querier.Query(ctx, p.Addr, gslb.LocalTargetsName(h))
					results <- peerAnswer{peer: i, host: h, targets: t, err: err}
				})
			}
			if verdicts {
				wg.Go(func() {
					rrs, err := r.Querier.QueryTXT(ctx, p.Addr, health.VerdictsName(h))
					results <- peerAnswer{peer: i, host: h, txt: true, rrs: rrs, err: err}
				})
			}
		}
	}
	wg.Wait()
	close(results)
	out := make([]peerAnswer, 0, len(results))
	for a := range results {
		out = append(out, a)
	}
	return out
}

// collectAnswers sorts the answers into reads by host and geo tag, the peer clusters' targets
// by host and geo tag, and each peer's first error (a peer cluster's failed localtargets
// query, a witness's failed verdicts query). A peer cluster that failed for one host is silent
// for every host: it is left out of targets, and its reads carry the error. Pure.
func collectAnswers(m membership, hosts []string, answers []peerAnswer) (map[string]map[string][]string, map[string]map[string]peerRead, []error) {
	peers := m.all()
	targets := map[string]map[string][]string{}
	reads := map[string]map[string]peerRead{}
	for _, h := range hosts {
		reads[h] = map[string]peerRead{}
	}
	errs := make([]error, len(peers))
	for _, a := range answers {
		geo := peers[a.peer].GeoTag
		rd := reads[a.host][geo]
		if a.txt {
			rd.Verdicts, rd.VerdictsErr = a.rrs, a.err
			if a.err != nil && a.peer >= len(m.clusters) && errs[a.peer] == nil {
				errs[a.peer] = a.err
			}
		} else {
			rd.Targets, rd.TargetsErr = a.targets, a.err
			if a.err != nil && errs[a.peer] == nil {
				errs[a.peer] = a.err
			}
		}
		reads[a.host][geo] = rd
	}
	for i, p := range m.clusters {
		for _, h := range hosts {
			rd := reads[h][p.GeoTag]
			if errs[i] != nil {
				if rd.TargetsErr == nil {
					rd.TargetsErr = errs[i]
				}
				reads[h][p.GeoTag] = rd
				continue
			}
			if targets[h] == nil {
				targets[h] = map[string][]string{}
			}
			targets[h][p.GeoTag] = rd.Targets
		}
	}
	return targets, reads, errs
}

// queryPeers asks the members (ask) under the peer timeout and returns the peer clusters'
// targets by host and geo tag, status.peers (with each peer's role, last answer time and
// targets per host: as answered now, else as in the previous status) and every answer by host
// and geo tag (reads).
func (r *Reconciler) queryPeers(ctx context.Context, m membership, hosts []string, verdicts bool, prev []dnsv1.PeerStatus) (map[string]map[string][]string, []dnsv1.PeerStatus, map[string]map[string]peerRead) {
	targets, reads, errs := collectAnswers(m, hosts, r.ask(ctx, m, hosts, verdicts))
	now := metav1.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastSeen == nil {
		r.lastSeen = map[string]metav1.Time{}
	}
	peers := m.all()
	st := make([]dnsv1.PeerStatus, 0, len(peers))
	for i, p := range peers {
		ps := dnsv1.PeerStatus{GeoTag: p.GeoTag, Address: p.Addr, Role: dnsv1.PeerRoleMember}
		if m.isWitness(p.GeoTag) {
			ps.Role = dnsv1.PeerRoleWitness
		}
		if errs[i] != nil {
			ps.Error = strings.ReplaceAll(errs[i].Error(), "\n", "; ")
			if r.Metrics != nil {
				r.Metrics.PeerErrors.WithLabelValues(p.GeoTag).Inc()
			}
		} else {
			r.lastSeen[p.Addr] = now
		}
		if t, ok := r.lastSeen[p.Addr]; ok {
			ps.LastSeen = &t
		}
		if ps.Role == dnsv1.PeerRoleMember {
			ps.Targets = peerTargets(p.GeoTag, hosts, targets, prev)
		}
		st = append(st, ps)
	}
	return targets, st, reads
}

// peerTargets returns status.peers[].targets of the peer cluster geo: per host, its targets as
// answered now, else (silent) as in prev, the previous status; at most
// dnsv1.MaxPeerHostTargets per host (the CRD's bound, as many as one localtargets answer
// holds), so the status update is never refused. Pure.
func peerTargets(geo string, hosts []string, now map[string]map[string][]string, prev []dnsv1.PeerStatus) []dnsv1.PeerHostTargets {
	var out []dnsv1.PeerHostTargets
	for _, h := range hosts {
		ts, ok := now[h][geo]
		if !ok {
			ts = statusTargets(prev, geo, h)
		}
		if len(ts) > 0 {
			out = append(out, dnsv1.PeerHostTargets{Host: h, Targets: ts[:min(len(ts), dnsv1.MaxPeerHostTargets)]})
		}
	}
	return out
}

// statusTargets returns the targets status.peers holds for geo and host, nil when none.
func statusTargets(st []dnsv1.PeerStatus, geo, host string) []string {
	for _, p := range st {
		if p.GeoTag != geo {
			continue
		}
		for _, ht := range p.Targets {
			if ht.Host == host {
				return ht.Targets
			}
		}
	}
	return nil
}

// heardWithoutHealth counts the members heard by a Gslb without spec.healthCheck: this
// cluster and every peer whose status has no error.
func heardWithoutHealth(st []dnsv1.PeerStatus) int {
	n := 1
	for _, p := range st {
		if p.Error == "" {
			n++
		}
	}
	return n
}
