package dnszone

import (
	"testing"
	"time"
)

func TestRelated(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"example.test", "example.test", true},
		{"eu.example.test", "example.test", true},
		{"example.test", "a.b.example.test", true},
		{"z0.bench.test", "z1.bench.test", false},
		{"example.test", "notexample.test", false},
		{"example.test", "test", true},
		{"example.test", "example.org", false},
	} {
		if got := related(tc.a, tc.b); got != tc.want {
			t.Errorf("related(%q, %q) = %t, want %t", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestZoneLocks_UnrelatedZonesOverlapRelatedOnesWait holds two unrelated zones at once, and
// shows that a zone inside a held one waits until it is released.
func TestZoneLocks_UnrelatedZonesOverlapRelatedOnesWait(t *testing.T) {
	var l zoneLocks
	u0 := l.lock("z0.bench.test")
	u1 := l.lock("z1.bench.test") // would hang if unrelated zones excluded each other
	got := make(chan struct{})
	go func() {
		u := l.lock("a.z0.bench.test")
		close(got)
		u()
	}()
	select {
	case <-got:
		t.Fatal("a zone inside a held zone was locked while its parent was held")
	case <-time.After(50 * time.Millisecond):
	}
	u0()
	select {
	case <-got:
	case <-time.After(time.Minute): // catches a hang only
		t.Fatal("the child zone was not locked after its parent was released")
	}
	u1()
	if len(l.held) != 0 {
		t.Fatalf("held after every release: %v", l.held)
	}
}
