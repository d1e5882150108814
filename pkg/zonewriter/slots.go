package zonewriter

import "sync"

// slots is the write budget of one provider account: how many ApplyChanges calls its writers
// have in flight. The limit comes with each try (the provider's current
// Capabilities.MaxWritesInFlight), so that a Secret that raises it takes effect at the next
// write; writes in flight are counted even when there is no limit.
type slots struct {
	mu      sync.Mutex
	used    int
	waiters int           // writers waiting for a slot (try)
	free    chan struct{} // closed, and replaced, each time a slot is released
}

func newSlots() *slots { return &slots{free: make(chan struct{})} }

// try takes a slot when fewer than limit writes are in flight (limit <= 0: no limit) and
// returns its release, to call once. When none is free it returns a nil release and a channel
// that is closed at the next release, and counts the caller as waiting (waiting) until a later
// try of the same caller succeeds or it calls unwait. waiting says whether the caller was
// already counted.
func (s *slots) try(limit int, waiting bool) (release func(), free <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if limit <= 0 || s.used < limit {
		s.used++
		if waiting {
			s.waiters--
		}
		var once sync.Once
		return func() { once.Do(s.release) }, nil
	}
	if !waiting {
		s.waiters++
	}
	return nil, s.free
}

// unwait stops counting a caller that try counted as waiting and that gives up.
func (s *slots) unwait() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiters--
}

func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used--
	close(s.free)
	s.free = make(chan struct{})
}

// waiting returns how many writers wait for a slot.
func (s *slots) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiters
}
