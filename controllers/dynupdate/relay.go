package dynupdate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/dynupdate"
)

// RelayOption is the EDNS0 option code (RFC 6891 §6.1.2, the local/experimental range 65001 to
// 65534) that marks an UPDATE one cluster relays to its Gslb peers: a peer applies it and does
// not relay it again.
const RelayOption = 65034

// ReasonPeerNotUpdated (Warning, on the DNSZone): a Gslb peer did not answer a relayed UPDATE
// in time; the UPDATE was answered without it.
const ReasonPeerNotUpdated = "PeerNotUpdated"

// relayTimeout bounds one relayed UPDATE, within the client's own deadline.
const relayTimeout = 5 * time.Second

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

// gslbZone reports whether some Gslb in b's DNSZone's namespace publishes into it: its zone has
// a copy in every peer cluster, which UPDATEs are relayed to.
func (a *Applier) gslbZone(ctx context.Context, b dynupdate.Binding) (bool, error) {
	var list dnsv1.GslbList
	if err := a.Client.List(ctx, &list, client.InNamespace(b.DNSZone.Namespace)); err != nil {
		return false, fmt.Errorf("list Gslbs: %w", err)
	}
	for _, g := range list.Items {
		ns := g.Spec.ZoneRef.Namespace
		if ns == "" {
			ns = g.Namespace
		}
		if ns == b.DNSZone.Namespace && g.Spec.ZoneRef.Name == b.DNSZone.Name {
			return true, nil
		}
	}
	return false, nil
}

// relay sends req, written here, to every peer (Applier.Peers) over TCP, marked with
// RelayOption and signed again with b's key (each cluster binds the same key Secret to its
// copy of the zone), all at once, and returns NOERROR once every peer that answered accepted
// it; SERVFAIL naming the first that answered otherwise. A peer that does not answer within
// relayTimeout is named in a PeerNotUpdated Event and left out (docs/design.md, "Gslb zones").
func (a *Applier) relay(ctx context.Context, req *dns.Msg, b dynupdate.Binding) (int, error) {
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
	type result struct {
		peer  string
		rcode int
		err   error
	}
	results := make([]result, len(a.Peers))
	var wg sync.WaitGroup
	for i, peer := range a.Peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pm := m.Copy()
			pm.SetTsig(b.Key.Name, b.Key.Algorithm, dnswire.TSIGFudge, a.clock().Now().Unix())
			c := &dns.Client{Net: "tcp", Timeout: relayTimeout, TsigProvider: b.Key.ClientProvider()}
			pctx, cancel := context.WithTimeout(ctx, relayTimeout)
			defer cancel()
			r, _, err := c.ExchangeContext(pctx, pm, peer)
			results[i] = result{peer: peer, err: err}
			if r != nil {
				results[i].rcode = r.Rcode
			}
		}()
	}
	wg.Wait()
	zoneRef := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: b.DNSZone.Namespace, Name: b.DNSZone.Name}}
	for _, r := range results {
		switch {
		case r.err != nil && r.rcode == 0:
			a.Log.Info("Gslb peer did not take a relayed UPDATE", "peer", r.peer, "dnsZone", b.DNSZone.String(), "error", r.err.Error())
			a.event(zoneRef, corev1.EventTypeWarning, ReasonPeerNotUpdated, "key %s: peer %s did not answer the relayed UPDATE: %v", b.Secret, r.peer, r.err)
		case r.rcode != dns.RcodeSuccess:
			return dns.RcodeServerFailure, fmt.Errorf("Gslb peer %s answered the relayed UPDATE %s", r.peer, dns.RcodeToString[r.rcode])
		}
	}
	return dns.RcodeSuccess, nil
}
