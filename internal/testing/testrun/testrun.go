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
