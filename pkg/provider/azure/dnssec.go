package azure

import (
	"context"
	"fmt"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// errNoDNSSEC says why Azure DNS zones are not signed: Azure signs a zone through its
// dnssecConfigs resource (api-version 2023-07-01-preview and later), which the armdns SDK this
// provider is built on (v1.2.0, api-version 2018-05-01) has no client for.
var errNoDNSSEC = fmt.Errorf("%w: Azure DNS signs a zone through its dnssecConfigs resource (api-version 2023-07-01-preview), "+
	"which the armdns SDK of this build (api-version 2018-05-01) has no client for (DnssecConfigsClient)", provider.ErrNotCapable)

var _ provider.ManagedSigner = (*Provider)(nil)

// SigningSupported implements provider.ManagedSigner: never (errNoDNSSEC).
func (p *Provider) SigningSupported(provider.SigningParams) error { return errNoDNSSEC }

// EnableSigning implements provider.ManagedSigner: errNoDNSSEC.
func (p *Provider) EnableSigning(context.Context, string, provider.SigningParams) error {
	return errNoDNSSEC
}

// DisableSigning implements provider.ManagedSigner: a zone this provider manages is never
// signed by it, so there is nothing to turn off.
func (p *Provider) DisableSigning(context.Context, string) error { return nil }

// SigningState implements provider.ManagedSigner: always SigningOff.
func (p *Provider) SigningState(context.Context, string) (provider.SigningState, error) {
	return provider.SigningState{Phase: provider.SigningOff, Message: errNoDNSSEC.Error()}, nil
}
