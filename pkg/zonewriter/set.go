package zonewriter

import (
	"context"
	"sync"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Set holds one Writer per hosted zone. The writers of one account (Key.Account) share its
// write budget: at most the provider's Capabilities.MaxWritesInFlight writes in flight across
// all of them (PowerDNS on sqlite takes one). It is safe for concurrent use.
type Set struct {
	ctx  context.Context
	opts Options

	// notFound carries the keys of zones whose writer just got provider.ErrZoneNotFound.
	notFound chan Key

	mu       sync.Mutex
	writers  map[Key]entry
	accounts map[string]*slots // Key.Account -> its write budget; kept while the Set lives
}

type entry struct {
	w      *Writer
	cancel context.CancelFunc // ends the writer's loop
}

// Key identifies a hosted zone across providers: the provider account (for example the Secret's
// namespace/name) and the zone's provider ID.
type Key struct {
	Account string
	ZoneID  string
}

// NewSet returns an empty Set whose writers run until ctx ends.
func NewSet(ctx context.Context, opts Options) *Set {
	return &Set{ctx: ctx, opts: opts, writers: map[Key]entry{}, accounts: map[string]*slots{},
		notFound: make(chan Key, notFoundBuffer)}
}

// notFoundBuffer is how many ZoneNotFound reports wait for a reader before later ones are
// dropped (a dropped zone is still caught at its next sync).
const notFoundBuffer = 1024

// ZoneNotFound delivers the key of a zone each time one of its writer's reads or writes finds
// the hosted zone missing at the provider (provider.ErrZoneNotFound) after it was there, once
// per loss: Writer.Reset or a successful call re-arms it. The DNSZone controller reads it, so
// that a zone deleted at the provider is noticed at once. Reports are dropped, never blocked on,
// when nobody reads.
func (s *Set) ZoneNotFound() <-chan Key { return s.notFound }

// Lookup returns the zone's Writer, or nil when there is none; unlike For it never creates one.
func (s *Set) Lookup(k Key) *Writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writers[k].w
}

func (s *Set) report(k Key) {
	select {
	case s.notFound <- k:
	default:
	}
}

// For returns the Writer of the zone, creating it on first use. p replaces the writer's provider,
// so a rotated credential takes effect at once; with Options.Resolve the writer also resolves
// k.Account's provider before each call, so that it does for callers that never call For.
func (s *Set) For(k Key, p provider.Provider) *Writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.writers[k]
	if !ok {
		sl := s.accounts[k.Account]
		if sl == nil {
			sl = newSlots()
			s.accounts[k.Account] = sl
		}
		ctx, cancel := context.WithCancel(s.ctx)
		e = entry{w: start(ctx, p, k, s.opts, func() { s.report(k) }, sl), cancel: cancel}
		s.writers[k] = e
		return e.w
	}
	e.w.SetProvider(p)
	return e.w
}

// Forget drops the zone's Writer, for example after the zone was deleted, and ends its loop;
// a later For makes a new one. Apply on the dropped Writer fails at once.
func (s *Set) Forget(k Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.writers[k]; ok {
		e.cancel()
		delete(s.writers, k)
	}
}
