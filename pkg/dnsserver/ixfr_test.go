package dnsserver

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/xfr"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// ixfrIn asks addr for an IXFR of zone from serial over TCP with miekg's dns.Transfer and
// returns every record of the answer.
func ixfrIn(t testing.TB, addr, zone string, serial uint32) ([]dns.RR, error) {
	t.Helper()
	m := new(dns.Msg)
	m.SetIxfr(zone, serial, "ns1."+zone, "hostmaster."+zone)
	return transfer(m, addr)
}

// zoneContent returns the records of an AXFR answer without its SOAs, as presentation strings.
func zoneContent(rrs []dns.RR) map[string]bool {
	out := map[string]bool{}
	for _, rr := range rrs {
		if rr.Header().Rrtype != dns.TypeSOA {
			out[rr.String()] = true
		}
	}
	return out
}

// applyIXFR applies an incremental IXFR answer (RFC 1995 §4: current SOA, then per difference
// the old SOA, deletions, the new SOA, additions, then the current SOA) to content, as a
// secondary does, and returns the serial it ends at.
func applyIXFR(t *testing.T, content map[string]bool, rrs []dns.RR) uint32 {
	t.Helper()
	if len(rrs) < 2 {
		t.Fatalf("IXFR of %d records is not incremental", len(rrs))
	}
	cur := rrs[0].(*dns.SOA).Serial
	adding := true // the first SOA below opens a deletion section
	for _, rr := range rrs[1 : len(rrs)-1] {
		if _, ok := rr.(*dns.SOA); ok {
			adding = !adding
			continue
		}
		k := rr.String()
		switch {
		case adding:
			content[k] = true
		case !content[k]:
			t.Errorf("IXFR deletes %s, which the version does not hold", k)
		default:
			delete(content, k)
		}
	}
	if last, ok := rrs[len(rrs)-1].(*dns.SOA); !ok || last.Serial != cur {
		t.Errorf("IXFR does not end with the current SOA: %v", rrs[len(rrs)-1])
	}
	return cur
}

// ixfrEnv is a zone served with metrics, changed in steps.
type ixfrEnv struct {
	store   *zonedb.Store
	srv     *Server
	metrics *Metrics
}

