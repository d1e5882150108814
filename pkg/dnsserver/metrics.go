package dnsserver

import (
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/internal/promreg"
)

// Metrics are the embedded server's metrics. A nil *Metrics counts nothing.
type Metrics struct {
	// Queries is dnsplane_dnsserver_queries_total{proto,rcode}: queries answered, by transport
	// ("udp", "tcp") and response code mnemonic (miekg/dns RcodeToString: "NOERROR", ...).
	Queries *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (the manager's registry; nil =
// unregistered). A registration error (a second registration with the same registry, say) is
// returned wrapped (internal/promreg).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{Queries: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dnsplane_dnsserver_queries_total",
		Help: "DNS queries answered by the embedded server, by transport and response code.",
	}, []string{"proto", "rcode"})}
	if err := promreg.Register(reg, "dnsserver", m.Queries); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) count(proto string, rcode int) {
	if m != nil {
		m.Queries.WithLabelValues(proto, dns.RcodeToString[rcode]).Inc()
	}
}
