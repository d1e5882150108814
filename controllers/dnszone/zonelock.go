package dnszone

import (
	"sync"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// zoneLocks lets DNSZones be reconciled in parallel (one at a time, a first sync of
// many zones waited for each zone's provider read and SOA query in turn) while the reconciles
// that may decide each other's tenancy verdict never overlap: those of one zone name, and those
// of a zone and of a zone inside it (judge orders them; relevant). A reconcile holds its zone
// name from its read of the other DNSZones to its status write. The zero value is ready; it is
// safe for concurrent use.
type zoneLocks struct {
	mu   sync.Mutex
	cond *sync.Cond
	held map[string]int // canonical zone name -> reconciles holding it (0 or 1)
}

// related reports whether reconciles of zones a and b (canonical) must not overlap: the same
// name, or one inside the other.
func related(a, b string) bool {
	return a == b || dnswire.IsStrictSubdomain(a, b) || dnswire.IsStrictSubdomain(b, a)
}

// lock waits until no reconcile holds zone or a zone related to it, then holds zone; the
// returned func releases it. A zone name that is empty or not canonical is held as given.
func (l *zoneLocks) lock(zone string) (unlock func()) {
	l.mu.Lock()
	if l.cond == nil {
		l.cond = sync.NewCond(&l.mu)
		l.held = map[string]int{}
	}
	for l.busy(zone) {
		l.cond.Wait()
	}
	l.held[zone]++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		if l.held[zone]--; l.held[zone] == 0 {
			delete(l.held, zone)
		}
		l.mu.Unlock()
		l.cond.Broadcast()
	}
}

// busy reports whether a held zone is related to zone; l.mu must be held.
func (l *zoneLocks) busy(zone string) bool {
	for h := range l.held {
		if related(zone, h) {
			return true
		}
	}
	return false
}
