package dnsserver

import (
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/pkg/promreg"
	"github.com/dnsplane/dnsplane/pkg/xfr"
)

// Metrics are the embedded server's metrics. A nil *Metrics counts nothing.
type Metrics struct {
	// Queries is dnsplane_dnsserver_queries_total{proto,rcode}: queries answered, by transport
	// ("udp", "tcp") and response code mnemonic (miekg/dns RcodeToString: "NOERROR", ...).
	Queries *prometheus.CounterVec
	// Geo is dnsplane_dnsserver_geo_queries_total{geo_tag,ecs}: answers chosen by the client's
	// subnet, by the geo tag that answered and whether the query carried an EDNS Client
	// Subnet option ("true", "false"; RFC 7871), so that an operator sees which share of its
	// resolvers send one.
	Geo *prometheus.CounterVec
	// XFR are the transfer unit's: dnsplane_dnsserver_transfers_total, _notifies_total and
	// _journal_deltas (xfr.Metrics). Pass them to xfr.NotifierOptions.Metrics.
	XFR *xfr.Metrics
}

// NewMetrics creates the metrics, the transfer unit's included (xfr.NewMetrics), and registers
// them with reg (the manager's registry; nil = unregistered). A registration error (a second
// registration with the same registry, say) is returned wrapped (pkg/promreg), and then
// none of them stays registered.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Queries: promreg.CounterVec("dnsplane_dnsserver_queries_total",
			"DNS queries answered by the embedded server, by transport and response code.", "proto", "rcode"),
	}
	m.Geo = promreg.CounterVec("dnsplane_dnsserver_geo_queries_total",
		"Geo answers of the embedded server, by the geo tag that answered and whether the query carried an EDNS Client Subnet option.", "geo_tag", "ecs")
	if err := promreg.Register(reg, "dnsserver", m.Queries, m.Geo); err != nil {
		return nil, err
	}
	x, err := xfr.NewMetrics(reg)
	if err != nil {
		if reg != nil {
			reg.Unregister(m.Queries)
			reg.Unregister(m.Geo)
		}
		return nil, err
	}
	m.XFR = x
	return m, nil
}

// transfers returns the transfer unit's metrics, nil when m is.
func (m *Metrics) transfers() *xfr.Metrics {
	if m == nil {
		return nil
	}
	return m.XFR
}

func (m *Metrics) count(proto string, rcode int) {
	if m != nil {
		m.Queries.WithLabelValues(proto, dns.RcodeToString[rcode]).Inc()
	}
}

// rcodeCounts gathers a UDP read loop's cached answers by rcode, so that
// the hit path updates one pre-resolved counter per rcode and batch instead
// of resolving {proto="udp",rcode} (CounterVec.WithLabelValues: a label hash
// and a lock) per packet. One read loop owns it; no lock.
type rcodeCounts struct {
	m        *Metrics
	n        [16]int // by rcode (the header's 4 bits, RFC 1035 §4.1.1)
	counters [16]prometheus.Counter
}

// add counts one answer of rcode; one beyond the header's rcodes is counted
// at once.
func (c *rcodeCounts) add(m *Metrics, rcode int) {
	if m == nil {
		return
	}
	c.m = m
	if rcode < 0 || rcode >= len(c.n) {
		m.count("udp", rcode)
		return
	}
	c.n[rcode]++
}

// flush adds the gathered counts to dnsplane_dnsserver_queries_total.
func (c *rcodeCounts) flush() {
	for rc, n := range c.n {
		if n == 0 {
			continue
		}
		if c.counters[rc] == nil {
			c.counters[rc] = c.m.Queries.WithLabelValues("udp", dns.RcodeToString[rc])
		}
		c.counters[rc].Add(float64(n))
		c.n[rc] = 0
	}
}
