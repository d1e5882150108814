// Package acmetest builds and runs the end-to-end ACME tools of hack/acme-e2e: Pebble (Let's
// Encrypt's test CA, v2.10.3) validating DNS-01 challenges through a DNS server the test names,
// and lego v5.6.0 with its RFC 2136 provider obtaining a certificate, for the dynamic updates' end-to-end
// test. It owns no ACME or DNS logic and never skips: tools that cannot be built fail the test.
package acmetest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/hackbuild"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

// IssueTimeout bounds one certificate: Pebble without its random validation sleeps issues in
// seconds; this only catches a hang.
const IssueTimeout = 3 * time.Minute

// Build builds the tools with hack/acme-e2e/build.sh of the repository at root (hackbuild.Run: cached per
// machine under ${XDG_CACHE_HOME:-~/.cache}/dnsplane/) and returns their directory.
func Build(ctx context.Context, root string) (string, error) {
	return hackbuild.Run(ctx, root, "acme-e2e")
}

// Pebble is a running Pebble.
type Pebble struct {
	// Directory is its ACME directory URL.
	Directory string
	// Root is the PEM file its TLS certificate chains to.
	Root string
}

// StartPebble starts Pebble of tools (Build's directory) on loopback, validating DNS-01
// challenges by asking dnsServer (host:port), without its random sleeps and nonce rejections,
// stopped when the test ends; its log goes to the test's log on failure.
func StartPebble(t *testing.T, tools, dnsServer string) Pebble {
	t.Helper()
	acmePort, err := ports.Free()
	if err != nil {
		t.Fatal(err)
	}
	mgmtPort, err := ports.Free()
	if err != nil {
		t.Fatal(err)
	}
	certs := filepath.Join(tools, "certs")
	conf := map[string]any{"pebble": map[string]any{
		"listenAddress":           fmt.Sprintf("127.0.0.1:%d", acmePort),
		"managementListenAddress": fmt.Sprintf("127.0.0.1:%d", mgmtPort),
		"certificate":             filepath.Join(certs, "cert.pem"), "privateKey": filepath.Join(certs, "key.pem"),
		"httpPort": 5002, "tlsPort": 5001, "externalAccountBindingRequired": false,
		"retryAfter": map[string]int{"authz": 1, "order": 1}, "keyAlgorithm": "ecdsa",
		"profiles": map[string]any{"default": map[string]any{"description": "test", "validityPeriod": 7776000}},
	}}
	b, _ := json.Marshal(conf)
	path := filepath.Join(t.TempDir(), "pebble.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	cmd := exec.Command(filepath.Join(tools, "pebble"), "-config", path, "-dnsserver", dnsServer)
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pebble: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("pebble's log:\n%s", log.String())
		}
	})
	p := Pebble{Directory: fmt.Sprintf("https://127.0.0.1:%d/dir", acmePort), Root: filepath.Join(certs, "pebble.minica.pem")}
	roots := x509.NewCertPool()
	pemBytes, err := os.ReadFile(p.Root)
	if err != nil || !roots.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("pebble's root %s: %v", p.Root, err)
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	testrun.Eventually(t, 30*time.Second, "pebble serves its directory", func() error {
		resp, err := hc.Get(p.Directory)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", p.Directory, resp.Status)
		}
		return nil
	})
	return p
}

// Order is one certificate to obtain with lego.
type Order struct {
	// Nameserver is host:port the UPDATEs go to; Resolver where lego finds the zone and checks
	// that the challenge is served.
	Nameserver, Resolver string
	// KeyName, Algorithm (as lego spells it: hmac-sha256.) and Secret (base64) are the TSIG key.
	KeyName, Algorithm, Secret string
	// Zone, when set, is the domains' zone (lego's DNSUPDATE_ZONES); empty = lego asks
	// Nameserver for the SOA, which only an embedded zone answers there.
	Zone string
	// Domains are the certificate's names.
	Domains []string
}

// Issue obtains a certificate for o from p with lego of tools and returns its DNS SANs.
func Issue(ctx context.Context, tools string, p Pebble, o Order) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, IssueTimeout)
	defer cancel()
	args := []string{"--ca", p.Directory, "--ca-cert", p.Root, "--nameserver", o.Nameserver, "--resolver", o.Resolver,
		"--tsig-key", o.KeyName, "--tsig-algorithm", o.Algorithm}
	if o.Zone != "" {
		args = append(args, "--zone", o.Zone)
	}
	for _, d := range o.Domains {
		args = append(args, "-d", d)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(tools, "lego-issue"), args...)
	cmd.Env = append(os.Environ(), "DNSUPDATE_TSIG_SECRET="+o.Secret)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("lego-issue %v: %w: %s", o.Domains, err, stderr.String())
	}
	var sans []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if name, ok := strings.CutPrefix(line, "SAN "); ok {
			sans = append(sans, name)
		}
	}
	return sans, nil
}
