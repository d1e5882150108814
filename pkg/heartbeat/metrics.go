package heartbeat

import (
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/pkg/promreg"
)

// Tick outcomes, the values of the result label of dnsplane_heartbeat_zone_ticks_total.
const (
	// ResultOK: the zone was read and its writes (if any) were applied.
	ResultOK = "ok"
	// ResultReadError: the zone could not be read; nothing was checked or written.
	ResultReadError = "read_error"
	// ResultConflict: the write found a precondition stale (provider.ErrConflict); it is left
	// for the next tick.
	ResultConflict = "conflict"
	// ResultWriteError: the write failed otherwise.
	ResultWriteError = "write_error"
	// ResultSkipped: the zone's previous tick was still running, so this tick did nothing for it.
	ResultSkipped = "skipped"
)

// Metrics are the reporter's Prometheus metrics:
//   - dnsplane_dnsrecord_owner_heartbeat_age_seconds{root_host,owner}: seconds since the
//     owner's last heartbeat at root_host, as of the last tick that read the zone; +Inf when it
//     never heartbeat. When one owner ID contributes several objects to one root host, the
//     oldest counts. Series of owners no longer contributing are deleted at the next tick, and
//     those of a root host no Target names any more when its last Target is removed;
//   - dnsplane_heartbeat_zone_ticks_total{result}: per-zone ticks by outcome (Result*).
//
// A nil *Metrics records nothing. Metrics are safe for concurrent use.
type Metrics struct {
	age   *prometheus.GaugeVec
	ticks *prometheus.CounterVec

	mu     sync.Mutex
	series map[string]map[string]bool // root host -> owner IDs with a series
}

// NewMetrics creates the metrics and registers them with reg (the manager's registry,
// sigs.k8s.io/controller-runtime/pkg/metrics.Registry; nil = unregistered). A registration error
// (for example a second registration with the same registry) is returned wrapped
// (pkg/promreg).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		age: promreg.GaugeVec("dnsplane_dnsrecord_owner_heartbeat_age_seconds",
			"Seconds since each DNSRecord contributor (owner) of a root host last heartbeat, as of the last heartbeat tick; +Inf when it never did.", "root_host", "owner"),
		ticks: promreg.CounterVec("dnsplane_heartbeat_zone_ticks_total",
			"Heartbeat reporter ticks per zone, by result (ok, read_error, conflict, write_error, skipped).", "result"),
		series: map[string]map[string]bool{},
	}
	return promreg.Registered(reg, "heartbeat", m, m.age, m.ticks)
}

// observe sets the ages of rootHost's owners at now and deletes the series of owners that are
// gone.
func (m *Metrics) observe(rootHost string, owners []Owner, now time.Time) {
	if m == nil {
		return
	}
	ages := map[string]float64{}
	for _, o := range owners {
		age := math.Inf(1)
		if !o.LastHeartbeat.IsZero() {
			age = max(now.Sub(o.LastHeartbeat).Seconds(), 0)
		}
		if prev, ok := ages[o.OwnerID]; !ok || age > prev {
			ages[o.OwnerID] = age
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for owner := range m.series[rootHost] {
		if _, ok := ages[owner]; !ok {
			m.age.DeleteLabelValues(rootHost, owner)
		}
	}
	set := make(map[string]bool, len(ages))
	for owner, age := range ages {
		m.age.WithLabelValues(rootHost, owner).Set(age)
		set[owner] = true
	}
	if len(set) == 0 {
		delete(m.series, rootHost)
		return
	}
	m.series[rootHost] = set
}

// forget deletes every series of rootHost.
func (m *Metrics) forget(rootHost string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for owner := range m.series[rootHost] {
		m.age.DeleteLabelValues(rootHost, owner)
	}
	delete(m.series, rootHost)
}

// tick counts one zone tick with its result.
func (m *Metrics) tick(result string) {
	if m == nil {
		return
	}
	m.ticks.WithLabelValues(result).Inc()
}
