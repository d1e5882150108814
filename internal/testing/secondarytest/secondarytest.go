// Package secondarytest runs real secondary name servers (BIND, NSD) of a primary on loopback
// for tests, through hack/bind-secondary.sh and hack/nsd.sh, started and stopped by PID. Each
// sends its SOA queries and transfers from its own source address, so a primary's logs and
// metrics tell them apart. It also compares zones by AXFR.
package secondarytest

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
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

// Source addresses: BIND listens on 127.0.0.1 (named binds only interface addresses) and sends
// from BINDSource; NSD listens and sends on NSDAddr.
const (
	BINDSource = "127.0.0.21"
	NSDAddr    = "127.0.0.22"
)

// Server is one secondary: its DNS address and the address its queries and transfers come from.
type Server struct {
	// Name is "BIND" or "NSD".
	Name string
	// Addr is the DNS listener (host:port, UDP and TCP), known before Start so that a primary
	// can be told to NOTIFY it.
	Addr string
	// Source is the IP its SOA queries and transfers come from.
	Source string
	// TSIGKey, when set before Start, is "<name>:<algorithm>:<base64 secret>": the server signs
	// its requests to the primary with it and takes only answers (and, NSD, NOTIFYs) signed
	// with it.
	TSIGKey string

	script, dir, port string
	args              []string
	started           bool
}

// BIND returns a BIND secondary on a free port of 127.0.0.1, not yet started. A missing named
// fails the test.
func BIND(t testing.TB) *Server {
	t.Helper()
	hackrun.Need(t, packages, "named", "dig")
	port := strconv.Itoa(ports.TCPUDP(t, "127.0.0.1"))
	return &Server{Name: "BIND", Addr: net.JoinHostPort("127.0.0.1", port), Source: BINDSource,
		script: hackrun.Script(t, "bind-secondary.sh"), dir: t.TempDir(), port: port}
}

// NSD returns an NSD secondary on a free port of NSDAddr, not yet started. A missing nsd fails
// the test.
func NSD(t testing.TB) *Server {
	t.Helper()
	hackrun.Need(t, packages, "nsd", "dig")
	port := strconv.Itoa(ports.TCPUDP(t, NSDAddr))
	return &Server{Name: "NSD", Addr: net.JoinHostPort(NSDAddr, port), Source: NSDAddr,
		script: hackrun.Script(t, "nsd.sh"), dir: t.TempDir(), port: port}
}

// Start starts the server as a secondary of primary (127.0.0.1:<port>) for zones, or again
// with the arguments of the first Start (its zone data kept) when primary is "". The first
// Start stops it when the test ends.
func (s *Server) Start(t testing.TB, primary string, zones ...string) {
	t.Helper()
	if primary != "" {
		host, pport, err := net.SplitHostPort(primary)
		if err != nil {
			t.Fatal(err)
		}
		if s.Name == "BIND" {
			s.args = append([]string{s.port, s.Source, host, pport}, zones...)
		} else {
			s.args = append([]string{s.Source, s.port, host, pport}, zones...)
		}
	}
	s.run(t, append([]string{"start", s.dir}, s.args...)...)
	if !s.started {
		s.started = true
		t.Cleanup(func() { s.Stop(t) })
	}
}

// Stop stops the server (SIGTERM by PID); a no-op when it is not running.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.run(t, "stop", s.dir)
}

// Log returns the server's log so far.
func (s *Server) Log() string {
	name := "named.log"
	if s.Name == "NSD" {
		name = "nsd.log"
	}
	b, _ := os.ReadFile(filepath.Join(s.dir, name))
	return string(b)
}

func (s *Server) run(t testing.TB, args ...string) {
	t.Helper()
	var env []string
	if s.TSIGKey != "" {
		env = []string{"TSIG_KEY=" + s.TSIGKey}
	}
	if out, err := hackrun.Run(context.Background(), s.script, env, args...); err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(s.script), args, err, out)
	}
}

// packages are the Debian packages of the secondaries and dig.
const packages = "bind9 bind9-dnsutils nsd"

// AXFR returns zone's records from addr without the SOA, as lower-case presentation strings,
// and the SOA serial. Errors are the transfer's.
func AXFR(addr, zone string) (map[string]bool, uint32, error) {
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(zone))
	tr := &dns.Transfer{DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second}
	ch, err := tr.In(m, addr)
	if err != nil {
		return nil, 0, fmt.Errorf("axfr %s from %s: %w", zone, addr, err)
	}
	out, serial := map[string]bool{}, uint32(0)
	for env := range ch {
		if env.Error != nil {
			return nil, 0, fmt.Errorf("axfr %s from %s: %w", zone, addr, env.Error)
		}
		for _, rr := range env.RR {
			if soa, ok := rr.(*dns.SOA); ok {
				serial = soa.Serial
				continue
			}
			out[strings.ToLower(rr.String())] = true
		}
	}
	return out, serial, nil
}

// SameZone waits up to timeout until every secondary transfers out what primary does, at its
// serial, and returns how long each took (in order), for the test to report.
func SameZone(t testing.TB, timeout time.Duration, primary, zone string, secs ...*Server) []time.Duration {
	t.Helper()
	want, serial, err := AXFR(primary, zone)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var took []time.Duration
	for _, s := range secs {
		testrun.Eventually(t, timeout, fmt.Sprintf("%s serves %s at serial %d", s.Name, zone, serial), func() error {
			got, gotSerial, err := AXFR(s.Addr, zone)
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
		took = append(took, time.Since(start))
	}
	return took
}
