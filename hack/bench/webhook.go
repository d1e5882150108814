package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"

	"github.com/dnsplane/dnsplane/internal/testing/webhooktest"
)

// startWebhook starts external-dns v0.22.0's own webhook server with its PowerDNS provider
// (hack/webhook-server, built by its build.sh into the cache) in front of the world's counting
// PowerDNS proxy, and a counting proxy of its own in front of it: w.webhook counts what dnsplane
// asks the webhook, w.proxy what the webhook asks PowerDNS. It returns the webhook proxy's URL.
// The server stops with the world; its log is webhook-server.log in the run's directory.
func (w *world) startWebhook(ctx context.Context, root string) (string, error) {
	bin, err := webhooktest.Build(ctx, root)
	if err != nil {
		return "", err
	}
	logf, err := os.Create(filepath.Join(w.dir, "webhook-server.log"))
	if err != nil {
		return "", fmt.Errorf("create the webhook server's log: %w", err)
	}
	// The API key in the environment, never a flag: a process list shows flags.
	hook, stop, err := webhooktest.Launch(bin, []string{"PDNS_API_KEY=" + w.pdns.key}, logf, "--backend", "pdns", "--pdns-server", w.proxyURL)
	if err != nil {
		logf.Close()
		return "", fmt.Errorf("%w (see %s)", err, logf.Name())
	}
	w.cleanups = append(w.cleanups, func() error { stop(); return logf.Close() })
	target, err := url.Parse(hook)
	if err != nil {
		return "", fmt.Errorf("webhook server URL %q: %w", hook, err)
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
