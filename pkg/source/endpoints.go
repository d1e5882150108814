package source

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// forHost returns host's endpoints of targets (IP addresses or host names, already valid): one
// A set of the IPv4 addresses, one AAAA set of the IPv6 ones, and a CNAME for a host name.
// A CNAME cannot share its name with other data (RFC 1034 §3.6.2), so a host name beside
// addresses, or a second host name, is left out and reported, naming field.
func forHost(host string, targets []string, a Annotations, field string) ([]dnsv1.Endpoint, []Problem) {
	var v4, v6, names dnsv1.Targets
	for _, t := range targets {
		switch ip, err := netip.ParseAddr(t); {
		case err != nil:
			names = append(names, t)
		case ip.Is4():
			v4 = append(v4, t)
		default:
			v6 = append(v6, t)
		}
	}
	var probs []Problem
	var out []dnsv1.Endpoint
	add := func(typ string, ts dnsv1.Targets) {
		if len(ts) > 0 {
			out = append(out, a.endpoint(host, typ, ts))
		}
	}
	add("A", dedupe(v4))
	add("AAAA", dedupe(v6))
	names = dedupe(names)
	switch {
	case len(names) > 0 && len(v4)+len(v6) > 0:
		probs = append(probs, problem(dnsv1.ReasonInvalidTarget, "%s: host name targets %v beside IP addresses for %s: a CNAME cannot share its name (RFC 1034 §3.6.2); only the addresses are published", field, []string(names), host))
	case len(names) > 1:
		probs = append(probs, problem(dnsv1.ReasonInvalidTarget, "%s: %d host name targets for %s: a CNAME has one target (RFC 1034 §3.6.2); only %s is published", field, len(names), host, names[0]))
		add("CNAME", names[:1])
	default:
		add("CNAME", names)
	}
	return out, probs
}

// endpoint returns one endpoint with a's TTL, set identifier and weight; targets are capped at
// dnsv1.MaxTargets (the first ones in sorted order).
func (a Annotations) endpoint(host, typ string, targets dnsv1.Targets) dnsv1.Endpoint {
	if len(targets) > dnsv1.MaxTargets {
		targets = targets[:dnsv1.MaxTargets]
	}
	e := dnsv1.Endpoint{DNSName: host, RecordType: typ, Targets: targets, RecordTTL: a.TTL, SetIdentifier: a.SetIdentifier}
	if a.Weight != nil {
		e.ProviderSpecific = dnsv1.ProviderSpecific{{Name: provider.KeyWeight, Value: strconv.FormatInt(*a.Weight, 10)}}
	}
	return e
}

func dedupe(ts dnsv1.Targets) dnsv1.Targets {
	slices.Sort(ts)
	return slices.Compact(ts)
}

// normalize sorts endpoints by name, type and set identifier, merging the targets of
// duplicates, so that the same input always gives the same spec (no update churn).
func normalize(eps []dnsv1.Endpoint) []dnsv1.Endpoint {
	key := func(e dnsv1.Endpoint) string { return e.DNSName + "\x00" + e.RecordType + "\x00" + e.SetIdentifier }
	slices.SortStableFunc(eps, func(x, y dnsv1.Endpoint) int { return cmp.Compare(key(x), key(y)) })
	var out []dnsv1.Endpoint
	for _, e := range eps {
		if n := len(out); n > 0 && key(out[n-1]) == key(e) {
			if e.RecordType != "CNAME" {
				out[n-1].Targets = dedupe(append(out[n-1].Targets, e.Targets...))
			}
			continue
		}
		e.Targets = slices.Clone(e.Targets)
		out = append(out, e)
	}
	return out
}

// KeepTTLs gives each endpoint of desired that has no TTL the TTL of the endpoint of the same
// name, type and set identifier in previous: after an invalid ttl annotation, what was published
// keeps its TTL (Annotations.TTLInvalid).
func KeepTTLs(desired, previous []dnsv1.Endpoint) {
	ttl := map[string]dnsv1.TTL{}
	for _, e := range previous {
		ttl[e.DNSName+"\x00"+e.RecordType+"\x00"+e.SetIdentifier] = e.RecordTTL
	}
	for i, e := range desired {
		if e.RecordTTL == 0 {
			desired[i].RecordTTL = ttl[e.DNSName+"\x00"+e.RecordType+"\x00"+e.SetIdentifier]
		}
	}
}

// DomainFilter is --domain-filter and --exclude-domains, as external-dns applies them: a name
// passes when it equals or is below one of Include (every name when Include is empty) and is not
// equal to or below any of Exclude. Entries are DNS names, case-insensitive, a leading or
// trailing dot ignored.
type DomainFilter struct {
	Include, Exclude []string
}

// Match reports whether name passes the filter.
func (f DomainFilter) Match(name string) bool {
	name = dnswire.Dotless(strings.TrimPrefix(name, "*."))
	under := func(list []string) bool {
		return slices.ContainsFunc(list, func(d string) bool {
			d = dnswire.Dotless(strings.TrimPrefix(d, "."))
			return name == d || d != "" && dnswire.IsSubdomain(name, d)
		})
	}
	return (len(f.Include) == 0 || under(f.Include)) && !under(f.Exclude)
}

// Filter returns the endpoints whose names pass.
func (f DomainFilter) Filter(eps []dnsv1.Endpoint) []dnsv1.Endpoint {
	return slices.DeleteFunc(eps, func(e dnsv1.Endpoint) bool { return !f.Match(e.DNSName) })
}

// Finish normalizes eps, drops the names the domain filter refuses and caps the list at
// dnsv1.MaxEndpoints, reporting what it cut.
func (f DomainFilter) Finish(eps []dnsv1.Endpoint, probs []Problem) ([]dnsv1.Endpoint, []Problem) {
	eps = f.Filter(normalize(eps))
	if len(eps) == 0 {
		return nil, probs
	}
	if len(eps) > dnsv1.MaxEndpoints {
		probs = append(probs, problem(dnsv1.ReasonInvalidTarget, "%d record sets, more than a DNSEndpoint holds (%d); the first %d in name order are published", len(eps), dnsv1.MaxEndpoints, dnsv1.MaxEndpoints))
		eps = eps[:dnsv1.MaxEndpoints]
	}
	return eps, probs
}
