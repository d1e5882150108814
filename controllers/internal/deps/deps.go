// Package deps declares what the reconcilers use of the packages below them that more than one
// controller uses the same way: the provider resolver's Resolve and the zone-writer set's For.
// They are small consumer-side interfaces, so that a phase can be unit-tested with a fake of just
// these methods (controllers/internal/testclient) and controller-runtime's fake client; what only
// one controller uses is declared beside it (dnszone.Scraper, dnsrecord.Heartbeats, ...). It owns
// no behaviour.
//
// It must not import the provider factory (pkg/provider/factory) or any provider implementation:
// the composition root (internal/app) passes a *factory.Factory as Providers, and the
// controllers reach only pkg/provider (imports_test.go).
package deps

import (
	"context"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// Providers is what the controllers need of the provider factory (*factory.Factory): the
// provider of a DNSZone's Secret, with its account and DNS address. Errors wrap
// provider.ErrProviderNotFound for a missing Secret or provider.
type Providers interface {
	Resolve(ctx context.Context, namespace, name string) (provider.Resolved, error)
}

// Writers is what publishing needs of the zone-writer set (*zonewriter.Set): the one writer of a
// hosted zone, created with p on first use.
type Writers interface {
	For(k zonewriter.Key, p provider.Provider) *zonewriter.Writer
}

var _ Writers = (*zonewriter.Set)(nil)
