package zonewriter

import (
	"context"
	"errors"
	"testing"
	"time"
)

// hang is how long a test waits for something that must happen: it only catches hangs.
const hang = 10 * time.Second

// queueAcquire starts an acquire of s under limit in a goroutine, waits until it is queued
// (s.waiting() reaches want), and returns the channel its release func arrives on.
func queueAcquire(t *testing.T, ctx context.Context, s *slots, limit, want int) <-chan func() {
	t.Helper()
	got := make(chan func(), 1)
	go func() {
		rel, err := s.acquire(ctx, limit)
		if err != nil {
			close(got)
			return
		}
		got <- rel
	}()
	deadline := time.Now().Add(hang)
	for s.waiting() != want {
		if time.Now().After(deadline) {
			t.Fatalf("acquire not queued: %d waiting, want %d", s.waiting(), want)
		}
		time.Sleep(time.Millisecond)
	}
	return got
}

func granted(t *testing.T, c <-chan func(), what string) func() {
	t.Helper()
	select {
	case rel, ok := <-c:
		if !ok {
			t.Fatalf("%s: acquire failed", what)
		}
		return rel
	case <-time.After(hang):
		t.Fatalf("%s: no slot", what)
		return nil
	}
}

func notGranted(t *testing.T, c <-chan func(), what string) {
	t.Helper()
	select {
	case <-c:
		t.Fatalf("%s: got a slot out of turn", what)
	default:
	}
}

func TestSlots_FirstComeFirstServed(t *testing.T) {
	ctx := context.Background()
	s := newSlots()
	relA, err := s.acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := queueAcquire(t, ctx, s, 1, 1)
	c := queueAcquire(t, ctx, s, 1, 2)
	relA()
	relA() // a second call gives nothing back
	relB := granted(t, b, "b, the oldest waiter")
	notGranted(t, c, "c")
	// A new acquire does not take a slot ahead of c, even when one is free at that instant.
	d := queueAcquire(t, ctx, s, 1, 2)
	relB()
	relC := granted(t, c, "c")
	notGranted(t, d, "d")
	relC()
	granted(t, d, "d")()
	if s.used != 0 || s.waiting() != 0 {
		t.Errorf("after every release: used %d, waiting %d; want 0, 0", s.used, s.waiting())
	}
}

func TestSlots_Limits(t *testing.T) {
	ctx := context.Background()
	s := newSlots()
	// No limit: never waits, and writes are still counted.
	r1, _ := s.acquire(ctx, 0)
	r2, _ := s.acquire(ctx, -1)
	if s.used != 2 {
		t.Fatalf("used %d, want 2", s.used)
	}
	// Limit 2 with 2 in flight waits; a raised limit of the next acquire does not jump the queue.
	w2 := queueAcquire(t, ctx, s, 2, 1)
	w3 := queueAcquire(t, ctx, s, 3, 2)
	notGranted(t, w3, "limit 3 behind limit 2")
	r1()
	granted(t, w2, "limit 2 after a release")()
	granted(t, w3, "limit 3")()
	r2()
	if s.used != 0 {
		t.Errorf("used %d, want 0", s.used)
	}
}

func TestSlots_ACancelledWaiterLeavesTheQueue(t *testing.T) {
	s := newSlots()
	rel, _ := s.acquire(context.Background(), 1)
	cctx, cancel := context.WithCancel(context.Background())
	gone := queueAcquire(t, cctx, s, 1, 1)
	next := queueAcquire(t, context.Background(), s, 1, 2)
	cancel()
	if _, ok := <-gone; ok {
		t.Fatal("a cancelled acquire got a slot")
	}
	if s.waiting() != 1 {
		t.Fatalf("waiting %d after the cancel, want 1", s.waiting())
	}
	rel()
	granted(t, next, "the waiter behind the cancelled one")()

	// A timed-out acquire returns ctx's error, wrapped.
	rel, _ = s.acquire(context.Background(), 1)
	tctx, tcancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer tcancel()
	if _, err := s.acquire(tctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want DeadlineExceeded", err)
	}
	rel()
	if s.used != 0 || s.waiting() != 0 {
		t.Errorf("used %d, waiting %d; want 0, 0", s.used, s.waiting())
	}
}
