// Package probe sends the health probes of Gslb targets (docs/design.md, "Health and
// partitions"): an HTTP or HTTPS GET (Host header and TLS server name, expected status ranges,
// insecureSkipVerify) or a TCP connect, to one address and port, under a per-probe timeout, and
// returns the outcome with the error in words ("HTTP 503", "connect: connection refused",
// "timeout after 2s"), or as an abstention when the probe cannot be made from here (no source
// address or route of the target's family: no vote). Prober.Run sends a batch through a bounded worker pool, each probe after
// a random jitter.
//
// Scheduler keeps probing what the Gslb controller declares (Set per Gslb host, Forget per
// Gslb): each target every interval plus 0 to 10% jitter, through a bounded pool, folding the
// outcomes into a health.ProbeState per target, and naming on a channel (for a
// controller-runtime source.Channel) each Gslb whose target's verdict changed. Metrics are its
// Prometheus series (probe latency and results, verdict changes, and the isolation gauge the
// controller sets).
//
// Prober owns nothing between two calls: no goroutine, connection pool or idle connection
// outlives a Run. Scheduler runs goroutines only while some target is declared, so both cost
// nothing while no Gslb asks for probes. Every probe opens one connection and closes it (the
// probe tests the path a new client takes).
//
// It must not decide health beyond one vantage point's ProbeState (pkg/gslb/health's quorum
// does), talk to Kubernetes (it only names Gslbs by types.NamespacedName and sends
// controller-runtime's event type), follow redirects, read more than the status line and
// headers of a response, send traffic to anything but the target it is given, or hold
// package-level mutable state.
package probe
