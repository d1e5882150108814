package gslb

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

// planInput is what the observe phase read, the only input of planRecords.
type planInput struct {
	// GeoTag is this cluster's (--geo-tag).
	GeoTag string
	Spec   dnsv1.GslbSpec
	Local  *local
	// PeerTargets are the peers' targets by host, then geo tag.
	PeerTargets map[string]map[string][]string
	// Capable: the provider serves the strategy's weighted or geo record sets.
	Capable bool
	// Decided holds, for the hosts judged by spec.healthCheck, the answer that replaces
	// gslb.Compute's and the verdict record to publish (decideHealth).
	Decided map[string]decidedHost
	// Witness: this manager is a witness; only the verdict records are published.
	Witness bool
}

// planResult is the records and status planRecords computed.
type planResult struct {
	// Endpoints are the owned DNSEndpoint's: per host, localtargets.<host> with this cluster's
	// healthy targets, and <host> with the strategy's answer (weighted or geo sets only when
	// Capable).
	Endpoints []dnsv1.Endpoint
	// ServiceHealth and HealthyRecords are status.serviceHealth and status.healthyRecords.
	ServiceHealth  map[string]dnsv1.ServiceHealth
	HealthyRecords map[string][]string
	// Served is the number of targets each planned host serves, for the metric.
	Served map[string]int
	// Unhealthy explains this cluster's unhealthy hosts, for the condition message.
	Unhealthy []string
	// AnyTargets: some host serves some target.
	AnyTargets bool
	// StrategyErr is gslb.Compute's error for an invalid spec.strategy; the other fields then
	// hold the hosts before the failing one, and Endpoints must not be written.
	StrategyErr error
}

// strategyType is s.Type, or roundRobin when it is empty: the CRD's default
// (+kubebuilder:default on GslbSpec.Strategy and GslbStrategy.Type), applied here too for
// Gslbs stored under an older CRD that had no such default (docs/install.md, "Upgrade").
func strategyType(s dnsv1.GslbStrategy) string {
	if s.Type == "" {
		return string(dnsv1.GslbRoundRobin)
	}
	return string(s.Type)
}

// planRecords computes, per host in in.Local's order, this cluster's healthy targets and the
// strategy's answer over them and the peers' (gslb.Compute), or, for a host in in.Decided, the
// health checks' answer and the verdict record (TXT at health.VerdictsName). The record TTL is
// spec.strategy.dnsTtlSeconds in seconds, 30 when unset. Pure.
func planRecords(in planInput) planResult {
	ttl := in.Spec.Strategy.DNSTTLSeconds
	if ttl <= 0 {
		ttl = 30
	}
	loc := in.Local
	p := planResult{ServiceHealth: map[string]dnsv1.ServiceHealth{}, HealthyRecords: map[string][]string{}, Served: map[string]int{}}
	if loc.missing != "" && len(loc.hosts) == 0 {
		// No host is known (an Ingress gives them): the resource itself is NotFound.
		p.ServiceHealth[string(in.Spec.ResourceRef.Kind)+"/"+in.Spec.ResourceRef.Name] = dnsv1.ServiceNotFound
	}
	for _, h := range loc.hosts {
		if in.Witness {
			planWitness(&p, h, in.Decided[h], ttl)
			continue
		}
		p.ServiceHealth[h] = loc.health[h]
		if why := loc.why[h]; why != "" {
			p.Unhealthy = append(p.Unhealthy, why)
		}
		mine := loc.healthy(h)
		p.Endpoints = append(p.Endpoints, addressEndpoints(gslb.LocalTargetsName(h), mine, ttl, "", nil)...)
		d, decided := in.Decided[h]
		ans := d.Answer
		if d.VerdictTXT != "" {
			p.Endpoints = append(p.Endpoints, dnsv1.Endpoint{DNSName: health.VerdictsName(h), RecordType: "TXT", RecordTTL: dnsv1.TTL(ttl), Targets: dnsv1.Targets{d.VerdictTXT}})
		}
		if !decided {
			byGeo := map[string][]string{in.GeoTag: mine}
			for geo, t := range in.PeerTargets[h] {
				byGeo[geo] = t
			}
			var err error
			if ans, err = computeStrategy(in.Spec.Strategy).Compute(byGeo); err != nil {
				p.StrategyErr = err
				return p
			}
		}
		served, eps, err := answerEndpoints(h, ans, ttl, strategyType(in.Spec.Strategy), in.Capable)
		if err != nil {
			p.StrategyErr = err
			return p
		}
		p.Endpoints = append(p.Endpoints, eps...)
		if len(served) > 0 {
			p.AnyTargets = true
			p.HealthyRecords[h] = served
		}
		p.Served[h] = len(served)
	}
	return p
}

