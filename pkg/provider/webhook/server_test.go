package webhook_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/pkg/provider/webhook"
)

// buildTimeout bounds hack/webhook-server/build.sh: a cold build compiles external-dns's
// endpoint, plan and provider packages and their Kubernetes dependencies.
const buildTimeout = 20 * time.Minute

// serverBinary builds the test webhook server once per test binary (hack/webhook-server/build.sh,
// cached per machine) and returns its path. A failed build fails the test: the server is a
// required part of these tests, never a reason to skip.
var serverBinary = sync.OnceValues(func() (string, error) {
	root, err := hackrun.RepoRoot()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "webhook-server", "build.sh"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/webhook-server/build.sh: %w\n%s%s", err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return lines[len(lines)-1], nil
})

// startServer starts the test webhook server with args on a free loopback port and env added to
// its environment, and stops it (SIGTERM, then SIGKILL after 5 s) when the test ends. It returns
// the server's URL.
func startServer(t testing.TB, env []string, args ...string) string {
	t.Helper()
	bin, err := serverBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("webhook-server log:\n%s", stderr.String())
		}
	})
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		addr <- strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	}()
	select {
	case a := <-addr:
		if a == "" {
			t.Fatalf("webhook-server did not start:\n%s", stderr.String())
		}
		return "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatalf("webhook-server did not listen within 30 s:\n%s", stderr.String())
	}
	return ""
}

// startMemory starts the server over external-dns's in-memory provider with zones created and
// as the domain filter.
func startMemory(t testing.TB, zones ...string) string {
	t.Helper()
	return startServer(t, nil, "--zone", strings.Join(zones, ","))
}

// newProvider returns a provider of the webhook at url with cfg's other fields.
func newProvider(t testing.TB, url string, cfg webhook.Config) *webhook.Provider {
	t.Helper()
	cfg.URL = url
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Second
	}
	p, err := webhook.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// zoneName is a fresh zone name for one test.
func zoneName(label string) string {
	return fmt.Sprintf("%s-%06d.webhook.test", label, rand.IntN(1000000))
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
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
