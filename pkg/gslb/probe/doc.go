// Package probe sends the health probes of Gslb targets (issue 28; docs/design.md, "Health and
// partitions"): an HTTP or HTTPS GET (Host header and TLS server name, expected status ranges,
// insecureSkipVerify) or a TCP connect, to one address and port, under a per-probe timeout, and
// returns the outcome with the error in words ("HTTP 503", "connect: connection refused",
// "timeout after 2s"). Prober.Run sends a batch through a bounded worker pool, each probe after
// a random jitter.
//
// It owns nothing between two calls: no goroutine, connection pool or idle connection outlives
// a Run, so it costs nothing while no Gslb asks for probes. Every probe opens one connection
// and closes it (the probe tests the path a new client takes).
//
// It must not decide health (pkg/gslb/health does, from the outcomes), talk to Kubernetes,
// follow redirects, read more than the status line and headers of a response, send traffic to
// anything but the target it is given, or hold package-level mutable state.
package probe