// planWitness plans one host of a witness: its verdict record alone (when decided), and the
// targets its decision would serve, for status.healthyRecords.
func planWitness(p *planResult, host string, d decidedHost, ttl int64) {
	if d.VerdictTXT == "" {
		return
	}
	p.Endpoints = append(p.Endpoints, dnsv1.Endpoint{DNSName: health.VerdictsName(host), RecordType: "TXT", RecordTTL: dnsv1.TTL(ttl), Targets: dnsv1.Targets{d.VerdictTXT}})
	served := d.Answer.AllTargets()
	if len(served) > 0 {
		p.AnyTargets = true
		p.HealthyRecords[host] = served
	}
	p.Served[host] = len(served)
}

// computeStrategy is spec.strategy as gslb.Strategy, its type defaulted (strategyType).
func computeStrategy(s dnsv1.GslbStrategy) gslb.Strategy {
	return gslb.Strategy{Type: strategyType(s), PrimaryGeoTag: s.PrimaryGeoTag, Weights: s.Weights,
		GeoRegions: s.GeoRegions, DefaultGeoTag: s.DefaultGeoTag}
}

// answerEndpoints returns the targets host serves by ans (sorted, unique) and its endpoints: one
// weighted set per geo tag when weighted, one geo set per geo tag (set identifier the tag, its
// regions in pkg/geo's labels as providerSpecific) when geo, none of either unless capable;
// else one plain set. An error when a geo tag's regions do not fit its labels.
func answerEndpoints(host string, ans gslb.Answer, ttl int64, strategy string, capable bool) ([]string, []dnsv1.Endpoint, error) {
	var served []string
	var eps []dnsv1.Endpoint
	switch strategy {
	case gslb.Weighted:
		for _, ws := range ans.Weighted {
			served = append(served, ws.Targets...)
			if capable {
				w := ws.Weight
				eps = append(eps, addressEndpoints(host, ws.Targets, ttl, ws.GeoTag, &w)...)
			}
		}
	case gslb.Geo:
		for _, gs := range ans.Geo {
			served = append(served, gs.Targets...)
			if !capable {
				continue
			}
			kv, err := geo.EncodeLabels(geo.Set{Tag: gs.GeoTag, Regions: gs.Regions, Default: gs.Default})
			if err != nil {
				return nil, nil, err
			}
			var ps dnsv1.ProviderSpecific
			for _, p := range kv {
				ps = append(ps, dnsv1.ProviderSpecificProperty{Name: p[0], Value: p[1]})
			}
			for _, e := range addressEndpoints(host, gs.Targets, ttl, gs.GeoTag, nil) {
				e.ProviderSpecific = ps
				eps = append(eps, e)
			}
		}
	default:
		served = ans.Targets
		eps = append(eps, addressEndpoints(host, ans.Targets, ttl, "", nil)...)
	}
	slices.Sort(served)
	return slices.Compact(served), eps, nil
}

// peerErrors returns one line per failed peer (and the discovery error first), for the
// condition message.
func peerErrors(discoveryErr error, peers []dnsv1.PeerStatus) []string {
	var out []string
	if discoveryErr != nil {
		out = append(out, "discovering peers from the edge NS set: "+discoveryErr.Error())
	}
	for _, p := range peers {
		if p.Error != "" {
			out = append(out, fmt.Sprintf("%s (%s): %s", p.GeoTag, p.Address, p.Error))
		}
	}
	return out
}

