package dynupdate

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/pkg/promreg"
)

// Metrics are the dynamic-update metrics, per key: namespace and Secret name, never the key's
// secret. They count the UPDATEs signed with a key that verified (the server answers the others
// NOTAUTH before any key is known); one whose zone no DNSZone binds the key to, which the
// server's verification already rules out, would count under key "". A nil *Metrics records
// nothing.
type Metrics struct {
	// Updates is dnsplane_dynamic_updates_total{namespace,key,rcode}: UPDATEs answered, by
	// the key's Secret and the rcode (NOERROR, NOTAUTH, REFUSED, SERVFAIL, ...).
	Updates *prometheus.CounterVec
	// Duration is dnsplane_dynamic_update_duration_seconds{namespace,key}: seconds from an
	// UPDATE's arrival to its answer, the provider's write included.
	Duration *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg (nil = unregistered); a
// registration error is returned wrapped (pkg/promreg).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Updates: promreg.CounterVec("dnsplane_dynamic_updates_total",
			"RFC 2136 UPDATEs signed with a key that verified, by key Secret (namespace, key) and rcode.", "namespace", "key", "rcode"),
		Duration: promreg.HistogramVec("dnsplane_dynamic_update_duration_seconds",
			"Seconds from an RFC 2136 UPDATE's arrival to its answer, the provider's write included, by key Secret.",
			prometheus.ExponentialBuckets(0.01, 2, 12), "namespace", "key"),
	}
	return promreg.Registered(reg, "dynupdate", m, m.Updates, m.Duration)
}

func (m *Metrics) observe(namespace, key, rcode string, seconds float64) {
	if m == nil {
		return
	}
	m.Updates.WithLabelValues(namespace, key, rcode).Inc()
	if key != "" {
		m.Duration.WithLabelValues(namespace, key).Observe(seconds)
	}
}
