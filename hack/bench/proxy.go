package main

import (
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// countingProxy forwards every request to the PowerDNS API and counts it by method and by
// "METHOD STATUS" (for example "PATCH 500").
type countingProxy struct {
	next http.Handler
	mu   sync.Mutex
	n    map[string]int
}

func newCountingProxy(next http.Handler) *countingProxy {
	return &countingProxy{next: next, n: map[string]int{}}
}

// ServeHTTP forwards r and counts it once the response status is known.
func (p *countingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	p.next.ServeHTTP(sw, r)
	p.mu.Lock()
	p.n[r.Method+" "+strconv.Itoa(sw.status)]++
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
