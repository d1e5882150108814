package zonedb

import (
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// The helpers of the tests inside the package, which cannot import zonedbtest (it imports
// zonedb): the same as zonedbtest's CountingClock, RRs and Put.

// countingClock stands still at Unix second 1: a new zone's serial is 1 and each change adds
// one (nextSerial: the clock's seconds are never newer).
func countingClock() clock.PassiveClock { return clocktesting.NewFakePassiveClock(time.Unix(1, 0)) }

// put stores one set made of master-file lines (all of one owner and type).
func put(t testing.TB, tx *Tx, setID string, weight *int64, lines ...string) {
	t.Helper()
	rs := RRSet{SetIdentifier: setID, Weight: weight, RRs: rrs(t, lines...)}
	h := rs.RRs[0].Header()
	rs.Name, rs.Type, rs.TTL = h.Name, h.Rrtype, h.Ttl
	if err := tx.Put(rs); err != nil {
		t.Fatalf("Put %v: %v", lines, err)
	}
}

// rrs parses master-file lines.
func rrs(t testing.TB, lines ...string) []dns.RR {
	t.Helper()
	out := make([]dns.RR, 0, len(lines))
	for _, l := range lines {
		rr, err := dns.NewRR(l)
		if err != nil {
			t.Fatalf("NewRR(%q): %v", l, err)
		}
		out = append(out, rr)
	}
	return out
}
