package gslb

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
	"github.com/dnsplane/dnsplane/pkg/gslb/probe"
)

// The API's healthCheck defaults (apis/v1alpha1, GslbHealthCheck), applied again here for an
// object read without them (the API server applies them at admission).
const (
	defaultProbeInterval    = 10 * time.Second
	defaultProbeTimeout     = 2 * time.Second
	defaultFailureThreshold = 3
	defaultSuccessThreshold = 1
	defaultIsolationHold    = 300 * time.Second
)

// probeCheck maps spec.healthCheck to the probe.Check of one of the Gslb's hosts (host,
// canonical): protocol (default HTTP), port, path, the Host header and TLS name (host when
// healthCheck.host is empty; none for TCP), expectedStatus, timeoutSeconds,
// insecureSkipVerify, intervalSeconds and the two thresholds, each with its API default when
// zero. The error names a bad expectedStatus (admission refuses those already).
func probeCheck(hc *dnsv1.GslbHealthCheck, host string) (probe.Check, error) {
	proto := string(hc.Protocol)
	if proto == "" {
		proto = probe.HTTP
	}
	spec := probe.Spec{Protocol: proto, Port: int(hc.Port), Timeout: seconds(hc.TimeoutSeconds, defaultProbeTimeout),
		InsecureSkipVerify: hc.InsecureSkipVerify}
	if proto != probe.TCP {
		expected, err := probe.ParseStatus(hc.ExpectedStatus)
		if err != nil {
			return probe.Check{}, fmt.Errorf("healthCheck: %w", err)
		}
		spec.Path, spec.Host, spec.Expected = hc.Path, hc.Host, expected
		if spec.Host == "" {
			spec.Host = dnswire.Dotless(host)
		}
	}
	return probe.Check{
		Spec:     spec,
		Interval: seconds(hc.IntervalSeconds, defaultProbeInterval),
		Thresholds: health.Thresholds{
			Failure: int(orDefault(hc.FailureThreshold, defaultFailureThreshold)),
			Success: int(orDefault(hc.SuccessThreshold, defaultSuccessThreshold)),
		},
	}, nil
}

// isolationHold is healthCheck.isolationHoldSeconds (health.Input.Hold); nil is 300 s.
func isolationHold(hc *dnsv1.GslbHealthCheck) time.Duration {
	if hc.IsolationHoldSeconds == nil {
		return defaultIsolationHold
	}
	return time.Duration(*hc.IsolationHoldSeconds) * time.Second
}

func seconds(s int32, def time.Duration) time.Duration {
	if s <= 0 {
		return def
	}
	return time.Duration(s) * time.Second
}

func orDefault(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}

// probeTargets lists the targets to probe for one host from its candidates by geo tag
// (health.Input.Candidates): each address once, with the geo tag of the first cluster (in geo
// tag order) that lists it, sorted by address.
func probeTargets(cands map[string][]netip.Addr) []probe.Target {
	geos := make([]string, 0, len(cands))
	for g := range cands {
		geos = append(geos, g)
	}
	sort.Strings(geos)
	seen := map[netip.Addr]bool{}
	var out []probe.Target
	for _, g := range geos {
		for _, a := range cands[g] {
			if a.IsValid() && !seen[a] {
				seen[a] = true
				out = append(out, probe.Target{Addr: a, GeoTag: g})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr.Less(out[j].Addr) })
	return out
}

// probeSource is the watch source that reconciles a Gslb when one of its targets' probe
// verdict changes: Builder.WatchesRawSource(probeSource(scheduler)).
func probeSource(s *probe.Scheduler) source.Source {
	return source.Channel(s.Changes(), handler.TypedEnqueueRequestsFromMapFunc(
		func(_ context.Context, g types.NamespacedName) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: g}}
		}))
}
