package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/webhooktest"
	"github.com/dnsplane/dnsplane/pkg/provider/webhook"
)

// startMemory starts the test webhook server over external-dns's in-memory provider with zones
// created and as its domain filter (webhooktest.StartMemory).
func startMemory(t testing.TB, zones ...string) string {
	t.Helper()
	return webhooktest.StartMemory(t, zones...)
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
func zoneName(label string) string { return webhooktest.ZoneName(label) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}
