package guard

import (
	"context"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// KSKRoller implements provider.SignerSource: the wrapped provider's KSKRoller
// (provider.KSKRollerOf) with the protections of every call (each is idempotent, as the
// interface says, so a retried one is safe), or nil when it has none.
func (p *Provider) KSKRoller() provider.KSKRoller {
	return provider.WrapKSKRoller(provider.KSKRollerOf(p.inner), func(ctx context.Context, _, _ string, call func(context.Context) error) error {
		return p.do(ctx, call)
	})
}
