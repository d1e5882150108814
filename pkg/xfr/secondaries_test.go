package xfr_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/secondarytest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/xfr"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

const (
	secZone = "sec.test"
	// converge bounds how long a secondary may take to serve a change: generous, for a loaded
	// machine; the measured time is far below (the test logs it).
	converge = 60 * time.Second
)

// transferLog records the embedded server's "zone transfer served" log lines.
type transferLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *transferLog) add(_, args string) {
	if strings.Contains(args, `"zone transfer served"`) {
		l.mu.Lock()
		l.lines = append(l.lines, args)
		l.mu.Unlock()
	}
}

// count returns how many transfers of type kind with result went to a client at source.
func (l *transferLog) count(source, kind, result string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, `"type"="`+kind+`"`) && strings.Contains(line, `"result"="`+result+`"`) &&
			strings.Contains(line, `"client"="`+source+`:`) {
			n++
		}
	}
	return n
}

// sameZone waits until every secondary serves what primary does, and logs how long it took.
func sameZone(t *testing.T, primary string, secs ...*secondarytest.Server) {
	t.Helper()
	took := secondarytest.SameZone(t, converge, primary, secZone, secs...)
	for i, s := range secs {
		t.Logf("%s current %s after the check began", s.Name, took[i].Round(time.Millisecond))
	}
}

// TestSecondaries_BINDAndNSDFollowTheEmbeddedServer: a real BIND and a real
// NSD, secondaries of the embedded server, serve every change published through the local
// provider's ApplyChanges: NOTIFY, then IXFR (the embedded server logs an incremental transfer to
// each one's source address). A BIND stopped while more changes than the journal holds are made
// is brought up to date, at the next NOTIFY, by a full zone in the IXFR answer (RFC 1995 §4),
// and NSD, which stayed up, keeps getting increments.
func TestSecondaries_BINDAndNSDFollowTheEmbeddedServer(t *testing.T) {
	const journal = 3
	store := zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir(), JournalDeltas: journal})
	logs := &transferLog{}
	log := funcr.New(logs.add, funcr.Options{Verbosity: 1})
	metrics, err := dnsserver.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	srv := dnstest.ServeWith(t, store, dnsserver.ServerOptions{Logger: log, Metrics: metrics})

	p := local.New(store, local.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	zone, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: secZone, CallerReference: "secondaries"})
	if err != nil {
		t.Fatal(err)
	}
	apply := func(changes ...provider.Change) {
		t.Helper()
		if err := p.ApplyChanges(ctx, zone.ID, changes); err != nil {
			t.Fatal(err)
		}
	}
	a := func(name string, ips ...string) *provider.RecordSet {
		return &provider.RecordSet{Name: name + "." + secZone, Type: "A", TTL: 60, Targets: ips}
	}
	apply(provider.Change{Action: provider.ActionCreate, After: a("www", "192.0.2.1")})

	bind, nsd := secondarytest.BIND(t), secondarytest.NSD(t)
	bind.Start(t, srv.Addr(), secZone)
	nsd.Start(t, srv.Addr(), secZone)
	notifier := xfr.NewNotifier(store, xfr.NotifierOptions{Targets: []string{bind.Addr, nsd.Addr}, Metrics: metrics.XFR, Logger: log})
	testrun.Background(t, "notifier", notifier.Start)
	sameZone(t, srv.Addr(), bind, nsd) // the first transfer: AXFR, or IXFR answered in full

	// Changes one at a time, each a batch of several records.
	apply(provider.Change{Action: provider.ActionCreate, After: a("h1", "192.0.2.11", "192.0.2.12")},
		provider.Change{Action: provider.ActionCreate, After: &provider.RecordSet{Name: "t." + secZone, Type: "TXT", TTL: 60, Targets: []string{`"one"`}}})
	sameZone(t, srv.Addr(), bind, nsd)
	apply(provider.Change{Action: provider.ActionUpdate, Before: a("www", "192.0.2.1"), After: a("www", "192.0.2.2")})
	sameZone(t, srv.Addr(), bind, nsd)
	apply(provider.Change{Action: provider.ActionDelete, Before: a("h1", "192.0.2.11", "192.0.2.12")})
	sameZone(t, srv.Addr(), bind, nsd)
	for _, s := range []*secondarytest.Server{bind, nsd} {
		if n := logs.count(s.Source, "ixfr", "incremental"); n < 3 {
			t.Errorf("%s (from %s) took %d incremental IXFRs for 3 changes, want 3: %v", s.Name, s.Source, n, logs.lines)
		}
	}

	// BIND misses more changes than the journal holds.
	bind.Stop(t)
	for i := range journal + 1 {
		apply(provider.Change{Action: provider.ActionCreate, After: a(fmt.Sprintf("m%d", i), fmt.Sprintf("192.0.2.%d", 100+i))})
		sameZone(t, srv.Addr(), nsd)
	}
	fullBefore := logs.count(secondarytest.BINDSource, "ixfr", "full")
	bind.Start(t, "")
	// named loads its zone file and waits for the SOA refresh timer (an hour) or a NOTIFY: the
	// next change sends one, and named asks an IXFR from serial 5, which the journal no longer
	// reaches.
	apply(provider.Change{Action: provider.ActionCreate, After: a("after", "192.0.2.99")})
	sameZone(t, srv.Addr(), bind, nsd)
	if n := logs.count(secondarytest.BINDSource, "ixfr", "full"); n <= fullBefore {
		t.Errorf("BIND, back after %d changes with a journal of %d, got no full zone in an IXFR answer: %v", journal+1, journal, logs.lines)
	}
	if n := logs.count(secondarytest.NSDAddr, "ixfr", "incremental"); n < 3+journal+2 {
		t.Errorf("NSD took %d incremental IXFRs, want %d", n, 3+journal+2)
	}
}

