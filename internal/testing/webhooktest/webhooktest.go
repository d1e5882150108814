// Package webhooktest builds and starts the test external-dns webhook server of
// hack/webhook-server (external-dns v0.22.0's own webhook server code around its in-memory or
// PowerDNS provider) on loopback, for the tests of pkg/provider/webhook and the controllers. It
// owns no provider logic and never skips: a server that cannot be built fails the test.
package webhooktest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/hackbuild"
	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
)

// Build builds the server with hack/webhook-server/build.sh of the repository at root (cached
// per machine under ${XDG_CACHE_HOME:-~/.cache}/dnsplane/) within hackbuild.Timeout and returns its
// path; the error carries the script's output.
func Build(ctx context.Context, root string) (string, error) {
	return hackbuild.Run(ctx, root, "webhook-server")
}

// Launch starts the server at bin with args on a free loopback port, env added to its
// environment and its log written to logw, and waits (30 s at most) until it listens. It
// returns the server's URL (WEBHOOK_URL's value) and stop, which ends it (SIGTERM, then
// SIGKILL after 5 s). On error nothing is left running.
func Launch(bin string, env []string, logw io.Writer, args ...string) (url string, stop func(), err error) {
	cmd := exec.Command(bin, append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = logw
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, fmt.Errorf("webhook-server stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start webhook-server: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		addr <- strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	}()
	select {
	case a := <-addr:
		if a != "" {
			return "http://" + a, stop, nil
		}
		err = errors.New("webhook-server exited before it listened")
	case <-time.After(30 * time.Second):
		err = errors.New("webhook-server did not listen within 30 s")
	}
	stop()
	return "", nil, err
}

// Binary is Build for a test, from the repository above the working directory; a failed build
// fails the test.
func Binary(t testing.TB) string {
	t.Helper()
	root, err := hackrun.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := Build(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Start launches the server (built by Binary) with args and env for the test, and stops it when
// the test ends; its log is shown when the test failed. It returns the server's URL,
// WEBHOOK_URL's value.
func Start(t testing.TB, env []string, args ...string) string {
	t.Helper()
	var stderr lockedBuffer
	url, stop, err := Launch(Binary(t), env, &stderr, args...)
	if err != nil {
		t.Fatalf("%v:\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("webhook-server log:\n%s", stderr.String())
		}
	})
	return url
}

// StartMemory starts the server over external-dns's in-memory provider, with zones created at
// start and as its domain filter's include names.
func StartMemory(t testing.TB, zones ...string) string {
	t.Helper()
	return Start(t, nil, "--zone", strings.Join(zones, ","))
}

// StartPDNS starts the server over external-dns's in-tree PowerDNS provider against the
// PowerDNS whose webserver root is apiURL, with API key key (passed in the environment).
func StartPDNS(t testing.TB, apiURL, key string) string {
	t.Helper()
	return Start(t, []string{"PDNS_API_KEY=" + key}, "--backend", "pdns", "--pdns-server", apiURL)
}

// lockedBuffer is a bytes.Buffer safe for the process's writes and the test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ZoneName is a fresh zone name for one test: "<label>-<6 digits>.webhook.test".
func ZoneName(label string) string {
	return fmt.Sprintf("%s-%06d.webhook.test", label, rand.IntN(1000000))
}
