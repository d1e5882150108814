package health

import (
	"testing"
	"time"
)

func TestProbeState_Thresholds(t *testing.T) {
	th := Thresholds{Failure: 3, Success: 2}
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 10 * time.Second) }
	type step struct {
		ok      bool
		err     string
		verdict Verdict
		lastErr string
	}
	for _, tc := range []struct {
		name  string
		th    Thresholds
		steps []step
	}{{
		name: "unknown until a threshold is reached",
		th:   th,
		steps: []step{
			{ok: true, verdict: Unknown},
			{ok: true, verdict: Up},
		},
	}, {
		name: "one probe failure is not yet down, and keeps its error",
		th:   th,
		steps: []step{
			{ok: true}, {ok: true, verdict: Up},
			{err: "HTTP 503", verdict: Up, lastErr: "HTTP 503"},
			{err: "HTTP 503", verdict: Up, lastErr: "HTTP 503"},
			{err: "timeout after 2s", verdict: Down, lastErr: "timeout after 2s"},
		},
	}, {
		name: "a pass interrupts a run of failures",
		th:   th,
		steps: []step{
			{ok: true}, {ok: true, verdict: Up},
			{err: "HTTP 503", verdict: Up, lastErr: "HTTP 503"},
			{err: "HTTP 503", verdict: Up, lastErr: "HTTP 503"},
			{ok: true, verdict: Up},
			{err: "HTTP 503", verdict: Up, lastErr: "HTTP 503"},
		},
	}, {
		name: "down needs successThreshold passes to come back",
		th:   th,
		steps: []step{
			{err: "x", lastErr: "x"}, {err: "x", lastErr: "x"}, {err: "connect: connection refused", verdict: Down, lastErr: "connect: connection refused"},
			{ok: true, verdict: Down},
			{err: "x", verdict: Down, lastErr: "x"},
			{ok: true, verdict: Down},
			{ok: true, verdict: Up},
		},
	}, {
		name: "thresholds below 1 count as 1; a failure without words says failed",
		th:   Thresholds{},
		steps: []step{
			{ok: true, verdict: Up},
			{verdict: Down, lastErr: "failed"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var s ProbeState
			for i, st := range tc.steps {
				s = s.Observe(Outcome{OK: st.ok, Err: st.err, At: at(i)}, tc.th)
				if s.Verdict != st.verdict || s.LastError != st.lastErr || !s.LastProbe.Equal(at(i)) {
					t.Fatalf("after step %d (%+v): %+v, want verdict %v, last error %q", i+1, st, s, st.verdict, st.lastErr)
				}
				if s.Successes > 0 && s.Failures > 0 {
					t.Fatalf("after step %d: both runs counted: %+v", i+1, s)
				}
			}
		})
	}
}

func TestVerdict_String(t *testing.T) {
	if Up.String() != "Up" || Down.String() != "Down" || Unknown.String() != "Unknown" {
		t.Fatal("Verdict strings differ from the API's TargetVerdict values")
	}
}
