package webhook

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/pkg/promreg"
)

// Metrics are the webhook provider's HTTP request metrics. One provider call
// (dnsplane_provider_requests_total) may cost several webhook requests: a negotiation, an
// /adjustendpoints, a GET /records before a read-merge-write, and the POST /records itself.
type Metrics struct {
	// Requests is dnsplane_webhook_requests_total{method,path,code}: every HTTP request sent to a
	// webhook, by method (GET, POST), protocol path ("/", "/records", "/adjustendpoints") and
	// status code of the answer ("200", "204", "503", ...), or "error" when none came (refused
	// connection, timeout, cancelled context). No label holds a header value or the URL.
	Requests *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil = unregistered). A
// registration error is returned wrapped (pkg/promreg).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{Requests: promreg.CounterVec("dnsplane_webhook_requests_total",
		"HTTP requests to external-dns webhook providers, by method, protocol path and status code (error: no answer).", "method", "path", "code")}
	return promreg.Registered(reg, "webhook request", m, m.Requests)
}

// observe counts one request; status 0 is "no answer".
func (m *Metrics) observe(method, path string, status int) {
	if m == nil {
		return
	}
	code := "error"
	if status > 0 {
		code = strconv.Itoa(status)
	}
	m.Requests.WithLabelValues(method, path, code).Inc()
}
