package publish

import (
	"errors"
	"strings"
	"testing"
	"time"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/served"
)

func TestServedCondition_TheWorstZoneWinsAndEveryLaggingZoneIsNamed(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	ok := func(zone, slowest string, lag time.Duration) zoneVerdict {
		return zoneVerdict{zone: zone, want: served.Want{Serial: 5, Since: t0, ServedAt: t0.Add(lag), Slowest: slowest},
			v: served.Verdict{Status: served.StatusServed, Lag: lag, Slowest: slowest}}
	}
	behind := func(zone string, st served.Status, server string) zoneVerdict {
		return zoneVerdict{zone: zone, want: served.Want{Serial: 7, Since: t0},
			v: served.Verdict{Status: st, Behind: []served.Behind{{Server: server, Reading: served.Reading{Serial: 6, At: t0}}}, Slowest: server}}
	}
	cases := []struct {
		name      string
		vs        []zoneVerdict
		unchecked []string
		ok        bool
		reason    string
		has, not  []string
	}{
		{"one zone served", []zoneVerdict{ok("a.test", "127.0.0.22:53", 300*time.Millisecond)}, nil, true, dnsv1.ReasonServed,
			[]string{"zone a.test", "slowest 127.0.0.22:53 after 300ms"}, nil},
		{"two zones served: the slower is named", []zoneVerdict{ok("a.test", "x:53", time.Second), ok("b.test", "y:53", 2*time.Second)}, nil, true, dnsv1.ReasonServed,
			[]string{"2 zones", "slowest y:53 after 2s"}, []string{"x:53"}},
		{"one zone propagating", []zoneVerdict{ok("a.test", "x:53", time.Second), behind("b.test", served.StatusPropagating, "n:53")}, nil, false, dnsv1.ReasonPropagating,
			[]string{"zone b.test (serial 7, written 2026-12-04T12:00:00Z): n:53 answers serial 6 (want 7)"}, []string{"a.test"}},
		{"stale beats propagating", []zoneVerdict{behind("a.test", served.StatusPropagating, "p:53"), behind("b.test", served.StatusStale, "s:53")}, nil, false, dnsv1.ReasonStale,
			[]string{"zone a.test", "p:53", "zone b.test", "s:53"}, nil},
		{"a primary without a serial is unreachable", []zoneVerdict{behind("a.test", served.StatusStale, "s:53"), {zone: "b.test", err: errors.New("primary 127.0.0.1:53: connection refused")}}, nil, false, dnsv1.ReasonUnreachable,
			[]string{"zone b.test: the primary gave no SOA serial after the write: primary 127.0.0.1:53: connection refused", "zone a.test"}, nil},
		{"only unchecked zones", nil, []string{"r53.test"}, false, dnsv1.ReasonNotChecked, []string{"r53.test", "no SOA serial", "webhook Secret without DNS_ADDRESS"}, nil},
		{"nothing written", nil, nil, false, dnsv1.ReasonNotChecked, []string{"no records written yet"}, nil},
		{"a zone not checked is not served", []zoneVerdict{ok("a.test", "x:53", time.Second)}, []string{"r53.test"}, false, dnsv1.ReasonNotChecked,
			[]string{"zone a.test", "not checked: the name servers of r53.test"}, nil},
		{"a zone behind and one not checked: both named", []zoneVerdict{behind("a.test", served.StatusPropagating, "p:53")}, []string{"r53.test"}, false, dnsv1.ReasonPropagating,
			[]string{"zone a.test", "p:53", "not checked: the name servers of r53.test"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gotOK, reason, msg := servedCondition(c.vs, c.unchecked)
			if gotOK != c.ok || reason != c.reason {
				t.Fatalf("servedCondition = %t %s (%q), want %t %s", gotOK, reason, msg, c.ok, c.reason)
			}
			for _, s := range c.has {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q lacks %q", msg, s)
				}
			}
			for _, s := range c.not {
				if strings.Contains(msg, s) {
					t.Errorf("message %q names %q", msg, s)
				}
			}
		})
	}
}

func TestWantOf_RoundTripsThroughStatusToTheSecond(t *testing.T) {
	since := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	w := served.Want{Serial: 4294967295, Since: since, ServedAt: since.Add(3 * time.Second), Slowest: "127.0.0.22:53"}
	e := entryOf("ns/z", "a.test", w)
	if got := wantOf(e); got != w {
		t.Fatalf("wantOf(entryOf(w)) = %+v, want %+v", got, w)
	}
	if e.Serial != 4294967295 {
		t.Fatalf("serial %d, want the uint32's 4294967295", e.Serial)
	}
	if w := wantOf(entryOf("ns/z", "a.test", served.Want{Serial: 1, Since: since})); !w.ServedAt.IsZero() {
		t.Fatalf("a want not served came back served at %s", w.ServedAt)
	}
}
