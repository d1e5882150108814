// Package gslb reconciles Gslbs: one host load-balanced across clusters through DNS alone
// (docs/api.md, "Gslb"; k8gb's model).
//
// What it owns:
//   - the local view: this cluster's load-balancer addresses for each host (the referenced
//     Ingress's or LoadBalancer Service's status; hostnames resolved), and each host's health from
//     its backend Services' EndpointSlices, where a backend with ready endpoints but no
//     load-balancer address is still Unhealthy;
//   - the exchange: querying every peer's localtargets-<host> over DNS (pkg/gslb) and publishing,
//     through one DNSEndpoint the Gslb owns, this cluster's localtargets-<host> and <host>'s
//     strategy answer;
//   - with spec.edge, this cluster's NS and glue for the Gslb zone in the edge zone, as a
//     DNSRecord, so that every cluster's NS set merges and heartbeats;
//   - status (geoTag, serviceHealth, healthyRecords, peers), Ready, Events and metrics.
//
// What it must not do: write DNS itself (the DNSEndpoint and DNSRecord controllers do, through
// the zone writer), rely on a garbage collector (its finalizer deletes what it owns), block a
// reconcile longer than the peer timeout, or hold package-level mutable state.
package gslb
