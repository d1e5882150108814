package publish

import (
	"context"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// Providers is what publishing needs of the provider factory (*factory.Factory): the provider of
// a DNSZone's Secret. Errors wrap factory.ErrProviderNotFound for a missing Secret or provider.
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
