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
//
// Slots are handed out first come, first served: a released slot goes to the longest waiting
// acquire, and a new acquire waits behind those already waiting. Without that, a zone whose
// writes follow each other (a queue that built up behind its own flush asks again at once)
// took the slot back from zones that had waited for it: at 10,000 endpoints the bench's 1%
// change saw one zone write 7 times, one object at a time, while nine zones waited.
type slots struct {
	mu    sync.Mutex
	used  int
	queue []*slotWaiter // acquires waiting for a slot, oldest first
}

// slotWaiter is one waiting acquire: granted is closed when a release hands it a slot.
type slotWaiter struct {
	limit   int
	granted chan struct{}
}

func newSlots() *slots { return &slots{} }

// fits reports whether one more write fits under limit (limit <= 0: no limit). s.mu held.
func (s *slots) fits(limit int) bool { return limit <= 0 || s.used < limit }

// acquire waits until fewer than limit writes are in flight (limit <= 0: no limit) and no
// earlier acquire waits, and takes a slot; release gives it back, once. The error is ctx's,
// wrapped; an acquire that fails holds no slot.
func (s *slots) acquire(ctx context.Context, limit int) (release func(), err error) {
	var once sync.Once
	release = func() { once.Do(s.release) }
	s.mu.Lock()
	if len(s.queue) == 0 && s.fits(limit) {
		s.used++
		s.mu.Unlock()
		return release, nil
	}
	w := &slotWaiter{limit: limit, granted: make(chan struct{})}
	s.queue = append(s.queue, w)
	s.mu.Unlock()
	select {
	case <-w.granted:
		return release, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	select {
	case <-w.granted: // handed a slot as ctx ended: give it on
		s.mu.Unlock()
		s.release()
	default:
		for i, q := range s.queue {
			if q == w {
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
				break
			}
		}
		s.grant() // the head may have waited behind this one's lower limit
		s.mu.Unlock()
	}
	return nil, fmt.Errorf("wait for a write slot of the account: %w", ctx.Err())
}

func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used--
	s.grant()
}

// grant hands free slots to the waiting acquires in their order, as long as the oldest one's
// limit allows. s.mu held.
func (s *slots) grant() {
	for len(s.queue) > 0 && s.fits(s.queue[0].limit) {
		w := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.used++
		close(w.granted)
	}
}

// waiting returns how many acquires wait for a slot.
func (s *slots) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}
