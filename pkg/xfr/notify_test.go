package xfr

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
	"github.com/dnsplane/dnsplane/pkg/zonedb/zonedbtest"
)

// notifySink is a real UDP DNS server on loopback that records the NOTIFY messages it gets. It
// leaves the first drop messages unanswered and answers the others with rcode.
type notifySink struct {
	addr  string
	rcode int

	mu      sync.Mutex
	drop    int
	serials []uint32 // the SOA serial of each NOTIFY received, answered or not
}

func startSink(t *testing.T, drop, rcode int) *notifySink {
	t.Helper()
	s := &notifySink{drop: drop, rcode: rcode}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = pc.LocalAddr().String()
	srv := &dns.Server{PacketConn: pc, Handler: s}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return s
}

func (s *notifySink) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	s.mu.Lock()
	var serial uint32
	if len(req.Answer) == 1 {
		if soa, ok := req.Answer[0].(*dns.SOA); ok {
			serial = soa.Serial
		}
	}
	if req.Opcode == dns.OpcodeNotify {
		s.serials = append(s.serials, serial)
	}
	drop := s.drop > 0
	s.drop--
	s.mu.Unlock()
	if drop {
		return
	}
	resp := new(dns.Msg)
	resp.SetRcode(req, s.rcode)
	_ = w.WriteMsg(resp)
}

func (s *notifySink) received() []uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint32(nil), s.serials...)
}

// notifyEnv is a store with one zone and a started Notifier to targets.
func notifyEnv(t *testing.T, opts NotifierOptions, targets ...*notifySink) (*zonedb.Store, *Metrics) {
	t.Helper()
	store := zonedb.NewStore(zonedb.StoreOptions{Clock: zonedbtest.CountingClock()})
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range targets {
		opts.Targets = append(opts.Targets, s.addr)
	}
	opts.Metrics = m
	n := NewNotifier(store, opts)
	testrun.Background(t, "notifier", n.Start)
	if _, err := store.CreateZone("n.test", zonedb.ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	return store, m
}

func waitNotifies(t *testing.T, m *Metrics, want map[string]float64) {
	t.Helper()
	testrun.Eventually(t, 30*time.Second, "notify metrics", func() error {
		for result, n := range want {
			if got := testutil.ToFloat64(m.Notifies.WithLabelValues(result)); got != n {
				return fmt.Errorf("%s: %v, want %v", result, got, n)
			}
		}
		return nil
	})
}

// TestNotifier_OneNotifyPerChangeBatchAndTarget: every installed version
// (a CreateZone, an Update of 50 records) sends one NOTIFY to each target, carrying the new
// SOA (RFC 1996 §3.7), and the journal gauge follows the zone.
func TestNotifier_OneNotifyPerChangeBatchAndTarget(t *testing.T) {
	a, b := startSink(t, 0, dns.RcodeSuccess), startSink(t, 0, dns.RcodeSuccess)
	store, m := notifyEnv(t, NotifierOptions{}, a, b)
	waitNotifies(t, m, map[string]float64{"acked": 2})
	for i := range 3 {
		if err := store.Update("n.test", func(tx *zonedb.Tx) error {
			for k := range 50 {
				zonedbtest.Put(t, tx, "", nil, fmt.Sprintf("h%d.n.test. 60 IN A 192.0.2.%d", k, i+1))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// One change at a time: changes made while a NOTIFY waits are announced by it.
		waitNotifies(t, m, map[string]float64{"acked": float64(2 * (i + 2))})
	}
	for _, s := range []*notifySink{a, b} {
		if got := s.received(); fmt.Sprint(got) != "[1 2 3 4]" {
			t.Errorf("%s got NOTIFY serials %v, want [1 2 3 4]", s.addr, got)
		}
	}
	if got := testutil.ToFloat64(m.JournalDeltas.WithLabelValues("n.test.")); got != 3 {
		t.Errorf("journal gauge %v, want 3", got)
	}
	if err := store.DeleteZone("n.test"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.JournalDeltas); n != 0 {
		t.Errorf("journal gauge of a deleted zone still exported (%d series)", n)
	}
}

// TestNotifier_RetransmitsUntilAnsweredThenGivesUp: RFC 1996 §3.6, a NOTIFY without an answer
// is sent again, and given up after Attempts; an answer with an error rcode ends it at once.
func TestNotifier_RetransmitsUntilAnsweredThenGivesUp(t *testing.T) {
	opts := NotifierOptions{Timeout: 300 * time.Millisecond, RetryBase: 10 * time.Millisecond, Attempts: 3}
	t.Run("answered at the third attempt", func(t *testing.T) {
		s := startSink(t, 2, dns.RcodeSuccess)
		_, m := notifyEnv(t, opts, s)
		waitNotifies(t, m, map[string]float64{"acked": 1, "failed": 0})
		if got := len(s.received()); got != 3 {
			t.Errorf("%d attempts, want 3", got)
		}
	})
	t.Run("never answered", func(t *testing.T) {
		s := startSink(t, 1000, dns.RcodeSuccess)
		_, m := notifyEnv(t, opts, s)
		waitNotifies(t, m, map[string]float64{"failed": 1, "acked": 0})
		if got := len(s.received()); got != 3 {
			t.Errorf("%d attempts, want 3 (Attempts)", got)
		}
	})
	t.Run("rejected", func(t *testing.T) {
		s := startSink(t, 0, dns.RcodeNotAuth)
		_, m := notifyEnv(t, opts, s)
		waitNotifies(t, m, map[string]float64{"rejected": 1})
		if got := len(s.received()); got != 1 {
			t.Errorf("%d attempts, want 1: an answer ends the retransmission", got)
		}
	})
}
