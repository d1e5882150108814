// Package bindtest starts a real BIND named on loopback for tests, through hack/bind.sh
// (internal/testing/hackrun), with a TSIG key that may update and transfer the zones it adds. It
// owns no provider logic.
package bindtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/pkg/provider/rfc2136"
)

// Server is one real named started by hack/bind.sh, with a TSIG key named KeyName.
type Server struct {
	// Host and Port are the DNS listener.
	Host string
	Port int
	// Secret is the TSIG secret (base64) of KeyName.
	Secret string

	dir    string
	script string
	nzones atomic.Int64
}

// KeyName is the TSIG key that may update and transfer the zones AddZone adds.
const KeyName = "dnsplane-test"

func (s *Server) run(args ...string) ([]byte, error) {
	return hackrun.Run(context.Background(), s.script, nil, args...)
}

// Start starts a real named on free loopback ports in a temp dir and stops it when the test
// ends. A missing named fails the test.
func Start(t testing.TB) *Server {
	t.Helper()
	hackrun.Need(t, "bind9 bind9-dnsutils", "named")
	s := &Server{dir: t.TempDir(), script: hackrun.Script(t, "bind.sh"), Host: "127.0.0.1"}
	var lastOut []byte
	for attempt := range 3 {
		dnsPort, rndcPort := ports.TCPUDP(t, s.Host), ports.TCPUDP(t, s.Host)
		if dnsPort == rndcPort {
			continue
		}
		out, err := s.run("start", s.dir, strconv.Itoa(dnsPort), strconv.Itoa(rndcPort))
		if err != nil {
			lastOut = out
			t.Logf("bind.sh start (attempt %d): %v\n%s", attempt+1, err, out)
			if out, err := s.run("stop", s.dir); err != nil {
				t.Logf("bind.sh stop: %v\n%s", err, out)
			}
			continue
		}
		t.Cleanup(func() {
			if out, err := s.run("stop", s.dir); err != nil {
				t.Errorf("bind.sh stop %s: %v\n%s", s.dir, err, out)
			}
		})
		secret, err := os.ReadFile(filepath.Join(s.dir, "tsig.secret"))
		if err != nil {
			t.Fatal(err)
		}
		s.Port, s.Secret = dnsPort, strings.TrimSpace(string(secret))
		return s
	}
	t.Fatalf("cannot start named with hack/bind.sh:\n%s", lastOut)
	return nil
}

// Addr is the DNS listener, host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// AddZone adds a fresh zone <label>-<n>.rfc2136.test that KeyName may update and transfer,
// deleted when t ends.
func (s *Server) AddZone(t testing.TB, label string) string {
	t.Helper()
	zone := fmt.Sprintf("%s-%d.rfc2136.test", label, s.nzones.Add(1))
	if out, err := s.run("addzone", s.dir, zone); err != nil {
		t.Fatalf("bind.sh addzone %s: %v\n%s", zone, err, out)
	}
	t.Cleanup(func() {
		if out, err := s.run("delzone", s.dir, zone); err != nil {
			t.Errorf("bind.sh delzone %s: %v\n%s", zone, err, out)
		}
	})
	return zone
}

// AddSignedZone adds zone (a full name), which KeyName may update and transfer and which BIND
// signs itself (dnssec-policy default: one CSK, flags 257), deleted when t ends.
func (s *Server) AddSignedZone(t testing.TB, zone string) {
	t.Helper()
	if out, err := s.run("addzone", s.dir, zone, "signed"); err != nil {
		t.Fatalf("bind.sh addzone %s signed: %v\n%s", zone, err, out)
	}
	t.Cleanup(func() {
		if out, err := s.run("delzone", s.dir, zone); err != nil {
			t.Errorf("bind.sh delzone %s: %v\n%s", zone, err, out)
		}
	})
}

// Provider returns an RFC 2136 provider for the server with the given TSIG secret.
func (s *Server) Provider(t testing.TB, secret string) *rfc2136.Provider {
	t.Helper()
	p, err := rfc2136.New(rfc2136.Config{Host: s.Host, Port: s.Port, KeyName: KeyName, Secret: secret, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
