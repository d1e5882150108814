package dnsserver

import (
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/pkg/promreg"
)

// Metrics are the embedded server's metrics. A nil *Metrics counts nothing.
type Metrics struct {
	// Queries is dnsplane_dnsserver_queries_total{proto,rcode}: queries answered, by transport
	// ("udp", "tcp") and response code mnemonic (miekg/dns RcodeToString: "NOERROR", ...).
	Queries *prometheus.CounterVec
	// Transfers is dnsplane_dnsserver_transfers_total{type,result}: zone transfers asked for,
	// by type ("axfr", "ixfr") and result ("full", "incremental", "uptodate", "usetcp",
	// "refused", "failed"; transfer.go).
	Transfers *prometheus.CounterVec
	// Notifies is dnsplane_dnsserver_notifies_total{result}: NOTIFY messages (RFC 1996) sent to
	// --local-notify targets, one per zone change and target, by result: "acked" (NOERROR
	// answer), "rejected" (another rcode), "failed" (no answer after every retry).
	Notifies *prometheus.CounterVec
	// JournalDeltas is dnsplane_dnsserver_journal_deltas{zone}: how many changes the zone's IXFR
	// journal holds.
	JournalDeltas *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg (the manager's registry; nil =
// unregistered). A registration error (a second registration with the same registry, say) is
// returned wrapped (pkg/promreg).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dnsplane_dnsserver_queries_total",
			Help: "DNS queries answered by the embedded server, by transport and response code.",
		}, []string{"proto", "rcode"}),
		Transfers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dnsplane_dnsserver_transfers_total",
			Help: "Zone transfers (AXFR, IXFR) asked of the embedded server, by type and result.",
		}, []string{"type", "result"}),
		Notifies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dnsplane_dnsserver_notifies_total",
			Help: "NOTIFY messages sent to the --local-notify targets, by result (acked, rejected, failed).",
		}, []string{"result"}),
		JournalDeltas: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dnsplane_dnsserver_journal_deltas",
			Help: "Changes held in each zone's IXFR journal.",
		}, []string{"zone"}),
	}
	if err := promreg.Register(reg, "dnsserver", m.Queries, m.Transfers, m.Notifies, m.JournalDeltas); err != nil {
		return nil, err
	}
	return m, nil
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

func (m *Metrics) transferred(kind, result string) {
	if m != nil {
		m.Transfers.WithLabelValues(kind, result).Inc()
	}
}

func (m *Metrics) notified(result string) {
	if m != nil {
		m.Notifies.WithLabelValues(result).Inc()
	}
}

// journal sets the zone's journal gauge, or removes it for a deleted zone.
func (m *Metrics) journal(c Change) {
	switch {
	case m == nil:
	case c.Deleted:
		m.JournalDeltas.DeleteLabelValues(c.Zone)
	default:
		m.JournalDeltas.WithLabelValues(c.Zone).Set(float64(c.JournalDeltas))
	}
}