// TestSecondaries_SignedWithTSIG (TSIG): with a TSIG key (RFC 8945) on the
// embedded server and its NOTIFY sender, a BIND and an NSD secondary that sign their SOA queries
// and transfers with it and take only signed answers (NSD also only signed NOTIFYs) serve a
// change by NOTIFY and an incremental IXFR.
func TestSecondaries_SignedWithTSIG(t *testing.T) {
	const secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="
	key, err := dnswire.NewTSIGKey("xfr-key", "hmac-sha256", secret)
	if err != nil {
		t.Fatal(err)
	}
	store := zonedb.NewStore(zonedb.StoreOptions{})
	logs := &transferLog{}
	log := funcr.New(logs.add, funcr.Options{Verbosity: 1})
	srv := dnstest.ServeWith(t, store, dnsserver.ServerOptions{Logger: log, TSIG: &key})
	if _, err := store.CreateZone(secZone, zonedb.ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	bind, nsd := secondarytest.BIND(t), secondarytest.NSD(t)
	for _, s := range []*secondarytest.Server{bind, nsd} {
		s.TSIGKey = "xfr-key:hmac-sha256:" + secret
		s.Start(t, srv.Addr(), secZone)
	}
	notifier := xfr.NewNotifier(store, xfr.NotifierOptions{Targets: []string{bind.Addr, nsd.Addr}, Logger: log, TSIG: &key})
	testrun.Background(t, "notifier", notifier.Start)
	sameZone(t, srv.Addr(), bind, nsd)
	if err := store.Update(secZone, func(tx *zonedb.Tx) error {
		rr, _ := dns.NewRR("signed." + secZone + ". 60 IN A 192.0.2.77")
		return tx.Put(zonedb.RRSet{Name: "signed." + secZone, Type: dns.TypeA, TTL: 60, RRs: []dns.RR{rr}})
	}); err != nil {
		t.Fatal(err)
	}
	sameZone(t, srv.Addr(), bind, nsd)
	for _, s := range []*secondarytest.Server{bind, nsd} {
		if n := logs.count(s.Source, "ixfr", "incremental"); n < 1 {
			t.Errorf("%s took no incremental IXFR: %v\n%s", s.Name, logs.lines, s.Log())
		}
	}
}

// TestSecondaries_TakeAReCreatedZone: a zone deleted and created again with
// other records is taken by a real BIND and a real NSD that hold the deleted one: the new zone's
// serial is newer (RFC 1982) than the old one's last, though the clock stands still here, as it
// does for a burst of changes within a second (the serial ran ahead of it). With the serial
// starting at 1 again, both kept serving the deleted zone (a secondary transfers only a newer
// serial, RFC 1996 §4.7).
func TestSecondaries_TakeAReCreatedZone(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	store := zonedb.NewStore(zonedb.StoreOptions{Clock: clk})
	srv := dnstest.ServeWith(t, store, dnsserver.ServerOptions{})
	p := local.New(store, local.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	create := func(www string) provider.Zone {
		t.Helper()
		zone, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: secZone, CallerReference: "recreated"})
		if err != nil {
			t.Fatal(err)
		}
		for i, ip := range []string{www, www} { // two changes: the serial runs ahead of the clock
			rs := &provider.RecordSet{Name: fmt.Sprintf("www%d.%s", i, secZone), Type: "A", TTL: 60, Targets: []string{ip}}
			if err := p.ApplyChanges(ctx, zone.ID, []provider.Change{{Action: provider.ActionCreate, After: rs}}); err != nil {
				t.Fatal(err)
			}
		}
		return zone
	}
	zone := create("192.0.2.1")

	bind, nsd := secondarytest.BIND(t), secondarytest.NSD(t)
	bind.Start(t, srv.Addr(), secZone)
	nsd.Start(t, srv.Addr(), secZone)
	notifier := xfr.NewNotifier(store, xfr.NotifierOptions{Targets: []string{bind.Addr, nsd.Addr}})
	testrun.Background(t, "notifier", notifier.Start)
	sameZone(t, srv.Addr(), bind, nsd)
	old, err := store.Zone(secZone)
	if err != nil {
		t.Fatal(err)
	}

	if err := p.DeleteZone(ctx, zone.ID); err != nil {
		t.Fatal(err)
	}
	create("192.0.2.2")
	now, err := store.Zone(secZone)
	if err != nil {
		t.Fatal(err)
	}
	if !zonedb.SerialNewer(now.Serial, old.Serial) {
		t.Fatalf("re-created zone at serial %d, the deleted one was at %d: not newer (RFC 1982)", now.Serial, old.Serial)
	}
	t.Logf("deleted zone's serial %d, re-created zone's %d", old.Serial, now.Serial)
	sameZone(t, srv.Addr(), bind, nsd) // the re-created zone's records, at its serial
}
