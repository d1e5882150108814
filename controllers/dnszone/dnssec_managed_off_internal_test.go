package dnszone

import (
	"testing"
	"time"
)

// TestManagedMarker: the turn-off marker of a provider-signed zone reads back only for its own
// generation; an empty, unreadable or other generation's marker starts the wait again.
func TestManagedMarker(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	v := managedMarker(7, at)
	if got, ok := parseManagedMarker(v, 7); !ok || !got.Equal(at) {
		t.Fatalf("parseManagedMarker(%q, 7) = %v, %v; want %v, true", v, got, ok, at)
	}
	for _, bad := range []struct {
		v   string
		gen int64
	}{{v, 8}, {"", 7}, {"7", 7}, {"7/yesterday", 7}, {"x/" + at.Format(time.RFC3339), 7}} {
		if _, ok := parseManagedMarker(bad.v, bad.gen); ok {
			t.Errorf("parseManagedMarker(%q, %d) accepted; want the wait started again", bad.v, bad.gen)
		}
	}
}
