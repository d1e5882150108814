package health

import "testing"

// TestProbeState_AbstainIsNoVote: a probe that could not be attempted from here makes the
// verdict Unknown from Up or Down (no vote), starts the runs over and keeps its reason; the
// next probes count from zero.
func TestProbeState_AbstainIsNoVote(t *testing.T) {
	th := Thresholds{Failure: 2, Success: 2}
	abstain := Outcome{Abstain: true, Err: "cannot probe from here: connect: network is unreachable", At: t0}
	for _, from := range []Verdict{Up, Down, Unknown} {
		s := ProbeState{Verdict: from, Successes: 1, LastError: "HTTP 503"}
		if from == Down {
			s = ProbeState{Verdict: from, Failures: 5}
		}
		s = s.Observe(abstain, th)
		if s.Verdict != Unknown || s.Successes != 0 || s.Failures != 0 || s.LastError != abstain.Err || !s.LastProbe.Equal(t0) {
			t.Fatalf("from %s: %+v; want Unknown, no runs, the abstention's reason", from, s)
		}
		s = s.Observe(abstain, th).Observe(Outcome{Err: "HTTP 503", At: t0}, th)
		if s.Verdict != Unknown || s.Failures != 1 {
			t.Fatalf("from %s, abstentions then one failure: %+v; want Unknown with 1 failure", from, s)
		}
	}
}
