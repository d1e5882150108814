package dnsserver_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
)

// The secondaries' addresses: BIND listens on 127.0.0.1 (named binds only interface addresses)
// and sends from bindSource; NSD listens and sends on nsdAddr. The primary tells them apart by
// the source address of their transfers.
const (
	bindSource = "127.0.0.21"
	nsdAddr    = "127.0.0.22"
	secZone    = "sec.test"
	// converge bounds how long a secondary may take to serve a change: generous, for a loaded
	// machine; the measured time is far below (the test logs it).
	converge = 60 * time.Second
)

// repoRoot is the directory holding go.mod, above the test's working directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = filepath.Dir(dir)
	}
}

// freePort returns a port free for TCP and UDP on host.
func freePort(t *testing.T, host string) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if pc, err := net.ListenPacket("udp", net.JoinHostPort(host, strconv.Itoa(port))); err == nil {
			_ = pc.Close()
			return port
		}
	}
	t.Fatalf("no free port on %s", host)
	return 0
}

// secondary is one real server started by a hack/ script, stopped when the test ends.
type secondary struct {
	name, script, dir, addr string
	args                    []string // start's arguments after <dir>
}

func (s *secondary) run(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, s.script, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(s.script), args, err, out)
	}
}

func (s *secondary) start(t *testing.T) {
	t.Helper()
	s.run(t, append([]string{"start", s.dir}, s.args...)...)
}

func (s *secondary) stop(t *testing.T) { t.Helper(); s.run(t, "stop", s.dir) }

// startSecondaries starts a BIND and an NSD secondary of primary (127.0.0.1:port) for zone.
func startSecondaries(t *testing.T, primaryPort int, zone string) (bind, nsd *secondary) {
	t.Helper()
	for _, bin := range []string{"named", "nsd", "dig"} {
		if _, err := exec.LookPath(bin); err != nil {
			if _, err := os.Stat("/usr/sbin/" + bin); err != nil {
				t.Fatalf("%s is not installed: apt-get install -y bind9 bind9-dnsutils nsd", bin)
			}
		}
	}
	root, pp := repoRoot(t), strconv.Itoa(primaryPort)
	bport, nport := freePort(t, "127.0.0.1"), freePort(t, nsdAddr)
	bind = &secondary{name: "BIND", script: filepath.Join(root, "hack", "bind-secondary.sh"), dir: t.TempDir(),
		addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(bport)), args: []string{strconv.Itoa(bport), bindSource, "127.0.0.1", pp, zone}}
	nsd = &secondary{name: "NSD", script: filepath.Join(root, "hack", "nsd.sh"), dir: t.TempDir(),
		addr: net.JoinHostPort(nsdAddr, strconv.Itoa(nport)), args: []string{nsdAddr, strconv.Itoa(nport), "127.0.0.1", pp, zone}}
	for _, s := range []*secondary{bind, nsd} {
		s.start(t)
		t.Cleanup(func() { s.stop(t) })
	}
	return bind, nsd
}

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

// axfr returns the zone's records from addr, without SOA, as presentation strings, and the
// serial.
func axfr(addr, zone string) (map[string]bool, uint32, error) {
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(zone))
	tr := &dns.Transfer{DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second}
	ch, err := tr.In(m, addr)
	if err != nil {
		return nil, 0, err
	}
	out, serial := map[string]bool{}, uint32(0)
	for env := range ch {
		if env.Error != nil {
			return nil, 0, env.Error
		}
		for _, rr := range env.RR {
			if soa, ok := rr.(*dns.SOA); ok {
				serial = soa.Serial
				continue
			}
			// Owner names and rdata as the primary writes them; secondaries may differ in case.
			out[strings.ToLower(rr.String())] = true
		}
	}
	return out, serial, nil
}

// sameZone waits until every secondary transfers out what the primary does, at its serial.
func sameZone(t *testing.T, primary string, secs ...*secondary) {
	t.Helper()
	want, serial, err := axfr(primary, secZone)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secs {
		start := time.Now()
		testrun.Eventually(t, converge, s.name+" serves serial "+strconv.Itoa(int(serial)), func() error {
			got, gotSerial, err := axfr(s.addr, secZone)
			switch {
			case err != nil:
				return err
			case gotSerial != serial:
				return fmt.Errorf("serial %d, want %d", gotSerial, serial)
			case !maps.Equal(got, want):
				return fmt.Errorf("zone differs at serial %d: %v, want %v", serial, got, want)
			}
			return nil
		})
		t.Logf("%s served serial %d %s after the check began", s.name, serial, time.Since(start).Round(time.Millisecond))
	}
}

// TestSecondaries_BINDAndNSDFollowTheEmbeddedServer (issue 16, item 2): a real BIND and a real
// NSD, secondaries of the embedded server, serve every change published through the local
// provider's ApplyChanges: NOTIFY, then IXFR (the embedded server logs an incremental transfer to
// each one's source address). A BIND stopped while more changes than the journal holds are made
// is brought up to date, at the next NOTIFY, by a full zone in the IXFR answer (RFC 1995 §4),
// and NSD, which stayed up, keeps getting increments.
func TestSecondaries_BINDAndNSDFollowTheEmbeddedServer(t *testing.T) {
	const journal = 3
	store := dnsserver.NewStore(dnsserver.StoreOptions{Dir: t.TempDir(), JournalDeltas: journal})
	logs := &transferLog{}
	log := funcr.New(logs.add, funcr.Options{Verbosity: 1})
	metrics, err := dnsserver.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := dnsserver.NewServer(store, dnsserver.ServerOptions{Addr: "127.0.0.1:0", Logger: log, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	testrun.Background(t, "server", srv.Start)
	_, port, _ := net.SplitHostPort(srv.Addr())
	primaryPort, _ := strconv.Atoi(port)

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

	bind, nsd := startSecondaries(t, primaryPort, secZone)
	notifier := dnsserver.NewNotifier(store, dnsserver.NotifierOptions{Targets: []string{bind.addr, nsd.addr}, Metrics: metrics, Logger: log})
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
	for _, s := range []struct{ name, source string }{{"BIND", bindSource}, {"NSD", nsdAddr}} {
		if n := logs.count(s.source, "ixfr", "incremental"); n < 3 {
			t.Errorf("%s (from %s) took %d incremental IXFRs for 3 changes, want 3: %v", s.name, s.source, n, logs.lines)
		}
	}

	// BIND misses more changes than the journal holds.
	bind.stop(t)
	for i := range journal + 1 {
		apply(provider.Change{Action: provider.ActionCreate, After: a(fmt.Sprintf("m%d", i), fmt.Sprintf("192.0.2.%d", 100+i))})
		sameZone(t, srv.Addr(), nsd)
	}
	fullBefore := logs.count(bindSource, "ixfr", "full")
	bind.start(t)
	// named loads its zone file and waits for the SOA refresh timer (an hour) or a NOTIFY: the
	// next change sends one, and named asks an IXFR from serial 5, which the journal no longer
	// reaches.
	apply(provider.Change{Action: provider.ActionCreate, After: a("after", "192.0.2.99")})
	sameZone(t, srv.Addr(), bind, nsd)
	if n := logs.count(bindSource, "ixfr", "full"); n <= fullBefore {
		t.Errorf("BIND, back after %d changes with a journal of %d, got no full zone in an IXFR answer: %v", journal+1, journal, logs.lines)
	}
	if n := logs.count(nsdAddr, "ixfr", "incremental"); n < 3+journal+2 {
		t.Errorf("NSD took %d incremental IXFRs, want %d", n, 3+journal+2)
	}
}
