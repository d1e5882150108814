package validator

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

// Stub is a zone Unbound asks one server for (a stub zone).
type Stub struct {
	Zone string
	Addr string // host:port
}

// Unbound is the configuration of a validating Unbound.
type Unbound struct {
	// Host is the loopback address Unbound listens on, on a free port.
	Host string
	// Anchor is the trust anchor: a DS record in presentation form.
	Anchor string
	// Stubs are the zones Unbound resolves and the servers it asks for them; stubs of one zone
	// make one stub zone that asks each of their servers.
	Stubs []Stub
	// MaxTTL, when not zero, caps how long Unbound caches an answer, positive or negative.
	MaxTTL time.Duration
	// AggressiveNSEC is Unbound's aggressive-nsec (RFC 8198): answers synthesized from cached
	// NSEC records.
	AggressiveNSEC bool
	// Probe is the name whose SOA Unbound must answer before StartUnbound returns.
	Probe string
}

// unboundConf is a validating Unbound under dir %[1]s on %[2]s with the trust anchor %[3]s,
// the aggressive-nsec setting %[4]s and the extra server lines and stub zones %[5]s. Names
// under test. are not Unbound's default local zone.
const unboundConf = `server:
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
    aggressive-nsec: %[4]s
    prefetch: no
    local-zone: "test." nodefault
    trust-anchor: "%[3]s"
%[5]s`

// AtPort writes host:port as Unbound's host@port.
func AtPort(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return host + "@" + port
}

// conf is the configuration text of u under dir, listening on addr.
func (u Unbound) conf(dir, addr string) string {
	var extra strings.Builder
	if u.MaxTTL > 0 {
		secs := int(u.MaxTTL.Seconds())
		fmt.Fprintf(&extra, "    cache-max-ttl: %d\n    cache-max-negative-ttl: %d\n", secs, secs)
	}
	var zones []string // stubs of one zone are one stub zone with each address
	addrs := map[string][]string{}
	for _, s := range u.Stubs {
		z := dns.Fqdn(s.Zone)
		if _, ok := addrs[z]; !ok {
			zones = append(zones, z)
		}
		addrs[z] = append(addrs[z], AtPort(s.Addr))
	}
	for _, z := range zones {
		fmt.Fprintf(&extra, "stub-zone:\n    name: %q\n", z)
		for _, a := range addrs[z] {
			fmt.Fprintf(&extra, "    stub-addr: %s\n", a)
		}
	}
	aggressive := "no"
	if u.AggressiveNSEC {
		aggressive = "yes"
	}
	anchor := strings.Join(strings.Fields(u.Anchor), " ")
	return fmt.Sprintf(unboundConf, dir, AtPort(addr), anchor, aggressive, extra.String())
}

// StartUnbound runs a validating Unbound configured by u until the test ends, waits until it
// answers u.Probe's SOA, and returns its address. The test is skipped, naming the package,
// when Unbound is not installed.
func StartUnbound(t testing.TB, u Unbound) string {
	t.Helper()
	hackrun.Need(t, "unbound", "unbound")
	dir := t.TempDir()
	addr := net.JoinHostPort(u.Host, strconv.Itoa(ports.TCPUDP(t, u.Host)))
	conf := filepath.Join(dir, "unbound.conf")
	if err := os.WriteFile(conf, []byte(u.conf(dir, addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	unbound := testrun.Start(t, exec.Command("unbound", "-d", "-c", conf))
	testrun.Eventually(t, 15*time.Second, "unbound answers on "+addr, func() error {
		if err := unbound.Exited(); err != nil {
			return fmt.Errorf("unbound %w", err)
		}
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(u.Probe), dns.TypeSOA)
		_, _, err := (&dns.Client{Net: "udp", Timeout: time.Second}).Exchange(m, addr)
		return err
	})
	return addr
}
