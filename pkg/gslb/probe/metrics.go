package probe

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dnsplane/dnsplane/pkg/gslb/health"
	"github.com/dnsplane/dnsplane/pkg/promreg"
)

// Probe results, the values of the result label of dnsplane_gslb_probes_total.
const (
	// ResultOK: the probe passed.
	ResultOK = "ok"
	// ResultFail: the target answered wrongly or refused (HTTP status, refused, reset, TLS).
	ResultFail = "fail"
	// ResultTimeout: the probe did not end within timeoutSeconds.
	ResultTimeout = "timeout"
	// ResultAbstain: the probe could not be attempted from here (Result.Abstain).
	ResultAbstain = "abstain"
)

// Metrics are the Gslb health probes' Prometheus metrics (docs/metrics.md):
//   - dnsplane_gslb_probe_duration_seconds{namespace,gslb,host,family,vantage,target_geo}: the
//     latency of each probe, a histogram;
//   - dnsplane_gslb_probes_total{namespace,gslb,host,family,vantage,target_geo,result}: probes
//     by result (Result*);
//   - dnsplane_gslb_probe_verdict_changes_total{namespace,gslb,host,family,vantage,target_geo,verdict}:
//     a target's verdict from this vantage point changed to verdict (Up, Down);
//   - dnsplane_gslb_isolated{namespace,gslb,host}: 1 while this cluster is isolated for the host
//     (health.Result.Isolated), 0 otherwise; set by the controller (SetIsolated).
//
// family is ipv4 or ipv6; vantage is this cluster's geo tag (the probing one); target_geo is the
// geo tag of the cluster whose target it is. No label holds a target address, so the series
// grow with Gslb hosts and clusters, not with targets. Every series of a Gslb is deleted when it
// is forgotten (Scheduler.Forget, ForgetGslb).
//
// A nil *Metrics records nothing. Metrics are safe for concurrent use.
type Metrics struct {
	duration *prometheus.HistogramVec
	probes   *prometheus.CounterVec
	changes  *prometheus.CounterVec
	isolated *prometheus.GaugeVec
}

var targetLabels = []string{"namespace", "gslb", "host", "family", "vantage", "target_geo"}

// NewMetrics creates the metrics and registers them with reg (the manager's registry,
// sigs.k8s.io/controller-runtime/pkg/metrics.Registry; nil = unregistered). A registration error
// (for example a second registration with the same registry) is returned wrapped
// (pkg/promreg).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "dnsplane_gslb_probe_duration_seconds",
			Help: "Latency of Gslb health probes (connect, TLS, request, status line), by Gslb host, family, vantage point and the target's cluster.",
			// 1 ms to about 33 s, doubling.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, targetLabels),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dnsplane_gslb_probes_total",
			Help: "Gslb health probes by result (ok, fail, timeout, abstain), Gslb host, family, vantage point and the target's cluster.",
		}, append(targetLabels[:len(targetLabels):len(targetLabels)], "result")),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dnsplane_gslb_probe_verdict_changes_total",
			Help: "Changes of a target's probe verdict from this vantage point, by the new verdict (Up, Down).",
		}, append(targetLabels[:len(targetLabels):len(targetLabels)], "verdict")),
		isolated: promreg.GaugeVec("dnsplane_gslb_isolated",
			"1 while this cluster reads fresh verdicts from no majority of the known clusters for a Gslb host (Ready reason Isolated), else 0.", "namespace", "gslb", "host"),
	}
	return promreg.Registered(reg, "gslb probe", m, m.duration, m.probes, m.changes, m.isolated)
}

func family(t *target) string {
	if t.key.Target.Unmap().Is4() {
		return "ipv4"
	}
	return "ipv6"
}

func (m *Metrics) labels(t *target, vantage string) []string {
	return []string{t.key.Gslb.Namespace, t.key.Gslb.Name, t.key.Host, family(t), vantage, t.geoTag}
}

// probed records one probe's latency and result.
func (m *Metrics) probed(t *target, vantage string, r Result) {
	if m == nil {
		return
	}
	l := m.labels(t, vantage)
	m.duration.WithLabelValues(l...).Observe(max(r.End.Sub(r.Start).Seconds(), 0))
	result := ResultOK
	switch {
	case r.OK:
	case r.Abstain:
		result = ResultAbstain
	case strings.HasPrefix(r.Err, "timeout"):
		result = ResultTimeout
	default:
		result = ResultFail
	}
	m.probes.WithLabelValues(append(l, result)...).Inc()
}

// verdictChanged counts a change of t's verdict to v.
func (m *Metrics) verdictChanged(t *target, vantage string, v health.Verdict) {
	if m == nil {
		return
	}
	m.changes.WithLabelValues(append(m.labels(t, vantage), v.String())...).Inc()
}

// SetIsolated sets dnsplane_gslb_isolated for one Gslb host.
func (m *Metrics) SetIsolated(gslb types.NamespacedName, host string, isolated bool) {
	if m == nil {
		return
	}
	v := 0.0
	if isolated {
		v = 1
	}
	m.isolated.WithLabelValues(gslb.Namespace, gslb.Name, host).Set(v)
}

// ForgetHost deletes every series of one Gslb host (a host the Gslb no longer has).
func (m *Metrics) ForgetHost(gslb types.NamespacedName, host string) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"namespace": gslb.Namespace, "gslb": gslb.Name, "host": host}
	m.deletePartial(l)
}

// ForgetGslb deletes every series of a Gslb (deleted, or without healthCheck).
func (m *Metrics) ForgetGslb(gslb types.NamespacedName) {
	if m == nil {
		return
	}
	m.deletePartial(prometheus.Labels{"namespace": gslb.Namespace, "gslb": gslb.Name})
}

func (m *Metrics) deletePartial(l prometheus.Labels) {
	m.duration.DeletePartialMatch(l)
	m.probes.DeletePartialMatch(l)
	m.changes.DeletePartialMatch(l)
	m.isolated.DeletePartialMatch(l)
}
