// Package pdnstest starts a real PowerDNS Authoritative server on loopback for tests, through
// hack/pdns.sh (internal/testing/hackrun). It owns no provider logic.
package pdnstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
)

// Server is one real pdns_server started by hack/pdns.sh.
type Server struct {
	// APIURL is the webserver root, as PDNS_API_URL takes it.
	APIURL string
	// DNSAddr is the DNS listener, host:port.
	DNSAddr string
	// Key is the API key.
	Key string
}

// Start starts a real PowerDNS (caches off) on free loopback ports in a temp dir and stops it
// when the test ends. A missing pdns_server fails the test: it is a required dependency.
func Start(t testing.TB) Server {
	t.Helper()
	root, err := hackrun.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p, err := hackrun.StartPDNS(context.Background(), root, t.TempDir(), fmt.Sprintf("test-key-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	})
	return Server{APIURL: p.APIURL, DNSAddr: p.DNSAddr, Key: p.Key}
}

// API sends one request to the server's API under /api/v1/servers/localhost, bypassing any
// provider, and returns the status code and body; it fails the test when the request fails. body
// "" sends none.
func (s Server) API(t testing.TB, method, path, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	code, resp, err := hackrun.PDNSRequest(ctx, s.APIURL, s.Key, method, "/api/v1/servers/localhost"+path, b)
	if err != nil {
		t.Fatal(err)
	}
	return code, string(resp)
}
