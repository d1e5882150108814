// Package faultproxy is an HTTP proxy for tests that stands between a provider client and the
// API it talks to (PowerDNS' HTTP API, a cloud fake) and answers chosen requests with a fault
// instead of, or after, forwarding them: an HTTP 500, 502 or 503, a 429 with or without
// Retry-After, a hang past the client's timeout, a connection reset, a reply body that trickles,
// or a reply lost after the upstream applied the write.
//
// A Policy picks the fault per request: by rate (deterministic from a seed and the request's
// number, so a run can be repeated), for the Nth request, in a time window, for writes only, or
// the first of several. Counts are exact: every request is counted once, under the fault it got,
// and so is every request the upstream saw and every status it answered.
//
// It owns only the proxying, the faults and the counting. It must not interpret what it
// forwards (no provider knowledge) and must not assert: the fault tests decide what the counts
// mean. It listens on 127.0.0.1 only.
package faultproxy
