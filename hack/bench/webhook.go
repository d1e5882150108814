package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// startWebhook starts external-dns v0.22.0's own webhook server with its PowerDNS provider
// (hack/webhook-server, built by its build.sh into the cache) in front of the world's counting
// PowerDNS proxy, and a counting proxy of its own in front of it: w.webhook counts what dnsplane
// asks the webhook, w.proxy what the webhook asks PowerDNS. It returns the webhook proxy's URL.
// The server is stopped with the world (SIGTERM, then SIGKILL after 5 s).
func (w *world) startWebhook(ctx context.Context, root string) (string, error) {
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(bctx, filepath.Join(root, "hack", "webhook-server", "build.sh")).Output()
	if err != nil {
		return "", fmt.Errorf("build the webhook server (hack/webhook-server/build.sh): %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	bin := lines[len(lines)-1]
	logf, err := os.Create(filepath.Join(w.dir, "webhook-server.log"))
	if err != nil {
		return "", fmt.Errorf("create the webhook server's log: %w", err)
	}
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--backend", "pdns", "--pdns-server", w.proxyURL)
	cmd.Env = append(os.Environ(), "PDNS_API_KEY="+w.pdns.key) // never a flag: a process list shows flags
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return "", fmt.Errorf("webhook server stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", fmt.Errorf("start the webhook server: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	w.cleanups = append(w.cleanups, func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		return logf.Close()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				addr <- a
			}
		}
	}()
	var listen string
	select {
	case listen = <-addr:
	case <-done:
		return "", fmt.Errorf("the webhook server exited before listening (see %s)", logf.Name())
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("the webhook server did not listen within 30 s (see %s)", logf.Name())
	}
	target, err := url.Parse("http://" + listen)
	if err != nil {
		return "", fmt.Errorf("webhook server address %q: %w", listen, err)
	}
	trace, err := os.Create(filepath.Join(w.dir, "webhook.log"))
	if err != nil {
		return "", fmt.Errorf("create the webhook proxy trace: %w", err)
	}
	w.webhook = newCountingProxy(httputil.NewSingleHostReverseProxy(target), trace)
	srv := httptest.NewServer(w.webhook)
	w.cleanups = append(w.cleanups, func() error { srv.Close(); return trace.Close() })
	return srv.URL, nil
}
