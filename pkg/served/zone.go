package served

import (
	"strings"
	"time"
)

// ServerState is one name server in a zone's view.
type ServerState struct {
	// Server is host:port; the first of a view is the primary.
	Server string
	// Reading is its last answer; a zero At means it was never asked.
	Reading Reading
	// BehindSince, when not zero, is when it was first seen answering a serial below the
	// primary's, or ahead of it (from elsewhere), since it last answered the primary's.
	BehindSince time.Time
}

// ZoneView is how a zone's name servers follow their primary, as of their last readings.
type ZoneView struct {
	// Status is StatusServed (every server answers and follows), StatusPropagating (some
	// server is behind, within the stale deadline), StatusStale (some server is behind past
	// it) or StatusUnreachable (some server, or the primary, gave no SOA at its last
	// reading); "" before the primary was read.
	Status Status
	// Servers are every server, primary first.
	Servers []ServerState
	// Named are the servers the status is about (failing, or behind), in order.
	Named []ServerState
}

// JudgeZone is a zone's view from its servers' readings and behind times (Tracker's), at now;
// pure. A failing server outranks a stale one, which outranks one merely behind.
func JudgeZone(servers []string, readings map[string]Reading, behind map[string]time.Time, now time.Time, staleAfter time.Duration) ZoneView {
	var v ZoneView
	if len(servers) == 0 {
		return v
	}
	if _, ok := readings[servers[0]]; !ok {
		return v
	}
	var failing, stale, lagging []ServerState
	for _, s := range servers {
		st := ServerState{Server: s, Reading: readings[s], BehindSince: behind[s]}
		v.Servers = append(v.Servers, st)
		switch {
		case st.Reading.At.IsZero():
		case st.Reading.Err != "":
			failing = append(failing, st)
		case !st.BehindSince.IsZero() && now.Sub(st.BehindSince) >= staleAfter:
			stale = append(stale, st)
		case !st.BehindSince.IsZero():
			lagging = append(lagging, st)
		}
	}
	switch {
	case len(failing) > 0:
		v.Status, v.Named = StatusUnreachable, failing
	case len(stale) > 0:
		v.Status, v.Named = StatusStale, stale
	case len(lagging) > 0:
		v.Status, v.Named = StatusPropagating, lagging
	default:
		v.Status = StatusServed
	}
	return v
}

// signature identifies a view for notices: its status, except that a server merely behind
// (Propagating, a change on its way) counts as following, and the servers failing or stale. So a
// DNSZone is told when a server starts or stops failing or goes past the stale deadline, not at
// every change.
func (v ZoneView) signature() string {
	st := v.Status
	if st == StatusPropagating {
		st = StatusServed
	}
	var b strings.Builder
	b.WriteString(string(st))
	if st != StatusServed {
		for _, n := range v.Named {
			b.WriteString("|" + n.Server)
		}
	}
	return b.String()
}
