package dynupdate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/dynupdate"
)

// RelayOption is the EDNS0 option code (RFC 6891 §6.1.2, the local/experimental range 65001 to
// 65534) that marks an UPDATE one cluster relays to its Gslb peers: a peer applies it and does
// not relay it again.
const RelayOption = 65034

// ReasonPeerNotUpdated (Warning, on the DNSZone): a Gslb peer did not answer a relayed UPDATE
// after relayAttempts tries; the UPDATE is answered SERVFAIL.
const ReasonPeerNotUpdated = "PeerNotUpdated"

// The relay's bounds, within the client's own deadline: each try of one peer, the tries per
// peer, and the pause between them.
const (
	relayTimeout  = 2 * time.Second
	relayAttempts = 3
	relayPause    = 100 * time.Millisecond
)

// relayed reports whether req carries RelayOption.
func relayed(req *dns.Msg) bool {
	opt := req.IsEdns0()
	if opt == nil {
		return false
	}
	for _, o := range opt.Option {
		if o.Option() == RelayOption {
			return true
		}
	}
	return false
}

// peersOf returns the clusters an UPDATE of b's DNSZone is relayed to: none unless some Gslb
// that may use the zone publishes into it (its zone then has a copy in every peer cluster);
// else the peers the Gslb controller uses, --ext-gslb-clusters (Applier.Peers) when set,
// otherwise the peers it found in the edge NS set, as its status.peers records them (every
// Gslb of the zone, once each). A Gslb may use the zone from the DNSZone's namespace or from
// one its delegation.allowedNamespaces lists, as for publishing: another namespace's Gslb
// naming the zone neither makes its UPDATEs relayed nor chooses their peers.
func (a *Applier) peersOf(ctx context.Context, b dynupdate.Binding) ([]string, error) {
	var list dnsv1.GslbList
	if err := a.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list Gslbs: %w", err)
	}
	var zone *dnsv1.DNSZone
	var gslbs []dnsv1.Gslb
	for _, g := range list.Items {
		if g.Spec.ZoneRef.NamespacedName(g.Namespace) != b.DNSZone {
			continue
		}
		if g.Namespace != b.DNSZone.Namespace && zone == nil {
			zone = &dnsv1.DNSZone{}
			if err := a.Client.Get(ctx, b.DNSZone, zone); err != nil {
				return nil, fmt.Errorf("get DNSZone %s: %w", b.DNSZone, err)
			}
		}
		if g.Namespace == b.DNSZone.Namespace || (zone.Spec.Delegation != nil && slices.Contains(zone.Spec.Delegation.AllowedNamespaces, g.Namespace)) {
			gslbs = append(gslbs, g)
		}
	}
	if len(gslbs) == 0 {
		return nil, nil
	}
	if len(a.Peers) > 0 {
		return a.Peers, nil
	}
	var peers []string
	for _, g := range gslbs {
		for _, p := range g.Status.Peers {
			if p.Address != "" {
				peers = append(peers, p.Address)
			}
		}
	}
	slices.Sort(peers)
	return slices.Compact(peers), nil
}

// relay sends req, written here, to every peer over TCP, marked with RelayOption and signed
// again with b's key (each cluster binds the same key Secret to its copy of the zone), all at
// once, each up to relayAttempts times while it does not answer, and returns NOERROR once every
// peer accepted it; SERVFAIL naming the peers that answered otherwise or never answered (these
// also in a PeerNotUpdated Event), so that NOERROR means every cluster serves the change
// (docs/certificates.md, "Guarantees").
func (a *Applier) relay(ctx context.Context, req *dns.Msg, b dynupdate.Binding, peers []string) (int, error) {
	m := relayMessage(req)
	results := make([]relayResult, len(peers))
	var wg sync.WaitGroup
	for i, peer := range peers {
		wg.Go(func() { results[i] = a.relayTo(ctx, m, b, peer) })
	}
	wg.Wait()
	zoneRef := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: b.DNSZone.Namespace, Name: b.DNSZone.Name}}
	var failed []string
	for _, r := range results {
		switch {
		case r.err != nil:
			a.Log.Info("Gslb peer did not take a relayed UPDATE", "peer", r.peer, "dnsZone", b.DNSZone.String(), "error", r.err.Error())
			a.event(zoneRef, corev1.EventTypeWarning, ReasonPeerNotUpdated, "key %s: peer %s did not answer the relayed UPDATE: %v", b.Secret, r.peer, r.err)
			failed = append(failed, fmt.Sprintf("%s did not answer (%v)", r.peer, r.err))
		case r.rcode != dns.RcodeSuccess:
			failed = append(failed, fmt.Sprintf("%s answered %s", r.peer, dns.RcodeToString[r.rcode]))
		}
	}
	if len(failed) > 0 {
		return dns.RcodeServerFailure, fmt.Errorf("Gslb peers did not take the relayed UPDATE: %s", strings.Join(failed, "; "))
	}
	return dns.RcodeSuccess, nil
}

// relayResult is one peer's answer to a relayed UPDATE: its rcode, or err when it gave none.
type relayResult struct {
	peer  string
	rcode int
	err   error
}

// relayMessage is req without its TSIG and OPT, with a new ID and RelayOption.
func relayMessage(req *dns.Msg) *dns.Msg {
	m := req.Copy()
	var extra []dns.RR
	for _, rr := range m.Extra {
		if t := rr.Header().Rrtype; t != dns.TypeTSIG && t != dns.TypeOPT {
			extra = append(extra, rr)
		}
	}
	m.Extra = extra
	m.Id = dns.Id()
	m.SetEdns0(dns.DefaultMsgSize, false)
	opt := m.IsEdns0()
	opt.Option = append(opt.Option, &dns.EDNS0_LOCAL{Code: RelayOption, Data: []byte("dnsplane")})
	return m
}

// relayTo sends m to peer, signed with b's key, until it answers: at most relayAttempts tries
// of relayTimeout each, relayPause apart, within ctx. Every try is the same signed message
// (one ID and time signed, so one MAC): a peer that took an earlier try answers this one from
// that try's outcome (its replay memory) and never applies the UPDATE twice.
func (a *Applier) relayTo(ctx context.Context, m *dns.Msg, b dynupdate.Binding, peer string) relayResult {
	res := relayResult{peer: peer}
	signed := m.Copy()
	signed.SetTsig(b.Key.Name, b.Key.Algorithm, dnswire.TSIGFudge, a.clock().Now().Unix())
	for try := 1; ; try++ {
		pm := signed.Copy()
		c := &dns.Client{Net: "tcp", Timeout: relayTimeout, TsigProvider: b.Key.ClientProvider()}
		pctx, cancel := context.WithTimeout(ctx, relayTimeout)
		r, _, err := c.ExchangeContext(pctx, pm, peer)
		cancel()
		if err == nil && r != nil {
			res.rcode, res.err = r.Rcode, nil
			return res
		}
		res.err = fmt.Errorf("try %d of %d: %w", try, relayAttempts, err)
		if try == relayAttempts || ctx.Err() != nil {
			return res
		}
		t := time.NewTimer(relayPause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return res
		}
	}
}