func newIXFREnv(t *testing.T, sopts zonedb.StoreOptions, opts ServerOptions) *ixfrEnv {
	t.Helper()
	sopts.Clock = countingClock()
	store := zonedb.NewStore(sopts)
	if _, err := store.CreateZone("ixfr.test", zonedb.ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	opts.Metrics = m
	return &ixfrEnv{store: store, srv: startServer(t, store, opts), metrics: m}
}

// step makes change i: it replaces a.ixfr.test's TXT, adds h<i>, deletes h<i-2>, and changes
// every record's TTL of the shared set each third step.
func (e *ixfrEnv) step(t *testing.T, i int) {
	t.Helper()
	if err := e.store.Update("ixfr.test", func(tx *zonedb.Tx) error {
		put(t, tx, "", nil, fmt.Sprintf("a.ixfr.test. 60 IN TXT \"v%d\"", i))
		put(t, tx, "", nil, fmt.Sprintf("h%d.ixfr.test. 60 IN A 192.0.2.%d", i, i))
		tx.Delete(zonedb.SetKey{Name: fmt.Sprintf("h%d.ixfr.test.", i-2), Type: dns.TypeA})
		put(t, tx, "", nil, fmt.Sprintf("shared.ixfr.test. %d IN A 192.0.2.200", 60+i/3), fmt.Sprintf("shared.ixfr.test. %d IN A 192.0.2.201", 60+i/3))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// waitTransfers waits until dnsplane_dnsserver_transfers_total{type=kind} holds want (result ->
// count): a transfer is counted once written, which may be after the client has read it.
func (e *ixfrEnv) waitTransfers(t *testing.T, kind string, want map[string]float64) {
	t.Helper()
	testrun.Eventually(t, 10*time.Second, "transfer metrics", func() error {
		for result, n := range want {
			if got := testutil.ToFloat64(e.metrics.XFR.Transfers.WithLabelValues(kind, result)); got != n {
				return fmt.Errorf("%s %s counted %v, want %v", kind, result, got, n)
			}
		}
		return nil
	})
}

// TestIXFR_ServesTheCondensedDeltaFromTheJournal: from every journalled
// serial, the IXFR answer is one condensed difference (two SOA pairs, RFC 1995 §5) that turns
// the zone at that serial into the zone now.
func TestIXFR_ServesTheCondensedDeltaFromTheJournal(t *testing.T) {
	e := newIXFREnv(t, zonedb.StoreOptions{}, ServerOptions{})
	versions := map[uint32]map[string]bool{}
	for i := range 8 {
		axfr, err := transferIn(t, e.srv.Addr(), "ixfr.test.")
		if err != nil {
			t.Fatal(err)
		}
		versions[axfr[0].(*dns.SOA).Serial] = zoneContent(axfr)
		e.step(t, i+2)
	}
	now, err := transferIn(t, e.srv.Addr(), "ixfr.test.")
	if err != nil {
		t.Fatal(err)
	}
	want, cur := zoneContent(now), now[0].(*dns.SOA).Serial
	for serial, content := range versions {
		got, err := ixfrIn(t, e.srv.Addr(), "ixfr.test.", serial)
		if err != nil {
			t.Fatalf("IXFR from %d: %v", serial, err)
		}
		soas := 0
		for _, rr := range got {
			if rr.Header().Rrtype == dns.TypeSOA {
				soas++
			}
		}
		if soas != 4 || got[1].(*dns.SOA).Serial != serial {
			t.Errorf("IXFR from %d: %d SOAs, the second at %v; want 4 (condensed), the client's serial second", serial, soas, got[1])
		}
		c := maps.Clone(content)
		if end := applyIXFR(t, c, got); end != cur || !maps.Equal(c, want) {
			t.Errorf("IXFR from %d applied: serial %d, content equal %v; want %d and the AXFR's", serial, end, maps.Equal(c, want), cur)
		}
	}
	e.waitTransfers(t, "ixfr", map[string]float64{xfr.ResultIncremental: float64(len(versions))})
}

// TestIXFR_AClientNotBehindGetsTheSOA: RFC 1995 §2, a client at (or past) the current serial
// gets the SOA alone, over TCP and UDP; over UDP a client behind gets it too, which sends it to
// TCP. Without the client's SOA in the authority section (§3) the answer is FORMERR.
func TestIXFR_AClientNotBehindGetsTheSOA(t *testing.T) {
	e := newIXFREnv(t, zonedb.StoreOptions{}, ServerOptions{})
	e.step(t, 2)
	e.step(t, 3) // serial 3
	got, err := ixfrIn(t, e.srv.Addr(), "ixfr.test.", 3)
	if err != nil || len(got) != 1 || got[0].(*dns.SOA).Serial != 3 {
		t.Fatalf("TCP IXFR at the current serial: %v %v; want the SOA alone", got, err)
	}
	if got, err := ixfrIn(t, e.srv.Addr(), "ixfr.test.", 7); err != nil || len(got) != 1 || got[0].(*dns.SOA).Serial != 3 {
		t.Fatalf("TCP IXFR from a client ahead: %v %v; want the SOA alone", got, err)
	}
	for _, serial := range []uint32{3, 1} {
		m := new(dns.Msg)
		m.SetIxfr("ixfr.test.", serial, "ns1.ixfr.test.", "hostmaster.ixfr.test.")
		resp := exchange(t, e.srv.Addr(), "udp", m)
		if resp.Rcode != dns.RcodeSuccess || !resp.Authoritative || len(resp.Answer) != 1 || resp.Answer[0].(*dns.SOA).Serial != 3 {
			t.Errorf("UDP IXFR from %d: %v; want the current SOA alone", serial, resp)
		}
	}
	m := new(dns.Msg)
	m.SetQuestion("ixfr.test.", dns.TypeIXFR)
	if resp := exchange(t, e.srv.Addr(), "tcp", m); resp.Rcode != dns.RcodeFormatError {
		t.Errorf("IXFR without an SOA: rcode %s, want FORMERR", dns.RcodeToString[resp.Rcode])
	}
	e.waitTransfers(t, "ixfr", map[string]float64{xfr.ResultUpToDate: 3, xfr.ResultUseTCP: 1, xfr.ResultRefused: 1})
}

// TestIXFR_BeyondTheJournalIsTheFullZone: once the journal (two changes
// here) no longer reaches the client's serial, the IXFR answer is the whole zone as in AXFR
// (RFC 1995 §4), which miekg's client takes as such.
func TestIXFR_BeyondTheJournalIsTheFullZone(t *testing.T) {
	e := newIXFREnv(t, zonedb.StoreOptions{JournalDeltas: 2}, ServerOptions{})
	for i := range 4 {
		e.step(t, i+2) // serials 2..5; the journal holds 3 -> 4 -> 5
	}
	axfr, err := transferIn(t, e.srv.Addr(), "ixfr.test.")
	if err != nil {
		t.Fatal(err)
	}
	for _, serial := range []uint32{1, 2} {
		got, err := ixfrIn(t, e.srv.Addr(), "ixfr.test.", serial)
		if err != nil {
			t.Fatalf("IXFR from %d: %v", serial, err)
		}
		if len(got) != len(axfr) || got[1].Header().Rrtype == dns.TypeSOA || !maps.Equal(zoneContent(got), zoneContent(axfr)) {
			t.Errorf("IXFR from %d beyond the journal: %d records, second %v; want the AXFR's %d", serial, len(got), got[1], len(axfr))
		}
	}
	if got, err := ixfrIn(t, e.srv.Addr(), "ixfr.test.", 3); err != nil || got[1].Header().Rrtype != dns.TypeSOA {
		t.Errorf("IXFR from 3, in the journal: %v %v; want incremental", got, err)
	}
	e.waitTransfers(t, "ixfr", map[string]float64{xfr.ResultFull: 2, xfr.ResultIncremental: 1})
}

// netnsEnv marks this test binary re-run by localNonLoopback in a network namespace of its own.
const netnsEnv = "DNSSERVER_TEST_NETNS"

// netnsAddr is the non-loopback address that namespace gives its lo (TEST-NET-1, RFC 5737; it
// exists only inside the namespace, so no traffic leaves this machine's loopback).
const netnsAddr = "192.0.2.53"

// localNonLoopback gives the calling test an IPv4 address of this machine that is not loopback,
// on every machine: it re-runs the test in a new network namespace (unshare -rn) whose lo also
// holds netnsAddr, and returns false in this process once that run passed (the caller returns),
// failing the test with the run's output when it did not. In the re-run it returns netnsAddr
// and true.
func localNonLoopback(t *testing.T) (netip.Addr, bool) {
	t.Helper()
	if os.Getenv(netnsEnv) != "" {
		return netip.MustParseAddr(netnsAddr), true
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux) is needed for a network namespace: %v", err)
	}
	script := `ip link set lo up && ip addr add ` + netnsAddr + `/32 dev lo && exec "$0" "$@"`
	cmd := exec.Command(unshare, "-rn", "sh", "-c", script, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in a network namespace: %v\n%s", t.Name(), err, out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("%s in a network namespace ran no test:\n%s", t.Name(), out)
	}
	return netip.Addr{}, false
}

// TestTransfer_OnlyAllowedNetworksMayTransfer: a client outside
// --local-allow-transfer (and not on loopback) gets REFUSED for AXFR and IXFR; inside, it
// transfers. The client is this machine on a non-loopback address.
func TestTransfer_OnlyAllowedNetworksMayTransfer(t *testing.T) {
	ip, here := localNonLoopback(t)
	if !here {
		return
	}
	for _, tc := range []struct {
		name    string
		allow   []netip.Prefix
		refused bool
	}{
		{"no networks allowed", nil, true},
		{"another network", []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}, true},
		{"the client's network", []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.PrefixFrom(ip, 32)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := zonedb.NewStore(zonedb.StoreOptions{})
			if _, err := store.CreateZone("acl.test", zonedb.ZoneMeta{}); err != nil {
				t.Fatal(err)
			}
			m, _ := NewMetrics(prometheus.NewRegistry())
			srv := startServer(t, store, ServerOptions{Addr: net.JoinHostPort(ip.String(), "0"), AllowTransfer: tc.allow, Metrics: m})
			axfr := new(dns.Msg)
			axfr.SetAxfr("acl.test.")
			ixfr := new(dns.Msg)
			ixfr.SetIxfr("acl.test.", 0, "ns1.acl.test.", "hostmaster.acl.test.")
			for _, req := range []*dns.Msg{axfr, ixfr} {
				resp := exchange(t, srv.Addr(), "tcp", req)
				if refused := resp.Rcode == dns.RcodeRefused; refused != tc.refused || (!refused && len(resp.Answer) < 1) {
					t.Errorf("%s from %s: rcode %s, %d answers; want refused %v", dns.TypeToString[req.Question[0].Qtype], ip, dns.RcodeToString[resp.Rcode], len(resp.Answer), tc.refused)
				}
			}
			if want := map[bool]float64{true: 1, false: 0}[tc.refused]; testutil.ToFloat64(m.XFR.Transfers.WithLabelValues("axfr", xfr.ResultRefused)) != want {
				t.Errorf("axfr refused counted %v, want %v", testutil.ToFloat64(m.XFR.Transfers.WithLabelValues("axfr", xfr.ResultRefused)), want)
			}
		})
	}
}

// TestTransferAllowed is the admission table: with AllowTransfer, loopback always, else the
// prefixes; without it, loopback clients only.
func TestTransferAllowed(t *testing.T) {
	nets := xfr.New(nil, xfr.Options{AllowTransfer: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")}})
	loopbackOnly := xfr.New(nil, xfr.Options{})
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip)} }
	for _, tc := range []struct {
		addr           net.Addr
		nets, loopback bool // allowed with AllowTransfer, and without it
	}{
		{tcp("127.0.0.1"), true, true},
		{&net.UDPAddr{IP: net.ParseIP("::1")}, true, true},
		{tcp("127.8.9.10"), true, true},
		{tcp("::1"), true, true},
		{tcp("::ffff:127.0.0.1"), true, true},
		{tcp("10.9.8.7"), true, false},
		{tcp("::ffff:10.9.8.7"), true, false},
		{tcp("2001:db8::5"), true, false},
		{tcp("11.0.0.1"), false, false},
		{tcp("2001:db9::5"), false, false},
		{tcp("192.0.2.1"), false, false},
		{tcp("::2"), false, false},
		{&net.UnixAddr{Name: "x"}, false, false},
	} {
		ip, _ := addrIP(tc.addr)
		if got := nets.Allowed(xfr.Client{Addr: ip}); got != tc.nets {
			t.Errorf("with AllowTransfer: Allowed(%v) = %v, want %v", tc.addr, got, tc.nets)
		}
		if got := loopbackOnly.Allowed(xfr.Client{Addr: ip}); got != tc.loopback {
			t.Errorf("loopback only: Allowed(%v) = %v, want %v", tc.addr, got, tc.loopback)
		}
	}
}

