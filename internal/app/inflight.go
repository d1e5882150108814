package app

import (
	"net/http"

	"golang.org/x/sync/semaphore"
)

// DefaultKubeAPIInFlight is how many short Kubernetes API requests the manager has in flight at
// once: below one HTTP/2 connection's stream limit (kube-apiserver's
// --http2-max-streams-per-connection; Go's default server limit is 250), so that a burst of
// reconciles shares one connection.
//
// Why: the manager runs up to 2 × 2,048 reconciles at once. When more requests are in flight
// than one connection's streams, Go's transport (net/http with golang.org/x/net/http2 as
// client-go configures it) dials a new TLS connection for each request over the limit, not one
// more connection: at 50,000 endpoints, 1,736 goroutines were in TLS handshakes with the API
// server 3 s into a first sync, each connection costing a handshake on both sides and
// its buffers, until it idles out. Waiting for a stream costs nothing at these rates: at
// --kube-api-qps 1,000 and a few milliseconds a request, about ten are in flight.
const DefaultKubeAPIInFlight = 200

// limitInFlight returns a rest.Config WrapTransport that lets at most n requests through rt at
// once, watches and other long-running requests (which hold their stream for as long as they
// run) apart: they neither wait nor count.
func limitInFlight(n int64) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return &inFlight{rt: rt, sem: semaphore.NewWeighted(n)}
	}
}

type inFlight struct {
	rt  http.RoundTripper
	sem *semaphore.Weighted
}

// RoundTrip waits for a slot (or the request's context) unless the request is long-running. The
// slot is held until the response headers arrive: a body read after that is the caller's.
func (l *inFlight) RoundTrip(r *http.Request) (*http.Response, error) {
	if longRunning(r) {
		return l.rt.RoundTrip(r)
	}
	if err := l.sem.Acquire(r.Context(), 1); err != nil {
		return nil, err
	}
	defer l.sem.Release(1)
	return l.rt.RoundTrip(r)
}

// longRunning reports whether r holds its stream open (a watch), as kube-apiserver's own
// long-running check does for watch requests.
func longRunning(r *http.Request) bool {
	q := r.URL.Query()
	return q.Get("watch") == "true" || q.Get("watch") == "1" || q.Get("follow") == "true"
}
