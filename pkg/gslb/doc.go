// Package gslb owns the DNS side of global server load balancing across clusters
// (docs/api.md, "Gslb"; k8gb's model), as pure functions and a DNS client:
//
//   - ParsePeers reads --ext-gslb-clusters ("geotag=host:port,...") into Peers;
//   - LocalTargetsName names the record through which clusters exchange their healthy
//     targets ("localtargets-<host>");
//   - Querier asks one peer's DNS server for that record, over UDP with EDNS0 (RFC 6891) and a
//     TCP fallback on truncation (RFC 7766), under one timeout, and accepts only an answer from
//     the queried server for the queried name and type (RFC 1035 §4.1.1);
//   - Compute turns healthy targets by geo tag into what <host> serves under a strategy
//     (roundRobin, failover, weighted, geo), deciding each address family on its own so that
//     a family with a target is never answered empty;
//   - ParseReferral and EdgePeers read the clusters' ns-<geotag>.<zone> name servers and glue
//     out of the edge zone's NS answer into Peers (the querying stays in controllers/gslb).
//
// It must not talk to Kubernetes (no client, no API types: the controller in controllers/gslb
// maps them), must not publish records, resolve recursively, follow CNAMEs or cache, and has no
// package-level mutable state: everything it needs comes in as arguments.
package gslb
