package xfr

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/pkg/promreg"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// Metrics are the transfer unit's metrics. A nil *Metrics counts nothing. Their names keep the
// embedded server's prefix, dnsplane_dnsserver_.
type Metrics struct {
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

// NewMetrics creates the metrics and registers them with reg (nil = unregistered). A
// registration error (a second registration with the same registry, say) is returned wrapped
// (pkg/promreg).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Transfers: promreg.CounterVec("dnsplane_dnsserver_transfers_total",
			"Zone transfers (AXFR, IXFR) asked of the embedded server, by type and result.", "type", "result"),
		Notifies: promreg.CounterVec("dnsplane_dnsserver_notifies_total",
			"NOTIFY messages sent to the --local-notify targets, by result (acked, rejected, failed).", "result"),
		JournalDeltas: promreg.GaugeVec("dnsplane_dnsserver_journal_deltas",
			"Changes held in each zone's IXFR journal.", "zone"),
	}
	return promreg.Registered(reg, "dnsserver", m, m.Transfers, m.Notifies, m.JournalDeltas)
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
func (m *Metrics) journal(c zonedb.Change) {
	switch {
	case m == nil:
	case c.Deleted:
		m.JournalDeltas.DeleteLabelValues(c.Zone)
	default:
		m.JournalDeltas.WithLabelValues(c.Zone).Set(float64(c.JournalDeltas))
	}
}
