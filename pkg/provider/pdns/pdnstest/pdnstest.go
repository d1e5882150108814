// Package pdnstest starts a real PowerDNS Authoritative server on loopback for tests, through
// hack/pdns.sh. It owns no provider logic.
package pdnstest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/provider/internal/loopback"
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
	env := os.Environ()
	if _, err := exec.LookPath("pdns_server"); err != nil {
		if _, err := os.Stat("/usr/sbin/pdns_server"); err != nil {
			t.Fatal("pdns_server is not installed: apt-get install -y pdns-server pdns-backend-sqlite3 sqlite3 (and curl)")
		}
		env = append(env, "PATH=/usr/sbin:"+os.Getenv("PATH"))
	}
	script := filepath.Join(loopback.RepoRoot(t), "hack", "pdns.sh")
	dir := t.TempDir()
	key := fmt.Sprintf("test-key-%d", time.Now().UnixNano())
	run := func(args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, script, args...)
		cmd.Env = env
		return cmd.CombinedOutput()
	}
	var lastOut []byte
	for attempt := range 3 {
		dnsPort, apiPort := loopback.FreePort(t), loopback.FreePort(t)
		if dnsPort == apiPort {
			continue
		}
		out, err := run("start", dir, strconv.Itoa(dnsPort), strconv.Itoa(apiPort), key)
		if err != nil {
			lastOut = out
			t.Logf("pdns.sh start (attempt %d): %v\n%s", attempt+1, err, out)
			if out, err := run("stop", dir); err != nil {
				t.Logf("pdns.sh stop: %v\n%s", err, out)
			}
			continue
		}
		t.Cleanup(func() {
			if out, err := run("stop", dir); err != nil {
				t.Errorf("pdns.sh stop %s: %v\n%s", dir, err, out)
			}
		})
		return Server{
			APIURL:  "http://127.0.0.1:" + strconv.Itoa(apiPort),
			DNSAddr: "127.0.0.1:" + strconv.Itoa(dnsPort),
			Key:     key,
		}
	}
	t.Fatalf("cannot start pdns_server with hack/pdns.sh:\n%s", lastOut)
	return Server{}
}
