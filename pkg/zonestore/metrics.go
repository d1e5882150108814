package zonestore

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/pkg/promreg"
)

// Metrics are the zone store's metrics (docs/metrics.md). A nil *Metrics counts nothing.
type Metrics struct {
	// Writes is dnsplane_zonestore_object_writes_total{op,result}: API writes of zone
	// ConfigMaps, op "create", "update" or "delete", result "ok", "conflict" (a
	// resourceVersion or existence precondition failed) or "error".
	Writes *prometheus.CounterVec
	// Bytes is dnsplane_zonestore_written_bytes_total: the binaryData and data bytes of the
	// zone ConfigMaps created and updated (successful writes only).
	Bytes prometheus.Counter
	// FlushObjects is dnsplane_zonestore_flush_objects: ConfigMaps written per zone version
	// (one store transaction), a histogram.
	FlushObjects prometheus.Histogram
	// Load is dnsplane_zonestore_load_seconds: the time, in seconds, to decode and install one
	// zone version from its objects, a histogram.
	Load prometheus.Histogram
}

// NewMetrics creates the metrics and registers them with reg (nil = unregistered). A
// registration error is returned wrapped (pkg/promreg).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Writes: promreg.CounterVec("dnsplane_zonestore_object_writes_total",
			"API writes of the zone store's ConfigMaps, by operation and result (ok, conflict, error).", "op", "result"),
		Bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dnsplane_zonestore_written_bytes_total",
			Help: "Payload bytes of the zone store's ConfigMaps created and updated.",
		}),
		FlushObjects: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dnsplane_zonestore_flush_objects",
			Help:    "ConfigMaps written per zone version (one store transaction).",
			Buckets: []float64{1, 2, 3, 5, 9, 17, 33, 65},
		}),
		Load: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dnsplane_zonestore_load_seconds",
			Help:    "Seconds to decode and install one zone version from the zone store's ConfigMaps.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9),
		}),
	}
	return promreg.Registered(reg, "zonestore", m, m.Writes, m.Bytes, m.FlushObjects, m.Load)
}

func result(err error) string {
	switch {
	case err == nil:
		return "ok"
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return "conflict"
	}
	return "error"
}

func (m *Metrics) wrote(cm *corev1.ConfigMap, err error) {
	if m == nil {
		return
	}
	op := "update"
	if cm.ResourceVersion == "" {
		op = "create"
	}
	m.Writes.WithLabelValues(op, result(err)).Inc()
	if err == nil {
		n := 0
		for _, b := range cm.BinaryData {
			n += len(b)
		}
		for _, s := range cm.Data {
			n += len(s)
		}
		m.Bytes.Add(float64(n))
	}
}

func (m *Metrics) deleted(err error) {
	if m != nil && !apierrors.IsNotFound(err) {
		m.Writes.WithLabelValues("delete", result(err)).Inc()
	}
}

func (m *Metrics) flushed(objects int) {
	if m != nil {
		m.FlushObjects.Observe(float64(objects))
	}
}

func (m *Metrics) loaded(seconds float64) {
	if m != nil {
		m.Load.Observe(seconds)
	}
}
