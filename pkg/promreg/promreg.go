// Package promreg is the one way dnsplane's packages register their Prometheus collectors: every
// package that exports metrics has NewMetrics(reg prometheus.Registerer) (*Metrics, error), builds
// its collectors there (CounterVec, GaugeVec, HistogramVec) and registers them with Register (or
// Registered, which returns the metrics), so that no collector is package-level state and a
// second registration with the same registry is an error, never a panic.
//
// It lives in pkg/ because pkg/ imports it and never imports internal/ (imports_test.go); it must
// import nothing of dnsplane.
package promreg

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers cs with reg, in order. The first failure (a duplicate registration is a
// prometheus.AlreadyRegisteredError, which errors.As finds) unregisters the collectors this call
// registered before it and is returned wrapped with what, the metrics' owner ("scraper", ...).
// A nil reg registers nothing: the collectors work, unexported (tests).
func Register(reg prometheus.Registerer, what string, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return fmt.Errorf("register %s metrics: %w", what, err)
		}
	}
	return nil
}

// CounterVec is a counter vector named name, with help text help, by labels.
func CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// GaugeVec is a gauge vector named name, with help text help, by labels.
func GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// HistogramVec is a histogram vector named name, with help text help and buckets, by labels.
func HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

// Registered registers cs with reg as Register does and returns m, or nil and Register's error:
// the last step of a NewMetrics that builds m holding cs.
func Registered[M any](reg prometheus.Registerer, what string, m *M, cs ...prometheus.Collector) (*M, error) {
	if err := Register(reg, what, cs...); err != nil {
		return nil, err
	}
	return m, nil
}