// TestServer_NotifyIsAcknowledgedAsAPrimary: RFC 1996 §4.7, a NOTIFY for a served zone gets a
// NOERROR answer (AA set, question echoed, opcode NOTIFY); for another name NOTAUTH (§3.10);
// with a question type other than SOA FORMERR (§3.7). It was NOTIMP before.
func TestServer_NotifyIsAcknowledgedAsAPrimary(t *testing.T) {
	e := newIXFREnv(t, zonedb.StoreOptions{}, ServerOptions{})
	for _, tc := range []struct {
		zone  string
		qtype uint16
		rcode int
	}{
		{"ixfr.test.", dns.TypeSOA, dns.RcodeSuccess},
		{"IXFR.test.", dns.TypeSOA, dns.RcodeSuccess},
		{"other.test.", dns.TypeSOA, dns.RcodeNotAuth},
		{"ixfr.test.", dns.TypeA, dns.RcodeFormatError},
	} {
		for _, proto := range []string{"udp", "tcp"} {
			m := new(dns.Msg)
			m.SetNotify(tc.zone)
			m.Question[0].Qtype = tc.qtype
			resp := exchange(t, e.srv.Addr(), proto, m)
			if resp.Opcode != dns.OpcodeNotify || resp.Rcode != tc.rcode || !resp.Response ||
				(tc.rcode == dns.RcodeSuccess && (!resp.Authoritative || !slices.Equal(resp.Question, m.Question))) {
				t.Errorf("%s NOTIFY %s %s: opcode %s rcode %s AA %v; want rcode %s", proto, tc.zone, dns.TypeToString[tc.qtype],
					dns.OpcodeToString[resp.Opcode], dns.RcodeToString[resp.Rcode], resp.Authoritative, dns.RcodeToString[tc.rcode])
			}
		}
	}
}
