// Package hackrun runs the repository's hack/ scripts that start real servers on loopback
// (PowerDNS, BIND, NSD) for the provider tests, the secondaries' tests, the e2e harness and
// hack/bench: it finds the scripts, runs them with a deadline and the sbin directories on PATH,
// names the package of a missing server, and starts PowerDNS on free ports. It is for tests and
// test tools only and owns no provider logic; it imports nothing of dnsplane but
// internal/testing/ports.
package hackrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/ports"
)

// ScriptTimeout is how long one run of a hack/ script may take: a hang deadline.
const ScriptTimeout = 60 * time.Second

// sbin is put before PATH for the scripts: the servers install there.
const sbin = "/usr/sbin:/usr/local/sbin:/sbin"

// RepoRoot walks up from the working directory to the directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root (go.mod) above the working directory")
		}
		dir = parent
	}
}

// Script returns the path of hack/<name> in the repository above the working directory; it
// fails the test when there is no go.mod above it.
func Script(t testing.TB, name string) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "hack", name)
}

// Run runs script with args and returns its combined output. It stops the script at ctx's end
// or after ScriptTimeout; env (KEY=value) is added to the process environment, whose PATH starts
// with the sbin directories.
func Run(ctx context.Context, script string, env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, ScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Env = append(append(os.Environ(), "PATH="+sbin+":"+os.Getenv("PATH")), env...)
	return cmd.CombinedOutput()
}

// Need fails the test when one of bins is neither on PATH nor in an sbin directory; the message
// says to install pkgs (Debian packages).
func Need(t testing.TB, pkgs string, bins ...string) {
	t.Helper()
	for _, b := range bins {
		if !installed(b) {
			t.Fatalf("%s is not installed: apt-get install -y %s", b, pkgs)
		}
	}
}

func installed(bin string) bool {
	if _, err := exec.LookPath(bin); err == nil {
		return true
	}
	for _, dir := range filepath.SplitList(sbin) {
		if _, err := os.Stat(filepath.Join(dir, bin)); err == nil {
			return true
		}
	}
	return false
}

// PDNS is a PowerDNS Authoritative server started by hack/pdns.sh.
type PDNS struct {
	// APIURL is the webserver root, as PDNS_API_URL takes it.
	APIURL string
	// DNSAddr is the DNS listener, host:port.
	DNSAddr string
	// Key is the API key.
	Key string
	// Dir holds its configuration (pdnsutil --config-dir), database and log.
	Dir string

	script string
}

// StartPDNS starts PowerDNS (caches off, the API on) with hack/pdns.sh of the repository at
// root, in dir with API key key, on free 127.0.0.1 ports: up to three pairs of ports, stopping
// what a failed start left. The caller stops it (Stop). The error carries each attempt's output.
func StartPDNS(ctx context.Context, root, dir, key string) (*PDNS, error) {
	if !installed("pdns_server") {
		return nil, errors.New("pdns_server is not installed: apt-get install -y pdns-server pdns-backend-sqlite3 sqlite3 (and curl)")
	}
	p := &PDNS{Dir: dir, Key: key, script: filepath.Join(root, "hack", "pdns.sh")}
	var errs []error
	for attempt := range 3 {
		dnsPort, err1 := ports.Free()
		apiPort, err2 := ports.Free()
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		if dnsPort == apiPort {
			continue
		}
		out, err := Run(ctx, p.script, nil, "start", dir, strconv.Itoa(dnsPort), strconv.Itoa(apiPort), key)
		if err == nil {
			p.APIURL, p.DNSAddr = "http://127.0.0.1:"+strconv.Itoa(apiPort), "127.0.0.1:"+strconv.Itoa(dnsPort)
			return p, nil
		}
		errs = append(errs, fmt.Errorf("hack/pdns.sh start (attempt %d): %w\n%s", attempt+1, err, out))
		if out, err := Run(context.Background(), p.script, nil, "stop", dir); err != nil {
			errs = append(errs, fmt.Errorf("hack/pdns.sh stop: %w\n%s", err, out))
		}
	}
	return nil, fmt.Errorf("cannot start pdns_server with hack/pdns.sh: %w", errors.Join(errs...))
}

// Restart stops the server and starts it again in its directory, on its ports, with its
// database: what a restart of the service does. A request in flight at the stop gets no answer.
// The error carries the script's output.
func (p *PDNS) Restart(ctx context.Context) error {
	if err := p.Stop(); err != nil {
		return err
	}
	api, err1 := url.Parse(p.APIURL)
	_, dnsPort, err2 := net.SplitHostPort(p.DNSAddr)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("restart PowerDNS: %w", err)
	}
	if out, err := Run(ctx, p.script, nil, "start", p.Dir, dnsPort, api.Port(), p.Key); err != nil {
		return fmt.Errorf("hack/pdns.sh start %s (restart): %w\n%s", p.Dir, err, out)
	}
	return nil
}

// Stop stops the server; the error carries the script's output.
func (p *PDNS) Stop() error {
	if out, err := Run(context.Background(), p.script, nil, "stop", p.Dir); err != nil {
		return fmt.Errorf("hack/pdns.sh stop %s: %w\n%s", p.Dir, err, out)
	}
	return nil
}

// PDNSRequest sends one request to the PowerDNS HTTP API at apiURL (its webserver root) with API
// key key, bypassing any provider: method on path (from the root, "/api/v1/servers/localhost/..."),
// with body as JSON when not nil. It returns the status code and the response body; errors are
// the request's.
func PDNSRequest(ctx context.Context, apiURL, key, method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, apiURL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-API-Key", key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
