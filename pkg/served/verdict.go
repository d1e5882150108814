package served

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Reached reports whether serial have is want or comes after it, in the sequence space
// arithmetic of RFC 1982 §3.2 for SERIAL_BITS 32 (RFC 1035 §3.3.13's SOA serial): have is
// after want when have-want, modulo 2^32, is in 1..2^31-1. A distance of exactly 2^31 is
// undefined in RFC 1982 and counts as not reached.
func Reached(have, want uint32) bool { return int32(have-want) >= 0 }

// Reading is the last SOA answer of one name server of a zone.
type Reading struct {
	// Serial is the zone's SOA serial the server answered; meaningless when Err is set.
	Serial uint32
	// At is when the answer (or the failure) came.
	At time.Time
	// Err is why the server gave no authoritative SOA ("" when it did): the query's error
	// text, which names the server and the cause but no credential (dnsclient.TransportError).
	Err string
	// Unsigned, for a signed zone (Zone.Keys), is why the server's SOA answer does not show the
	// SOA signed by one of the zone's keys (Unsigned, the function): it answers the serial, but
	// not the zone as signed, and serves no change of it. "" when it does, and for a zone that
	// is not signed.
	Unsigned string
}

// Want is one object's change in one zone: the serial that carries it and when it was written.
type Want struct {
	// Serial is the primary's SOA serial read after the write, or any later one.
	Serial uint32
	// Since is when the write was acknowledged.
	Since time.Time
	// ServedAt, when not zero, is when every server was first seen at Serial; a verdict of
	// a served want needs no reading (a restarted manager does not ask again).
	ServedAt time.Time
	// Slowest is the server that reached Serial last, once served.
	Slowest string
}

// Status is a verdict's outcome, the Served condition's reason.
type Status string

const (
	// StatusServed: every name server answers the serial that carries the change, or a later one.
	StatusServed Status = "Served"
	// StatusPropagating: some name servers still answer an older serial, or have not answered
	// since the write, within the stale deadline.
	StatusPropagating Status = "Propagating"
	// StatusStale: as Propagating, past the stale deadline.
	StatusStale Status = "Stale"
	// StatusUnreachable: no name server answered the zone's SOA at the last check, so nothing
	// is known of the change.
	StatusUnreachable Status = "Unreachable"
)

// Behind is one name server that does not answer a wanted serial yet.
type Behind struct {
	// Server is host:port.
	Server string
	// Reading is its last answer; a zero At means it was not asked since the write.
	Reading Reading
	// Primary: the server is the zone's primary, below the wanted serial: its serial did not
	// move with the write (Tracker.Written wants the serial after the one read before it).
	Primary bool
	// Ahead: a secondary that answers a serial after the one its primary answered later: it
	// serves the zone from elsewhere, and its serial says nothing of the change.
	Ahead bool
}

// Verdict is what Judge concluded for one want.
type Verdict struct {
	Status Status
	// Behind lists the servers below the wanted serial, in the servers' order; empty when
	// Served.
	Behind []Behind
	// Lag is how long the change has waited (now - Since) while not served, or the
	// write-to-served time of the slowest server once served.
	Lag time.Duration
	// Slowest is the server furthest behind (the first of Behind), or the one that reached
	// the serial last once served.
	Slowest string
}

// Judge decides whether want is served by every one of servers (host:port, primary first),
// given each one's last reading, at now; a change not served within staleAfter of its write is
// Stale. A server has reached want when its serial is want's or later (Reached), and, for a
// secondary, not after a serial its primary answered later (ahead: it follows another
// primary). It is pure: the Tracker feeds it, and its table and property tests cover every
// outcome.
func Judge(want Want, servers []string, readings map[string]Reading, now time.Time, staleAfter time.Duration) Verdict {
	return judge(want, servers, readings, now, staleAfter, true)
}

// judge is Judge; a secondary is judged ahead of its primary only when line is true (the
// zone's serials are one primary's SOA serials).
func judge(want Want, servers []string, readings map[string]Reading, now time.Time, staleAfter time.Duration, line bool) Verdict {
	if !want.ServedAt.IsZero() {
		return Verdict{Status: StatusServed, Lag: want.ServedAt.Sub(want.Since), Slowest: want.Slowest}
	}
	var behind []Behind
	answered := 0
	for i, s := range servers {
		r, ok := readings[s]
		if ok && r.Err == "" {
			answered++
		}
		b := Behind{Server: s, Reading: r, Primary: i == 0}
		switch {
		case !ok || r.Err != "" || r.Unsigned != "" || !Reached(r.Serial, want.Serial):
			behind = append(behind, b)
		case line && i > 0 && ahead(r, readings[servers[0]]):
			b.Ahead = true
			behind = append(behind, b)
		}
	}
	lag := max(now.Sub(want.Since), 0)
	switch {
	case len(behind) == 0:
		return Verdict{Status: StatusServed, Lag: lag}
	case answered == 0 && allFailed(behind):
		return Verdict{Status: StatusUnreachable, Behind: behind, Lag: lag, Slowest: behind[0].Server}
	case staleAfter > 0 && lag >= staleAfter:
		return Verdict{Status: StatusStale, Behind: behind, Lag: lag, Slowest: behind[0].Server}
	}
	return Verdict{Status: StatusPropagating, Behind: behind, Lag: lag, Slowest: behind[0].Server}
}

// ahead reports whether a secondary's reading r is after its primary's reading p, taken at or
// after r: a primary's serial never goes back, so the secondary's serial did not come from it.
func ahead(r, p Reading) bool {
	return p.Err == "" && !p.At.IsZero() && !p.At.Before(r.At) && r.Serial != p.Serial && Reached(r.Serial, p.Serial)
}

// allFailed reports whether every server behind has a failed reading (not merely none yet).
func allFailed(behind []Behind) bool {
	return !slices.ContainsFunc(behind, func(b Behind) bool { return b.Reading.Err == "" })
}

// Describe says, for a condition message, which servers are behind want and how: "127.0.0.1:5301
// answers serial 7 (want 9); 127.0.0.1:5302: no answer within 2s", at most max servers, then
// "and N more".
func Describe(want Want, behind []Behind, max int) string {
	parts := make([]string, 0, min(len(behind), max)+1)
	for i, b := range behind {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(behind)-max))
			break
		}
		switch {
		case b.Reading.At.IsZero():
			parts = append(parts, b.Server+" not asked yet")
		case b.Reading.Err != "" && strings.Contains(b.Reading.Err, b.Server):
			parts = append(parts, b.Reading.Err) // dnsclient's errors name the server already
		case b.Reading.Err != "":
			parts = append(parts, b.Server+": "+b.Reading.Err)
		case b.Reading.Unsigned != "" && Reached(b.Reading.Serial, want.Serial):
			parts = append(parts, fmt.Sprintf("%s answers serial %d unsigned (%s): it does not serve the signed zone", b.Server, b.Reading.Serial, b.Reading.Unsigned))
		case b.Primary:
			parts = append(parts, fmt.Sprintf("%s, the primary, answers serial %d (want %d): its serial did not move with the write, "+
				"so no secondary transfers the change (PowerDNS: set the zone's SOA-EDIT-API, e.g. to DEFAULT)", b.Server, b.Reading.Serial, want.Serial))
		case b.Ahead:
			parts = append(parts, fmt.Sprintf("%s answers serial %d, ahead of the primary's: it serves the zone from elsewhere", b.Server, b.Reading.Serial))
		default:
			parts = append(parts, fmt.Sprintf("%s answers serial %d (want %d)", b.Server, b.Reading.Serial, want.Serial))
		}
	}
	return strings.Join(parts, "; ")
}
