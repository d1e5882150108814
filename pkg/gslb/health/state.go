package health

import (
	"net/netip"
	"time"
)

// Verdict is one vantage point's (or the quorum's) view of one target.
type Verdict int8

const (
	// Unknown: too few probes to say (or, in a record, no verdict).
	Unknown Verdict = iota
	// Up: the target passes.
	Up
	// Down: the target fails.
	Down
)

// String returns "Unknown", "Up" or "Down" (the API's TargetVerdict values).
func (v Verdict) String() string {
	switch v {
	case Up:
		return "Up"
	case Down:
		return "Down"
	}
	return "Unknown"
}

// Thresholds are spec.healthCheck's failureThreshold and successThreshold: how many
// consecutive failed (passed) probes make a vantage point call a target down (up). A value
// below 1 counts as 1.
type Thresholds struct {
	Failure, Success int
}

// Outcome is the result of one probe.
type Outcome struct {
	// OK: the probe passed.
	OK bool
	// Err is why it failed, in words ("HTTP 503", "connect: connection refused",
	// "timeout after 2s"); empty when OK.
	Err string
	// At is when the probe ended.
	At time.Time
	// Abstain: the probe could not be attempted from this vantage point (no route to the
	// target's family from here, no source address of its family): no vote on the target.
	Abstain bool
}

// ProbeState is one vantage point's state for one target (one address, so one family): the
// verdict, and the run of equal outcomes that moves it. The zero value is a target never
// probed: Unknown.
type ProbeState struct {
	// Verdict is Unknown until Success consecutive probes pass (Up) or Failure consecutive
	// probes fail (Down); after that it changes only when the opposite threshold is reached.
	Verdict Verdict
	// Successes and Failures count the current run of passed or failed probes; one of them is
	// 0.
	Successes, Failures int
	// LastError is the last failed probe's Err, kept until a probe passes.
	LastError string
	// LastProbe is the At of the last outcome.
	LastProbe time.Time
}

// Observe returns the state after o under th. A failure below the failure threshold leaves an
// Up target Up (and an Unknown one Unknown) but keeps its error in LastError. An abstention
// makes the verdict Unknown (no vote, whatever it was) and starts the runs over, keeping its
// reason in LastError.
func (s ProbeState) Observe(o Outcome, th Thresholds) ProbeState {
	fail, succ := max(th.Failure, 1), max(th.Success, 1)
	s.LastProbe = o.At
	if o.Abstain {
		s.Verdict, s.Successes, s.Failures, s.LastError = Unknown, 0, 0, o.Err
		return s
	}
	if o.OK {
		s.Failures = 0
		s.Successes++
		s.LastError = ""
		if s.Successes >= succ {
			s.Verdict = Up
		}
		return s
	}
	s.Successes = 0
	s.Failures++
	s.LastError = o.Err
	if s.LastError == "" {
		s.LastError = "failed"
	}
	if s.Failures >= fail {
		s.Verdict = Down
	}
	return s
}

// Memory is what Decide remembers between two calls for one host; the caller keeps it and
// persists it (the zero value is a fresh start).
type Memory struct {
	// Agreed is every candidate's last decision taken while this member was not isolated:
	// the last agreed answer, kept while isolated; a target that left the candidates keeps
	// its entry for as long as its damping state is kept (Flaps).
	Agreed map[netip.Addr]Verdict
	// IsolatedSince is when this member last became isolated; zero while it is not.
	IsolatedSince time.Time
	// Seen is, by member geo tag, the freshness tracking of its record (Freshness).
	Seen map[string]Sighting
	// Flaps is the damping state of every target that went Down recently: kept, candidate or
	// not, while its last Down is within Judge.FlapWindow + Judge.FlapDwell or its dwell runs.
	Flaps map[netip.Addr]Flap
	// MajorityUp holds the targets that a majority of the membership called Up since their
	// last agreed Down (or since this memory began): only a Down that follows such an Up is a
	// flap's onset. An Up that no majority voted for (the Downs' votes went stale, the member
	// was isolated) is the absence of a quorum for Down, not a recovery. It is not kept in
	// status: after a restart the first Down is no onset, which only damps less.
	MajorityUp map[netip.Addr]bool
}

// Sighting is what a reader remembers of one member's record: the record's time and when, by
// the reader's own clock, it first saw that time.
type Sighting struct {
	// At is the record's IssuedAt last seen.
	At time.Time
	// FirstSeen is the reader's clock when it first saw At.
	FirstSeen time.Time
	// Advanced: At replaced an earlier, smaller At this reader had seen (so its freshness is
	// judged by the reader's clock alone, not the wall-clock rule).
	Advanced bool
	// Below is the highest record time below At seen since At was, BelowSeen when it was
	// first seen and BelowAdvanced whether it replaced a smaller Below: the lower track, on
	// which a writer whose clock stepped back advances (Freshness). Zero when none.
	Below, BelowSeen time.Time
	BelowAdvanced    bool
}

// Flap is one target's damping state.
type Flap struct {
	// Downs are the times (reader's clock) its agreed decision went from Up to Down, within
	// Judge.FlapWindow.
	Downs []time.Time
	// UpSince is when the quorum started saying Up again while the target is damped; zero
	// when it is not.
	UpSince time.Time
}
