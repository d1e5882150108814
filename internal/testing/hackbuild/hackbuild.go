// Package hackbuild runs the build scripts of the test tools that live in their own Go modules
// under hack/ (hack/webhook-server, hack/rfc2136-solver, hack/acme-e2e): each script builds its
// tool from the module proxy, caches it per machine under ${XDG_CACHE_HOME:-~/.cache}/dnsplane/
// and prints its path as its last line of output. It owns no tool and no caching of its own.
package hackbuild

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Timeout bounds one build script: a cold build compiles a peer project and its Kubernetes
// dependencies (a minute or two here with a warm module cache; longer with a cold one).
const Timeout = 20 * time.Minute

// Run runs hack/<tool>/build.sh of the repository at root within Timeout and returns the last
// line it printed (the tool's path, or its cache directory). The error names the script and
// carries its output.
func Run(ctx context.Context, root, tool string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	script := filepath.Join("hack", tool, "build.sh")
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, script))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s%s", script, err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return lines[len(lines)-1], nil
}
