package testclient

import (
	"context"
	"sync"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// Providers is a fake of the provider factory as the controllers use it (their Providers
// interfaces, each declaring Resolve only): every Secret resolves to Res, or fails with Err. It
// records the Secrets asked for, as "namespace/name". Safe for concurrent use.
type Providers struct {
	Res provider.Resolved
	Err error

	mu    sync.Mutex
	asked []string
}

// Resolve returns p.Res, p.Err.
func (p *Providers) Resolve(_ context.Context, namespace, name string) (provider.Resolved, error) {
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

// NoWriters is a zone-writer set (the controllers' Writers interfaces) that has no writer yet
// (Lookup is nil, ZoneNotFound never reports) and fails the test when asked to create or forget
// one: for phases that must not write.
type NoWriters struct{ T testing.TB }

// For fails the test and returns nil.
func (w NoWriters) For(k zonewriter.Key, _ provider.Provider) *zonewriter.Writer {
	w.T.Errorf("zone writer For(%v) called; want no write", k)
	return nil
}

// Lookup returns nil: no zone has a writer.
func (NoWriters) Lookup(zonewriter.Key) *zonewriter.Writer { return nil }

// Forget fails the test.
func (w NoWriters) Forget(k zonewriter.Key) { w.T.Errorf("zone writer Forget(%v) called", k) }

// ZoneNotFound never reports a zone.
func (NoWriters) ZoneNotFound() <-chan zonewriter.Key { return nil }
