package dnszone

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/pkg/promreg"
)

// Metrics are the DNSZone controller's metrics. A nil *Metrics records nothing.
type Metrics struct {
	// AvailableDelay is dnsplane_dnszone_available_delay_seconds: seconds from a DNSZone's
	// creation until its hosted zone first answered SOA, observed once per zone.
	AvailableDelay prometheus.Histogram
}

// NewMetrics creates the DNSZone metrics and registers them with reg (the manager's registry;
// nil = unregistered). A registration error (a second registration with the same registry, say)
// is returned wrapped (pkg/promreg).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{AvailableDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "dnsplane_dnszone_available_delay_seconds",
		Help:    "Seconds from a DNSZone's creation until its hosted zone first answered SOA; observed once per zone.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 14),
	})}
	return promreg.Registered(reg, "dnszone", m, m.AvailableDelay)
}

// observeAvailable records one zone's creation-to-available delay, in seconds.
func (m *Metrics) observeAvailable(seconds float64) {
	if m != nil {
		m.AvailableDelay.Observe(seconds)
	}
}
