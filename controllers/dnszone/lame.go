package dnszone

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// lookupTimeout bounds the out-of-bailiwick address lookups of one delegation check.
const lookupTimeout = 10 * time.Second

// HostResolver resolves host names to addresses; *net.Resolver satisfies it.
type HostResolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// delegation is what checkDelegation found for a zone's NS set.
type delegation struct {
	// glue are the A/AAAA sets of the in-bailiwick NS names, from the zone's own records.
	glue []dnsv1.Endpoint
	// missing are the NS names found without an address, in NS order: in-bailiwick names
	// without glue, and out-of-bailiwick names looked up in vain (others are not looked up).
	missing []string
	// lame: no NS name has an address.
	lame bool
}

// checkDelegation applies the lame-delegation rule (docs/api.md, "Parent link") to z's NS set
// under parent. An in-bailiwick name (RFC 1034 §4.2.1: at or below the zone) has an address when
// the zone itself holds an A or AAAA set for it, read through its zone writer; that set is its
// glue. Any other name has one when it resolves: see resolves. Out-of-bailiwick names are looked
// up only when no in-bailiwick name has an address, and only until one resolves. Errors are the
// provider's, reading the zone.
func (r *Reconciler) checkDelegation(ctx context.Context, z, parent *dnsv1.DNSZone) (delegation, error) {
	var d delegation
	var outside []string
	inside := map[string]bool{}
	for _, ns := range z.Status.NameServers {
		if dnswire.IsSubdomain(ns, z.Spec.Zone) {
			inside[ns] = true
		} else {
			outside = append(outside, ns)
		}
	}
	var err error
	if len(inside) > 0 {
		if d.glue, err = r.glue(ctx, z, inside); err != nil {
			return delegation{}, err
		}
	}
	addressed, checked := map[string]bool{}, inside
	for _, g := range d.glue {
		addressed[g.DNSName] = true
	}
	unsure := false // a lookup failed rather than answered
	if len(addressed) == 0 && len(outside) > 0 {
		lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		defer cancel()
		servers := r.lookupServers(ctx, z, parent)
		for _, ns := range outside {
			ok, answered := r.resolves(lctx, servers, ns)
			checked[ns] = true
			unsure = unsure || !answered
			if ok {
				addressed[ns] = true
				break
			}
		}
	}
	for _, ns := range z.Status.NameServers {
		if checked[ns] && !addressed[ns] {
			d.missing = append(d.missing, ns)
		}
	}
	// A confirmed link is not withdrawn for lookups that failed: a resolver outage is not proof.
	d.lame = len(addressed) == 0 && !(unsure && meta.IsStatusConditionTrue(z.Status.Conditions, dnsv1.ConditionParentLinkCreated))
	return d, nil
}

// lookupServers returns where out-of-bailiwick NS names are looked up: the DNS addresses
// (host:port) of the child's and the parent's providers (DNS_ADDRESS, else --dns-resolver, else
// the embedded server for local zones), without duplicates; none means the system resolver.
func (r *Reconciler) lookupServers(ctx context.Context, z, parent *dnsv1.DNSZone) []string {
	var out []string
	for _, o := range []*dnsv1.DNSZone{z, parent} {
		res, err := r.Providers.Resolve(ctx, o.Namespace, o.Spec.ProviderRef.Name)
		if err == nil && res.DNSAddress != "" && !slices.Contains(out, res.DNSAddress) {
			out = append(out, res.DNSAddress)
		}
	}
	return out
}

// resolves reports whether name has at least one A or AAAA record: the first of servers that
// answers decides (a server that fails or refuses passes to the next); with no servers, the
// system resolver (Reconciler.NSResolver, default net.DefaultResolver) decides. answered is false
// when no server gave a definite answer (errors, timeouts, refusals).
func (r *Reconciler) resolves(ctx context.Context, servers []string, name string) (ok, answered bool) {
	logger := log.FromContext(ctx)
	if len(servers) == 0 {
		res := r.NSResolver
		if res == nil {
			res = net.DefaultResolver
		}
		addrs, err := res.LookupNetIP(ctx, "ip", name)
		if err != nil {
			logger.V(1).Info("name server does not resolve", "name", name, "error", err.Error())
			var dnsErr *net.DNSError
			return false, errors.As(err, &dnsErr) && dnsErr.IsNotFound
		}
		return len(addrs) > 0, true
	}
	for _, s := range servers {
		addrs, err := r.dns().Addresses(ctx, s, name)
		if err != nil {
			logger.V(1).Info("name server lookup failed", "name", name, "server", s, "error", err.Error())
			continue
		}
		return len(addrs) > 0, true
	}
	return false, false
}

// lameMessage is the LameDelegation message: stable from poll to poll (no error text).
func lameMessage(z *dnsv1.DNSZone, d delegation) string {
	if len(d.missing) == 0 {
		return fmt.Sprintf("%s has no name servers (status.nameServers is empty): the parent link is not published", z.Spec.Zone)
	}
	return fmt.Sprintf("no name server of %s has an address, so no resolver can follow a delegation to %s: "+
		"add an A or AAAA record for an in-zone name server (e.g. %s), or use name servers that resolve; "+
		"the parent link is not published until then",
		z.Spec.Zone, strings.Join(d.missing, ", "), d.missing[0])
}

// glueSets converts glue endpoints to the record sets the scraper must see in the parent.
func glueSets(glue []dnsv1.Endpoint) []provider.RecordSet {
	out := make([]provider.RecordSet, 0, len(glue))
	for _, g := range glue {
		out = append(out, provider.RecordSet{Name: g.DNSName, Type: g.RecordType, TTL: int64(g.RecordTTL), Targets: slices.Clone([]string(g.Targets))})
	}
	return out
}
