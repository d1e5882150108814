package controllers_test

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
)

// unboundHost is the loopback address the caching Unbound of the rollover test listens on.
const unboundHost = "127.0.0.28"

// cachingUnboundConf: a validating, caching Unbound under dir %[1]s on %[2]s, with the trust
// anchor %[3]s (a DS of the parent zone), asking the embedded server %[4]s for the parent zone
// %[5]s and the child zone %[6]s through stub zones. Every RRset, key and answer it caches is
// kept at most %[7]d seconds: the TTLs the rollover machine waits out in the test
// (Config.RolloverTTLs), which the zones' own TTLs (300 s, the DS 3600 s) would exceed.
const cachingUnboundConf = `server:
    directory: "%[1]s"
    pidfile: "%[1]s/unbound.pid"
    interface: %[2]s
    do-daemonize: no
    use-syslog: no
    logfile: ""
    username: ""
    chroot: ""
    verbosity: 1
    val-log-level: 2
    do-not-query-localhost: no
    access-control: 127.0.0.0/8 allow
    module-config: "validator iterator"
    qname-minimisation: no
    prefetch: no
    cache-max-ttl: %[7]d
    cache-max-negative-ttl: %[7]d
    local-zone: "test." nodefault
    trust-anchor: "%[3]s"
stub-zone:
    name: "%[5]s"
    stub-addr: %[4]s
stub-zone:
    name: "%[6]s"
    stub-addr: %[4]s
`

// startCachingUnbound runs a validating Unbound with its cache (cachingUnboundConf) until the
// test ends, and returns its address.
func startCachingUnbound(t *testing.T, server, pzone, czone, anchorDS string, maxTTL time.Duration) string {
	t.Helper()
	hackrun.Need(t, "unbound", "unbound")
	dir := t.TempDir()
	addr := net.JoinHostPort(unboundHost, strconv.Itoa(ports.TCPUDP(t, unboundHost)))
	host, port, _ := net.SplitHostPort(server)
	anchor := strings.Join(strings.Fields(anchorDS), " ")
	text := fmt.Sprintf(cachingUnboundConf, dir, strings.Replace(addr, ":", "@", 1), anchor, host+"@"+port,
		dns.Fqdn(pzone), dns.Fqdn(czone), int(maxTTL.Seconds()))
	conf := filepath.Join(dir, "unbound.conf")
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command("unbound", "-d", "-c", conf)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("unbound: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("unbound output:\n%s", out.String())
		}
	})
	eventually(t, 15*time.Second, "unbound answers on "+addr, func() error {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("unbound exited: %v\n%s", err, out.String())
		default:
		}
		_, err := askResolver(addr, czone, dns.TypeSOA)
		return err
	})
	return addr
}

// askResolver asks the resolver at addr for name/qtype, recursion desired, with the DO bit.
func askResolver(addr, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(1232, true)
	r, _, err := (&dns.Client{Net: "udp", Timeout: 5 * time.Second}).Exchange(m, addr)
	if err == nil && r.Truncated {
		r, _, err = (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(m, addr)
	}
	return r, err
}

// resolverTally counts a resolver loop's answers.
type resolverTally struct {
	queries, bad, timeouts int
	last                   string
}

// resolverLoop asks the resolver at addr, every 200 ms until stop is closed, for zone's SOA and
// DNSKEY set and a name of it that does not exist, and counts the answers that are not secure
// (SERVFAIL, or no AD: bogus or insecure) and the queries without an answer; the returned
// function waits for the loop's end and returns its tally.
func resolverLoop(addr, zone string, stop <-chan struct{}) func() resolverTally {
	var mu sync.Mutex
	var tally resolverTally
	done := make(chan struct{})
	ask := func(name string, qtype, rcode uint16) {
		r, err := askResolver(addr, name, qtype)
		mu.Lock()
		defer mu.Unlock()
		tally.queries++
		switch {
		case err != nil:
			tally.timeouts++
		case r.Rcode != int(rcode) || !r.AuthenticatedData:
			tally.bad++
			tally.last = fmt.Sprintf("%s %s: %s AD=%t", name, dns.TypeToString[qtype], dns.RcodeToString[r.Rcode], r.AuthenticatedData)
		}
	}
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			ask(zone, dns.TypeSOA, dns.RcodeSuccess)
			ask(zone, dns.TypeDNSKEY, dns.RcodeSuccess)
			ask("nope."+zone, dns.TypeA, dns.RcodeNameError)
		}
	}()
	return func() resolverTally {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return tally
	}
}

// activeTag is the tag of the active key of role in status.dnssec (0 when none).
func activeTag(st *dnsv1.DNSSECStatus, role string) int32 {
	for _, k := range st.Keys {
		if k.Role == role && k.State == "Active" {
			return k.Tag
		}
	}
	return 0
}

