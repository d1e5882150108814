package testclient

import (
	"context"
	"sync"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
)

// Providers is a fake of the provider factory as the controllers use it (their Providers
// interfaces, each declaring Resolve only): every Secret resolves to Res, or fails with Err. It
// records the Secrets asked for, as "namespace/name". Safe for concurrent use.
type Providers struct {
	Res factory.Resolved
	Err error

	mu    sync.Mutex
	asked []string
}

// Resolve returns p.Res, p.Err.
func (p *Providers) Resolve(_ context.Context, namespace, name string) (factory.Resolved, error) {
	p.mu.Lock()
	p.asked = append(p.asked, namespace+"/"+name)
	p.mu.Unlock()
	return p.Res, p.Err
}

// Asked returns the Secrets asked for so far, in order, as "namespace/name".
func (p *Providers) Asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

// Capable is a provider.Provider of which only Capabilities may be called (the embedded nil
// Provider panics on anything else): for phases that read what a provider can do.
type Capable struct {
	provider.Provider
	Caps provider.Capabilities
}

// Capabilities returns c.Caps.
func (c Capable) Capabilities() provider.Capabilities { return c.Caps }
