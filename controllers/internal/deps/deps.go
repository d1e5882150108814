// Package deps declares what the reconcilers use of the packages below them that more than one
// controller uses the same way: the provider factory's Resolve and the zone-writer set's For.
// They are small consumer-side interfaces, so that a phase can be unit-tested with a fake of just
// these methods (controllers/internal/testclient) and controller-runtime's fake client; what only
// one controller uses is declared beside it (dnszone.Scraper, dnsrecord.Heartbeats, ...). It owns
// no behaviour.
package deps

import (
	"context"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// Providers is what the controllers need of the provider factory (*factory.Factory): the
// provider of a DNSZone's Secret, with its account and DNS address. Errors wrap
// factory.ErrProviderNotFound for a missing Secret or provider.
type Providers interface {
	Resolve(ctx context.Context, namespace, name string) (factory.Resolved, error)
}

// Writers is what publishing needs of the zone-writer set (*zonewriter.Set): the one writer of a
// hosted zone, created with p on first use.
type Writers interface {
	For(k zonewriter.Key, p provider.Provider) *zonewriter.Writer
}

var (
	_ Providers = (*factory.Factory)(nil)
	_ Writers   = (*zonewriter.Set)(nil)
)
