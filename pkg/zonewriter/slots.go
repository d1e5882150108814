package zonewriter

import (
	"context"
	"fmt"
	"sync"
)

// slots is the write budget of one provider account: how many ApplyChanges calls its writers
// have in flight. The limit comes with each acquire (the provider's current
// Capabilities.MaxWritesInFlight), so that a Secret that raises it takes effect at the next
// write; writes in flight are counted even when there is no limit.
type slots struct {
	mu      sync.Mutex
	used    int
	waiters int           // acquires waiting for a slot
	free    chan struct{} // closed, and replaced, each time a slot is released
}

func newSlots() *slots { return &slots{free: make(chan struct{})} }

// acquire waits until fewer than limit writes are in flight (limit <= 0: no limit) and takes a
// slot; release gives it back, once. The error is ctx's, wrapped.
func (s *slots) acquire(ctx context.Context, limit int) (release func(), err error) {
	for {
		s.mu.Lock()
		if limit <= 0 || s.used < limit {
			s.used++
			s.mu.Unlock()
			var once sync.Once
			return func() { once.Do(s.release) }, nil
		}
		free := s.free
		s.waiters++
		s.mu.Unlock()
		var err error
		select {
		case <-free:
		case <-ctx.Done():
			err = ctx.Err()
		}
		s.mu.Lock()
		s.waiters--
		s.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("wait for a write slot of the account: %w", err)
		}
	}
}

func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used--
	close(s.free)
	s.free = make(chan struct{})
}

// waiting returns how many acquires wait for a slot.
func (s *slots) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiters
}