// rollToTheEnd asks for a rollover of role on DNSZone z (annotation) of cluster c and waits
// until it ends: the phases seen, a new active key of role, two keys, no rollover phase,
// Secure=True Secure, and the parent zone pzone answering the child's DS set czone. It returns
// the phases seen.
func rollToTheEnd(t *testing.T, c *cluster, z *dnsv1.DNSZone, role, pzone, czone string) []string {
	t.Helper()
	if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), z); err != nil {
		t.Fatal(err)
	}
	old := activeTag(z.Status.DNSSEC, role)
	eventually(t, 20*time.Second, "annotate", func() error {
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), z); err != nil {
			return err
		}
		z.Annotations = map[string]string{dnszone.AnnotationRollover: role}
		return c.client.Update(c.ctx(), z)
	})
	var phases []string
	eventually(t, 4*time.Minute, role+" rollover's end", func() error {
		got := &dnsv1.DNSZone{}
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), got); err != nil {
			return err
		}
		st := got.Status.DNSSEC
		if st == nil {
			return fmt.Errorf("no status.dnssec")
		}
		if p := st.RolloverPhase; p != "" && !slices.Contains(phases, p) {
			phases = append(phases, p)
		}
		sec := meta.FindStatusCondition(got.Status.Conditions, dnsv1.ConditionSecure)
		if len(phases) < 3 || st.RolloverPhase != "" || len(st.Keys) != 2 || activeTag(st, role) == old ||
			sec == nil || sec.Reason != dnsv1.ReasonSecure {
			return fmt.Errorf("phases seen %v; status.dnssec %+v; Secure %+v", phases, st, sec)
		}
		if got := dsIn(transfer(t, c.dnsAddr, pzone), czone); !slices.Equal(got, dsRdata(t, st.DS)) {
			return fmt.Errorf("parent DS %v, want %v", got, st.DS)
		}
		return nil
	})
	return phases
}

// TestDNSSEC_ZSKAndKSKRolloversUnderACachingUnbound: with the rollover TTLs shortened to 2 s
// and a validating Unbound that caches every RRset and key for at most those 2 s (anchored at
// the signed parent's DS), a ZSK rollover (pre-publication), then a KSK rollover (double-DS) of
// a KSKZSK child DNSZone linked to the parent run to their end while a loop asks Unbound, every
// 200 ms, for the child's SOA, its DNSKEY set and a name that does not exist: every answer is
// secure (AD set, no SERVFAIL). Each rollover's duration and query count are logged.
func TestDNSSEC_ZSKAndKSKRolloversUnderACachingUnbound(t *testing.T) {
	ttl := 2 * time.Second
	c := startClusterWith(t, "dnssec-unbound", time.Hour, 5*time.Hour, clusterOptions{DNSAddr: "127.0.0.1:0",
		NameServerAddr: netip.MustParseAddr("127.0.0.1"), RolloverTTLs: dnszone.RolloverTTLs{DNSKEY: ttl, MaxZone: ttl, ParentDS: ttl}})
	ns := "unbound-roll"
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: factory.TypeLocal})
	const pzone, czone = "ub.dnssec.test", "c.ub.dnssec.test"
	parent := zoneObj(ns, "p", pzone, signed(""))
	child := zoneObj(ns, "c", czone, func(z *dnsv1.DNSZone) {
		signed(dnsv1.KeySchemeKSKZSK)(z)
		z.Spec.LinkToParentDomain = true
	})
	c.create(parent, child)
	c.waitCondition(child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonSecure, 2*time.Minute)
	if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(parent), parent); err != nil {
		t.Fatal(err)
	}
	resolver := startCachingUnbound(t, c.dnsAddr, pzone, czone, parent.Status.DNSSEC.DS[0], ttl)
	for _, role := range []string{"ZSK", "KSK"} {
		stop := make(chan struct{})
		result := resolverLoop(resolver, czone, stop)
		start := time.Now()
		phases := rollToTheEnd(t, c, child, role, pzone, czone)
		took := time.Since(start)
		// The last versions may be in the cache for one more TTL: keep asking through it.
		time.Sleep(2 * ttl)
		close(stop)
		tally := result()
		t.Logf("%s rollover: phases %v in %s; Unbound (cached, max TTL %s) answered %d queries: %d not secure, %d without an answer",
			role, phases, took.Round(100*time.Millisecond), ttl, tally.queries, tally.bad, tally.timeouts)
		if tally.queries == 0 || tally.bad != 0 {
			t.Fatalf("%s rollover: %d of %d answers not secure; last: %s", role, tally.bad, tally.queries, tally.last)
		}
	}
}
