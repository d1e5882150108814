package factory

import (
	"context"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// KSKRoller implements provider.SignerSource: the wrapped provider's KSKRoller, its errors named
// as every call's, or nil.
func (p namedCredentials) KSKRoller() provider.KSKRoller {
	return provider.WrapKSKRoller(provider.KSKRollerOf(p.inner), func(ctx context.Context, _, _ string, call func(context.Context) error) error {
		return p.wrap(call(ctx))
	})
}
