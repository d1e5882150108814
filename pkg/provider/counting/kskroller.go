package counting

import (
	"context"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// KSKRoller implements provider.SignerSource: the wrapped provider's KSKRoller
// (provider.KSKRollerOf), each call counted under its provider.Op* name but
// KSKRolloverSupported (no I/O), or nil when it has none.
func (p *Provider) KSKRoller() provider.KSKRoller {
	return provider.WrapKSKRoller(provider.KSKRollerOf(p.inner), func(ctx context.Context, op, zoneID string, call func(context.Context) error) error {
		err := call(ctx)
		p.countZone(op, zoneID, err)
		return err
	})
}
