// Package rfc2136solver builds and runs the test RFC 2136 solver of hack/rfc2136-solver:
// cert-manager v1.21.2's own rfc2136 DNS-01 code (pkg/issuer/acme/dns/rfc2136) behind a
// present|cleanup CLI, so that tests drive the exact client cert-manager's built-in solver is
// against dnsplane. It owns no DNS logic and never skips: a solver that cannot be built fails
// the test.
package rfc2136solver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/hackbuild"
)

// RunTimeout bounds one Present or CleanUp: the solver's own UDP client gives up after 2 s
// (miekg/dns's default), so this only catches a hang.
const RunTimeout = 30 * time.Second

// Build builds the solver with hack/rfc2136-solver/build.sh of the repository at root (cached
// per machine under ${XDG_CACHE_HOME:-~/.cache}/dnsplane/) within hackbuild.Timeout and returns its
// path; the error carries the script's output.
func Build(ctx context.Context, root string) (string, error) {
	return hackbuild.Run(ctx, root, "rfc2136-solver")
}

// Challenge is one DNS-01 challenge as cert-manager's solver gets it.
type Challenge struct {
	// Nameserver is host:port of the DNS server the UPDATE goes to.
	Nameserver string
	// Zone and FQDN are the zone the UPDATE names and the record's name, FQDNs.
	Zone, FQDN string
	// Value is the TXT value.
	Value string
	// KeyName, Algorithm (cert-manager's spelling: HMACMD5, HMACSHA1, HMACSHA256, HMACSHA512)
	// and Secret (base64) are the TSIG key.
	KeyName, Algorithm, Secret string
	// Network is "udp" (cert-manager's default) or "tcp".
	Network string
}

// Present runs cert-manager's DNSProvider.Present for c with the solver at bin; the error holds
// the solver's message (e.g. "DNS update failed. Server replied: NOTAUTH").
func Present(ctx context.Context, bin string, c Challenge) error { return run(ctx, bin, "present", c) }

// CleanUp runs cert-manager's DNSProvider.CleanUp for c with the solver at bin.
func CleanUp(ctx context.Context, bin string, c Challenge) error { return run(ctx, bin, "cleanup", c) }

func run(ctx context.Context, bin, op string, c Challenge) error {
	ctx, cancel := context.WithTimeout(ctx, RunTimeout)
	defer cancel()
	network := c.Network
	if network == "" {
		network = "udp"
	}
	cmd := exec.CommandContext(ctx, bin, op, "--nameserver", c.Nameserver, "--zone", c.Zone, "--fqdn", c.FQDN, "--value", c.Value,
		"--tsig-key-name", c.KeyName, "--tsig-algorithm", c.Algorithm, "--network", network)
	// The secret goes through the environment, not the command line other processes can read.
	cmd.Env = append(os.Environ(), "RFC2136_TSIG_SECRET="+c.Secret)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("rfc2136-solver %s %s: %w: %s", op, c.FQDN, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
