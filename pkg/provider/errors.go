package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Sentinel errors. Providers wrap them with context ("ensure zone
// c1.example.test: %w"); callers test them with errors.Is.
var (
	// ErrZoneNotFound: the zone ID is unknown to the provider.
	ErrZoneNotFound = errors.New("zone not found")
	// ErrZoneConflict: a zone of that name exists with another caller
	// reference (or without one); adopt it by ID instead of creating it.
	ErrZoneConflict = errors.New("zone exists with another caller reference")
	// ErrInvalidCredentials: the backend rejected the credentials, or they
	// are malformed.
	ErrInvalidCredentials = errors.New("invalid credentials")
	// ErrThrottled: the backend asked us to slow down. A *ThrottledError
	// wrapping it may carry how long to wait.
	ErrThrottled = errors.New("throttled by provider")
	// ErrConflict: a conditional write found the current data different from
	// the Change's Before (or an existing set for a Create). Re-read and plan
	// again.
	ErrConflict = errors.New("record set changed concurrently")
	// ErrNotCapable: the provider cannot do what was asked (see Capabilities).
	ErrNotCapable = errors.New("not supported by provider")
	// ErrInvalidChange: the input was rejected before anything was written
	// (bad name, target, TTL, out-of-zone name, CNAME beside other data, ...).
	ErrInvalidChange = errors.New("invalid change")
	// ErrUnavailable: the backend failed to answer (a server error that is not a
	// refusal of the input); the request may or may not have been applied. The
	// zone writer never blames one submission of a batch for it.
	ErrUnavailable = errors.New("provider unavailable")
)

// ThrottledError is ErrThrottled with the backend's hint of when to retry.
// errors.Is(err, ErrThrottled) is true for it.
type ThrottledError struct {
	// RetryAfter is the backend's suggested wait; 0 when it gave none.
	RetryAfter time.Duration
	// Err is the underlying error, if any.
	Err error
}

// Error implements error.
func (e *ThrottledError) Error() string {
	msg := ErrThrottled.Error()
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrThrottled) true.
func (e *ThrottledError) Is(target error) bool { return target == ErrThrottled }

// Unwrap returns the underlying error.
func (e *ThrottledError) Unwrap() error { return e.Err }

// RetryAfter returns the retry hint of the first *ThrottledError in err's
// chain, and whether err is throttling at all (errors.Is ErrThrottled).
func RetryAfter(err error) (time.Duration, bool) {
	var te *ThrottledError
	if errors.As(err, &te) {
		return te.RetryAfter, true
	}
	return 0, errors.Is(err, ErrThrottled)
}

// Unreachable reports whether err says that the backend was not reached, or failed to answer,
// rather than refused the request: a network error (net.Error, which *url.Error is: a reset, a
// refused connection, a TLS failure, a client timeout), a reply cut short (io.EOF,
// io.ErrUnexpectedEOF), a deadline (context.DeadlineExceeded: a per-request timeout, or the
// caller's, which callers tell apart with their own context), or ErrUnavailable. Such a request
// may or may not have been applied. An error that also carries the backend's verdict
// (ErrInvalidCredentials, ErrZoneNotFound, ErrZoneConflict, ErrConflict, ErrInvalidChange,
// ErrNotCapable) is that verdict, not Unreachable.
func Unreachable(err error) bool {
	for _, verdict := range []error{ErrInvalidCredentials, ErrZoneNotFound, ErrZoneConflict, ErrConflict, ErrInvalidChange, ErrNotCapable} {
		if errors.Is(err, verdict) {
			return false
		}
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable)
}