// readyInput is what Ready is decided from.
type readyInput struct {
	Capable bool
	// Strategy is spec.strategy.type, for the NotCapable message.
	Strategy     string
	ZoneName     string
	EndpointName string
	// EndpointReady is the owned DNSEndpoint's Ready at its generation, nil when none yet.
	EndpointReady *metav1.Condition
	// Missing says the referenced resource does not exist, "" when it does.
	Missing    string
	AnyTargets bool
	Unhealthy  []string
	PeerErrors []string
	// Hosts is the number of hosts published.
	Hosts int
	// HealthChecked: spec.healthCheck is acted on; AllDown, Isolated and Notes are
	// healthPlan's lines.
	HealthChecked            bool
	AllDown, Isolated, Notes []string
	// Witness: this manager is a witness (it publishes verdict records only).
	Witness bool
}

// readyCondition decides Ready (status, reason, message), first match wins: the provider is not
// weighted- or geo-capable (NotCapable); the DNSEndpoint failed (its ZoneNotFound,
// AwaitingZone (its zone exists but is not available yet: a wait, its Event Normal),
// DelegationNotAllowed (the zone of another namespace that does not allow this one) or
// NotCapable (a record the provider cannot hold: a geo CIDR region on Route 53), else
// ProviderError);
// a witness publishes its verdict records (Published); the resource is missing (ResourceNotFound); no cluster has targets, or every target of a host
// is down by the health checks (NoHealthyTargets); this cluster is isolated (Isolated, True); a
// peer failed (PeerErrors); else Published. Pure.
func readyCondition(in readyInput) (bool, string, string) {
	ep := in.EndpointReady
	switch {
	case !in.Capable:
		routing := "weighted"
		if in.Strategy == gslb.Geo {
			routing = "geo"
		}
		return false, dnsv1.ReasonNotCapable, "strategy " + routing + " needs " + routing + " routing, which the provider of DNSZone " + in.ZoneName + " does not have; only localtargets records are published"
	case ep != nil && ep.Status != metav1.ConditionTrue && ep.Reason != dnsv1.ReasonPublished:
		reason := dnsv1.ReasonProviderError
		if ep.Reason == dnsv1.ReasonZoneNotFound || ep.Reason == dnsv1.ReasonAwaitingZone || ep.Reason == dnsv1.ReasonDelegationNotAllowed || ep.Reason == dnsv1.ReasonNotCapable {
			reason = ep.Reason
		}
		return false, reason, fmt.Sprintf("DNSEndpoint %s: %s: %s", in.EndpointName, ep.Reason, ep.Message)
	case in.Witness:
		return true, dnsv1.ReasonPublished, fmt.Sprintf("witness: the verdict records of %d hosts published (no targets of its own, no answers)", in.Hosts)
	case in.Missing != "":
		msg := in.Missing + ": this cluster serves no targets"
		if in.AnyTargets {
			msg += "; peers' targets are still published"
		}
		return false, dnsv1.ReasonResourceNotFound, msg
	case !in.AnyTargets:
		msg := "no cluster has healthy targets"
		if len(in.Unhealthy) > 0 {
			msg += "; here: " + strings.Join(in.Unhealthy, "; ")
		}
		return false, dnsv1.ReasonNoHealthyTargets, msg
	case len(in.AllDown) > 0:
		return false, dnsv1.ReasonNoHealthyTargets, strings.Join(in.AllDown, "; ")
	case len(in.Isolated) > 0:
		return true, dnsv1.ReasonIsolated, "isolated: " + strings.Join(append(in.Isolated, in.Notes...), "; ")
	case len(in.PeerErrors) > 0 && in.HealthChecked:
		return false, dnsv1.ReasonPeerErrors, "peers did not answer; their targets as last read stay candidates, judged by the health checks: " + strings.Join(in.PeerErrors, "; ")
	case len(in.PeerErrors) > 0:
		return false, dnsv1.ReasonPeerErrors, "peers count as having no healthy targets: " + strings.Join(in.PeerErrors, "; ")
	}
	msg := fmt.Sprintf("%d hosts published", in.Hosts)
	if len(in.Unhealthy) > 0 {
		msg += "; here: " + strings.Join(in.Unhealthy, "; ")
	}
	if len(in.Notes) > 0 {
		msg += "; " + strings.Join(in.Notes, "; ")
	}
	return true, dnsv1.ReasonPublished, msg
}
