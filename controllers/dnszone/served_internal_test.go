package dnszone

import (
	"strings"
	"testing"
	"time"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/served"
)

func TestZoneServedCondition_EveryViewStatus(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	st := func(server string, serial uint32, err string, behind time.Time) served.ServerState {
		return served.ServerState{Server: server, Reading: served.Reading{Serial: serial, At: t0, Err: err}, BehindSince: behind}
	}
	p, lag, dead := st("p:53", 9, "", time.Time{}), st("a:53", 7, "", t0), st("b:53", 0, "query z SOA at b:53: connection refused", time.Time{})
	cases := []struct {
		name   string
		v      served.ZoneView
		ok     bool
		reason string
		has    []string
	}{
		{"every server follows", served.ZoneView{Status: served.StatusServed, Servers: []served.ServerState{p, p}}, true, dnsv1.ReasonServed, []string{"2 asked"}},
		{"one behind within the deadline still follows", served.ZoneView{Status: served.StatusPropagating, Servers: []served.ServerState{p, lag}, Named: []served.ServerState{lag}}, true, dnsv1.ReasonServed, nil},
		{"stale", served.ZoneView{Status: served.StatusStale, Servers: []served.ServerState{p, lag}, Named: []served.ServerState{lag}}, false, dnsv1.ReasonStale,
			[]string{"a:53 answers serial 7, behind since 2026-12-04T12:00:00Z"}},
		{"stale, a secondary ahead of its primary", served.ZoneView{Status: served.StatusStale, Servers: []served.ServerState{p, st("c:53", 12, "", t0)}, Named: []served.ServerState{st("c:53", 12, "", t0)}}, false, dnsv1.ReasonStale,
			[]string{"c:53 answers serial 12, ahead of the primary's 9: it serves the zone from elsewhere, since 2026-12-04T12:00:00Z"}},
		{"unreachable, the error not repeating the server", served.ZoneView{Status: served.StatusUnreachable, Servers: []served.ServerState{p, dead}, Named: []served.ServerState{dead}}, false, dnsv1.ReasonUnreachable,
			[]string{"no SOA answer: query z SOA at b:53: connection refused"}},
		{"not asked", served.ZoneView{}, false, dnsv1.ReasonNotChecked, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, reason, msg := zoneServedCondition(c.v)
			if ok != c.ok || reason != c.reason {
				t.Fatalf("= %t %s (%q), want %t %s", ok, reason, msg, c.ok, c.reason)
			}
			for _, h := range c.has {
				if !strings.Contains(msg, h) {
					t.Errorf("message %q lacks %q", msg, h)
				}
			}
		})
	}
	if s := zoneServers(served.ZoneView{Servers: []served.ServerState{p, lag, dead}}); s[0].Serial != nil || s[1].Serial == nil || *s[1].Serial != 7 || s[1].BehindSince == nil || s[2].Serial != nil || s[2].Error == "" {
		t.Fatalf("zoneServers = %+v", s)
	}
}
