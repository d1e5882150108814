// Package testrun runs a component in the background for the length of one test. It is imported
// by tests only, and imports nothing of dnsplane, so that any package's tests can use it.
package testrun

import (
	"context"
	"testing"
	"time"
)

// HangTimeout is the shortest deadline of a wait in dnsplane's tests: long enough that only a
// hang reaches it, however busy the machine (DEVELOPERS.md: tests assert outcomes under a
// deadline that only catches hangs; figures go to benchmarks or logs).
const HangTimeout = 2 * time.Minute

// StopTimeout bounds how long a component may take to return once its context is cancelled: a
// hang deadline.
const StopTimeout = HangTimeout

// Background runs start(ctx) in a goroutine until the test ends. At cleanup it cancels ctx and
// waits for start to return: the test fails, naming what, when start returned an error or did not
// return within StopTimeout.
func Background(t testing.TB, what string, start func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", what, err)
			}
		case <-time.After(StopTimeout):
			t.Errorf("%s did not stop within %s", what, StopTimeout)
		}
	})
}

// Eventually calls check every 100 ms until it returns nil, and fails the test, naming what and
// check's last error, when the deadline passes first: timeout, raised to HangTimeout when it is
// shorter, so that a wait catches hangs and never a slow machine. A check that takes longer than
// timeout is logged (the figure, never a failure).
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(max(timeout, HangTimeout))
	for {
		err := check()
		if err == nil {
			if took := time.Since(start); took > timeout {
				t.Logf("%s: after %s (expected within %s)", what, took.Round(time.Millisecond), timeout)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, max(timeout, HangTimeout), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Returns calls fn in a goroutine and returns its error, failing the test, naming what, when fn
// has not returned within HangTimeout: a call that must come back (bounded by its own timeouts)
// without a deadline of the test's making.
func Returns(t testing.TB, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(HangTimeout):
		t.Fatalf("%s did not return within %s", what, HangTimeout)
		return nil
	}
}
