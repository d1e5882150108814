package local

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// SetNameServerAddrs makes addrs the glue of the embedded server's name server ns1.<zone>
// (zonedb.NameServer): in the zones the store creates from now on, and in every zone this
// provider created (one with a caller reference) whose apex NS set names ns1.<zone>, where the
// A and AAAA sets at ns1.<zone> are rewritten to addrs' IPv4 and IPv6 addresses (a family
// without an address loses its set), one store transaction per zone that differs: its SOA
// serial moves on and secondaries are sent a NOTIFY. The sets keep their TTL.
//
// Left as they are: zones without a caller reference (hand-written zone files), zones whose
// apex NS set does not name ns1.<zone>, and a glue set that a dnsplane registry record claims
// (a DNSEndpoint published it, which it can only do where the store had written none): the
// rule of never overwriting what another owner holds.
//
// It returns the origins whose glue changed, sorted. Errors: ctx's and ErrNotReady before
// anything is done; provider.ErrInvalidChange when addrs holds no usable address (every zone
// would lose its glue: the caller keeps the old glue instead); otherwise the zones that could
// not be written, joined, after every other zone was rewritten.
func (p *Provider) SetNameServerAddrs(ctx context.Context, addrs []netip.Addr) ([]string, error) {
	if err := p.check(ctx); err != nil {
		return nil, err
	}
	if len(zonedb.GlueSets("ns1.", addrs)) == 0 {
		return nil, fmt.Errorf("set the name server's glue: %w: no usable address in %v", provider.ErrInvalidChange, addrs)
	}
	p.store.SetNameServerAddrs(addrs)
	var changed []string
	var errs []error
	for _, zi := range p.store.Zones() {
		if err := ctx.Err(); err != nil {
			return changed, errors.Join(append(errs, err)...)
		}
		ns := zonedb.NameServer(zi.Origin)
		if zi.Meta.CallerReference == "" || !slices.Contains(zi.NameServers, ns) {
			continue
		}
		rewrote := false
		err := p.store.Update(zi.Origin, func(tx *zonedb.Tx) (err error) {
			rewrote, err = rewriteGlue(tx, ns, addrs)
			return err
		})
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("rewrite the glue of %s: %w", ns, mapErr(err)))
		case rewrote:
			changed = append(changed, zi.Origin)
		}
	}
	return changed, errors.Join(errs...)
}

// rewriteGlue puts the A and AAAA sets of name server ns in tx to addrs (zonedb.GlueSets),
// keeping each set's TTL, deleting a family that addrs lacks, and leaving a set alone that a
// registry record claims (claimed). It reports whether it changed anything; an error is the
// store's refusal of a set (zonedb.ErrInvalidRRSet), and nothing is written then.
func rewriteGlue(tx *zonedb.Tx, ns string, addrs []netip.Addr) (bool, error) {
	want := map[uint16]zonedb.RRSet{}
	for _, rs := range zonedb.GlueSets(ns, addrs) {
		want[rs.Type] = rs
	}
	var todo []uint16
	for _, typ := range []uint16{dns.TypeA, dns.TypeAAAA} {
		cur, ok := tx.Get(zonedb.SetKey{Name: ns, Type: typ})
		w, wanted := want[typ]
		if ok == wanted && (!ok || sameRecords(cur.RRs, w.RRs)) {
			continue
		}
		todo = append(todo, typ)
	}
	if len(todo) == 0 {
		return false, nil
	}
	claims := claimed(tx, ns)
	changed := false
	for _, typ := range todo {
		if claims[typ] {
			continue
		}
		k := zonedb.SetKey{Name: ns, Type: typ}
		w, wanted := want[typ]
		if !wanted {
			changed = tx.Delete(k) || changed
			continue
		}
		if cur, ok := tx.Get(k); ok {
			w.TTL = cur.TTL
		}
		if err := tx.Put(w); err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
}

// claimed returns the types (A, AAAA) of name server ns = ns1.<origin> that a dnsplane registry
// record in tx claims: a TXT set at dp-<type>-<hash>-ns1.<origin>, the form registry.Name gives a
// name one label below the apex (provider.ParseRegistryLabel).
func claimed(tx *zonedb.Tx, ns string) map[uint16]bool {
	first, origin, _ := strings.Cut(ns, ".")
	out := map[uint16]bool{}
	for _, rs := range tx.RRSets() {
		if rs.Type != dns.TypeTXT {
			continue
		}
		label, parent, _ := strings.Cut(rs.Name, ".")
		typ, _, suffix, ok := provider.ParseRegistryLabel(label)
		if !ok || parent != origin || suffix != first {
			continue
		}
		if t := dns.StringToType[strings.ToUpper(typ)]; t == dns.TypeA || t == dns.TypeAAAA {
			out[t] = true
		}
	}
	return out
}

// sameRecords reports whether a and b hold the same records, in any order (RFC 2181 §5: a set
// has no order and no duplicates).
func sameRecords(a, b []dns.RR) bool {
	if len(a) != len(b) {
		return false
	}
	for _, rr := range a {
		if !slices.ContainsFunc(b, func(o dns.RR) bool { return dns.IsDuplicate(rr, o) }) {
			return false
		}
	}
	return true
}
