package served_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/served"
)

// serverNames is the name server of each of xs (server), joined with commas.
func serverNames[T any](xs []T, server func(T) string) string {
	var out []string
	for _, x := range xs {
		out = append(out, server(x))
	}
	return strings.Join(out, ",")
}

func TestReached_FollowsRFC1982(t *testing.T) {
	cases := []struct {
		have, want uint32
		reached    bool
	}{
		{7, 7, true},
		{8, 7, true},
		{6, 7, false},
		{0, 0xffffffff, true},          // wrapped: 0 comes after 2^32-1
		{0xffffffff, 0, false},         // and 2^32-1 before 0
		{1<<31 - 1, 0, true},           // the farthest "after"
		{1 << 31, 0, false},            // 2^31 apart: undefined, not reached
		{0, 1 << 31, false},            // likewise the other way round
		{5, 5 + 1<<31 + 1, true},       // 2^31-1 behind is after, modulo 2^32
		{1700000000, 1699999999, true}, // a clock serial one second later
	}
	for _, c := range cases {
		if got := served.Reached(c.have, c.want); got != c.reached {
			t.Errorf("Reached(%d, %d) = %t, want %t", c.have, c.want, got, c.reached)
		}
	}
}

func TestJudge_EveryOutcome(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	servers := []string{"p:53", "a:53", "b:53"}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ok := func(serial uint32) served.Reading { return served.Reading{Serial: serial, At: at(time.Second)} }
	failed := served.Reading{At: at(time.Second), Err: "no answer within 2s"}
	unsigned := served.Reading{Serial: 10, At: at(time.Second), Unsigned: "no RRSIG over the SOA"}
	want := served.Want{Serial: 10, Since: t0}
	cases := []struct {
		name     string
		want     served.Want
		readings map[string]served.Reading
		now      time.Duration
		status   served.Status
		behind   []string
		lag      time.Duration
	}{
		{"every server at the serial", want, map[string]served.Reading{"p:53": ok(10), "a:53": ok(10), "b:53": ok(10)}, 2 * time.Second, served.StatusServed, nil, 2 * time.Second},
		{"every server past it", want, map[string]served.Reading{"p:53": ok(12), "a:53": ok(11), "b:53": ok(10)}, 2 * time.Second, served.StatusServed, nil, 2 * time.Second},
		{"one secondary behind", want, map[string]served.Reading{"p:53": ok(10), "a:53": ok(9), "b:53": ok(10)}, time.Minute, served.StatusPropagating, []string{"a:53"}, time.Minute},
		{"one secondary not asked yet", want, map[string]served.Reading{"p:53": ok(10), "a:53": ok(10)}, time.Second, served.StatusPropagating, []string{"b:53"}, time.Second},
		{"one secondary at the serial, unsigned", want, map[string]served.Reading{"p:53": ok(10), "a:53": unsigned, "b:53": ok(10)}, time.Second, served.StatusPropagating, []string{"a:53"}, time.Second},
		{"every server at the serial, unsigned", want, map[string]served.Reading{"p:53": unsigned, "a:53": unsigned, "b:53": unsigned}, time.Second, served.StatusPropagating, []string{"p:53", "a:53", "b:53"}, time.Second},
		{"one secondary not answering", want, map[string]served.Reading{"p:53": ok(10), "a:53": failed, "b:53": ok(10)}, time.Second, served.StatusPropagating, []string{"a:53"}, time.Second},
		{"behind at the deadline", want, map[string]served.Reading{"p:53": ok(10), "a:53": ok(9), "b:53": failed}, 5 * time.Minute, served.StatusStale, []string{"a:53", "b:53"}, 5 * time.Minute},
		{"no server answers", want, map[string]served.Reading{"p:53": failed, "a:53": failed, "b:53": failed}, time.Second, served.StatusUnreachable, []string{"p:53", "a:53", "b:53"}, time.Second},
		{"no server answers, past the deadline", want, map[string]served.Reading{"p:53": failed, "a:53": failed, "b:53": failed}, time.Hour, served.StatusUnreachable, []string{"p:53", "a:53", "b:53"}, time.Hour},
		{"none asked yet", want, nil, 0, served.StatusPropagating, []string{"p:53", "a:53", "b:53"}, 0},
		{"a serial wrapped past 2^32", served.Want{Serial: 0xfffffffe, Since: t0}, map[string]served.Reading{"p:53": ok(1), "a:53": ok(0xffffffff), "b:53": ok(0xfffffffd)}, time.Second, served.StatusPropagating, []string{"b:53"}, time.Second},
		{"served before, no readings (a restart)", served.Want{Serial: 10, Since: t0, ServedAt: at(3 * time.Second), Slowest: "b:53"}, nil, time.Hour, served.StatusServed, nil, 3 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := served.Judge(c.want, servers, c.readings, at(c.now), 5*time.Minute)
			if v.Status != c.status {
				t.Fatalf("status %s, want %s (%+v)", v.Status, c.status, v)
			}
			if behind := serverNames(v.Behind, func(b served.Behind) string { return b.Server }); behind != strings.Join(c.behind, ",") {
				t.Errorf("behind %v, want %v", behind, c.behind)
			}
			if v.Lag != c.lag {
				t.Errorf("lag %s, want %s", v.Lag, c.lag)
			}
			if len(c.behind) > 0 && v.Slowest != c.behind[0] {
				t.Errorf("slowest %q, want the first behind, %q", v.Slowest, c.behind[0])
			}
		})
	}
}

func TestDescribe_NamesEachServerAndHowItIsBehind(t *testing.T) {
	w := served.Want{Serial: 9}
	behind := []served.Behind{
		{Server: "127.0.0.1:5301", Reading: served.Reading{Serial: 7, At: time.Unix(1, 0)}},
		{Server: "127.0.0.1:5302", Reading: served.Reading{At: time.Unix(1, 0), Err: "no answer within 2s"}},
		{Server: "127.0.0.1:5303"},
		{Server: "127.0.0.1:5304"},
	}
	got := served.Describe(w, behind, 3)
	want := "127.0.0.1:5301 answers serial 7 (want 9); 127.0.0.1:5302: no answer within 2s; 127.0.0.1:5303 not asked yet; and 1 more"
	if got != want {
		t.Fatalf("Describe:\n got %q\nwant %q", got, want)
	}
}
