package main

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// countingProxy forwards every request to the PowerDNS API and counts it by method and by
// "METHOD STATUS" (for example "PATCH 500").
type countingProxy struct {
	next  http.Handler
	trace io.Writer // nil, or one line per request (start, duration, method, path, status)
	mu    sync.Mutex
	n     map[string]int
}

// newCountingProxy returns a proxy to next. trace, when not nil, gets one line per request:
// its start (RFC 3339, UTC, nanoseconds, as the manager's --zap-time-encoding=rfc3339nano
// logs), milliseconds it took, method, path and query, status and request body bytes.
func newCountingProxy(next http.Handler, trace io.Writer) *countingProxy {
	return &countingProxy{next: next, trace: trace, n: map[string]int{}}
}

// ServeHTTP forwards r and counts it once the response status is known.
func (p *countingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	begin := time.Now()
	p.next.ServeHTTP(sw, r)
	took := time.Since(begin)
	p.mu.Lock()
	p.n[r.Method+" "+strconv.Itoa(sw.status)]++
	if p.trace != nil {
		_, _ = fmt.Fprintf(p.trace, "%s %.1fms %s %s %d %d\n", begin.UTC().Format(time.RFC3339Nano),
			float64(took.Microseconds())/1000, r.Method, r.URL.RequestURI(), sw.status, r.ContentLength)
	}
	p.mu.Unlock()
}

// snapshot returns the counts so far, keyed "METHOD STATUS".
func (p *countingProxy) snapshot() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.n)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// calls are provider requests counted between two snapshots.
type calls struct {
	Total int `json:"total"`
	// ByMethod counts requests by HTTP method.
	ByMethod map[string]int `json:"byMethod"`
	// ByStatus counts requests by "METHOD STATUS".
	ByStatus map[string]int `json:"byStatus"`
	// Errors counts responses with a status of 500 or more.
	Errors int `json:"errors"`
}

// callsBetween returns the requests of after that are not in before (both from snapshot).
func callsBetween(before, after map[string]int) calls {
	c := calls{ByMethod: map[string]int{}, ByStatus: map[string]int{}}
	for k, n := range after {
		d := n - before[k]
		if d <= 0 {
			continue
		}
		method, status, _ := strings.Cut(k, " ")
		c.Total += d
		c.ByMethod[method] += d
		c.ByStatus[k] = d
		if code, err := strconv.Atoi(status); err == nil && code >= 500 {
			c.Errors += d
		}
	}
	return c
}
