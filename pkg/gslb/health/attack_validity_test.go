package health

import (
	"testing"
	"time"
)

// TestAttack_ValidityCappedBelowOneProbePeriod: the API accepts intervalSeconds up to 3600,
// each probe "plus up to 10% jitter". docs/design.md ("Freshness"): `for` is
// 3 × max(intervalSeconds, --gslb-interval), so that one lost write or one lost query does not
// make a record stale, and a record's time is its oldest probe's. Without the guard: Validity truncates
// to MaxValidFor (1 h), so from intervalSeconds 1200 on a record gets fewer than three probe
// periods, and at 3600 less than one: a writer's time advances only when its oldest target is
// probed again, up to 3960 s later, after every reader (capping at its own 1 h) has judged it
// stale: every member of a healthy fleet hears only itself for minutes of every hour
// (isolated, holding), and L1's bound cannot be met.
func TestAttack_ValidityCappedBelowOneProbePeriod(t *testing.T) {
	for _, interval := range []time.Duration{1200 * time.Second, 3600 * time.Second} {
		reconcile := 30 * time.Second
		v := Validity(interval, reconcile)
		// The longest gap between two advances of a record's time with no loss at all: one probe
		// period with its jitter, plus the writer's reconcile that publishes it.
		gap := interval + interval/10 + reconcile
		if v < gap {
			t.Errorf("intervalSeconds %d: validity %s, while a record's time may not advance for %s without any loss (doc: 3 × %s = %s)",
				int(interval/time.Second), v, gap, interval, 3*interval)
		}
	}
}
