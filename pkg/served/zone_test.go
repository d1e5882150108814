package served_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
	"github.com/dnsplane/dnsplane/pkg/served"
)

func TestJudgeZone_EveryOutcome(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	servers := []string{"p:53", "a:53", "b:53"}
	ok := func(serial uint32) served.Reading { return served.Reading{Serial: serial, At: t0} }
	failed := served.Reading{At: t0, Err: "connection refused"}
	cases := []struct {
		name     string
		readings map[string]served.Reading
		behind   map[string]time.Time
		now      time.Duration
		status   served.Status
		named    []string
	}{
		{"primary never read", map[string]served.Reading{"a:53": ok(5)}, nil, 0, "", nil},
		{"all in step", map[string]served.Reading{"p:53": ok(5), "a:53": ok(5), "b:53": ok(5)}, nil, 0, served.StatusServed, nil},
		{"one behind, in time", map[string]served.Reading{"p:53": ok(6), "a:53": ok(5), "b:53": ok(6)}, map[string]time.Time{"a:53": t0}, time.Minute, served.StatusPropagating, []string{"a:53"}},
		{"one behind, past the deadline", map[string]served.Reading{"p:53": ok(6), "a:53": ok(5), "b:53": ok(6)}, map[string]time.Time{"a:53": t0}, 5 * time.Minute, served.StatusStale, []string{"a:53"}},
		{"one failing outranks one stale", map[string]served.Reading{"p:53": ok(6), "a:53": ok(5), "b:53": failed}, map[string]time.Time{"a:53": t0}, time.Hour, served.StatusUnreachable, []string{"b:53"}},
		{"the primary failing", map[string]served.Reading{"p:53": failed, "a:53": ok(5), "b:53": ok(5)}, nil, 0, served.StatusUnreachable, []string{"p:53"}},
		{"one never asked is not named", map[string]served.Reading{"p:53": ok(5), "a:53": ok(5)}, nil, 0, served.StatusServed, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := served.JudgeZone(servers, c.readings, c.behind, t0.Add(c.now), 5*time.Minute)
			if v.Status != c.status {
				t.Fatalf("status %q, want %q (%+v)", v.Status, c.status, v)
			}
			if named := serverNames(v.Named, func(n served.ServerState) string { return n.Server }); named != strings.Join(c.named, ",") {
				t.Fatalf("named %v, want %v", named, c.named)
			}
			if c.status != "" && len(v.Servers) != len(servers) {
				t.Fatalf("%d servers in the view, want %d", len(v.Servers), len(servers))
			}
		})
	}
}

// zoneTracker starts a Tracker of DNSZones with opts until the test ends and returns it, its
// context and the zone a/z of zoneName served by primary and second.
func zoneTracker(t *testing.T, opts served.Options, primary, second server) (*served.Tracker, context.Context, served.Zone) {
	t.Helper()
	tr := served.New(opts, served.KindDNSZone)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = tr.Start(ctx) }()
	return tr, ctx, served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "z"}, Name: zoneName, Servers: []string{primary.addr, second.addr}}
}

func TestTracker_CheckZoneNamesAServerThatStopsAnsweringAndNotifiesTheDNSZone(t *testing.T) {
	primary, second := newServer(t), newServer(t)
	opts := served.Options{DNS: dnsclient.Client{Timeout: 200 * time.Millisecond}, FirstCheck: 10 * time.Millisecond, Interval: 50 * time.Millisecond, StaleAfter: time.Second}
	tr, ctx, zone := zoneTracker(t, opts, primary, second)
	key := zone.Key
	// Both created at the same moment: the second may start a serial behind; bring it level.
	info, _ := primary.store.Zone(zoneName)
	second.catchUp(t, info.Serial)
	if v := tr.CheckZone(ctx, zone); v.Status != served.StatusServed {
		t.Fatalf("view %+v, want Served", v)
	}
	// The secondary falls behind: Propagating, which is no news for the DNSZone.
	primary.put(t, "x.served.test", "192.0.2.9")
	v := tr.CheckZone(ctx, zone)
	if v.Status != served.StatusPropagating || v.Named[0].Server != second.addr || v.Named[0].BehindSince.IsZero() {
		t.Fatalf("view %+v, want Propagating naming %s with its time", v, second.addr)
	}
	// Another zone whose secondary is dead: Unreachable, named with its error.
	dead := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "dead"}, Name: zoneName, Servers: []string{primary.addr, ports.Dead(t)}}
	v = tr.CheckZone(ctx, dead)
	if v.Status != served.StatusUnreachable || v.Named[0].Server != dead.Servers[1] || v.Named[0].Reading.Err == "" {
		t.Fatalf("view %+v, want Unreachable naming %s", v, dead.Servers[1])
	}
	select {
	case k := <-tr.Events(served.KindDNSZone):
		t.Fatalf("notice for %s from CheckZone's own answers, want none (the caller has the view)", k)
	default:
	}
	// A change waits in the first zone, so its checks go on; past the deadline the secondary
	// is Stale, and the DNSZone is told.
	ref := served.Ref{Kind: "DNSEndpoint", Key: types.NamespacedName{Namespace: "a", Name: "one"}}
	if _, err := tr.Written(ctx, zone, ref, time.Time{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case k := <-tr.Events(served.KindDNSZone):
		if k != key {
			t.Fatalf("notice for %s, want %s", k, key)
		}
	case <-time.After(time.Minute):
		t.Fatal("no DNSZone notice within a minute")
	}
	if v, _ := tr.View(key); v.Status != served.StatusStale || v.Named[0].Server != second.addr {
		t.Fatalf("view %+v, want Stale naming %s", v, second.addr)
	}
}

func TestTracker_AServerSeenBehindIsAskedAgainUntilItFollows(t *testing.T) {
	primary, second := newServer(t), newServer(t)
	opts := served.Options{DNS: dnsclient.Client{Timeout: 200 * time.Millisecond}, FirstCheck: 10 * time.Millisecond, Interval: 50 * time.Millisecond}
	tr, ctx, zone := zoneTracker(t, opts, primary, second)
	key := zone.Key
	serial := primary.put(t, "x.served.test", "192.0.2.9")
	if v := tr.CheckZone(ctx, zone); v.Status != served.StatusPropagating {
		t.Fatalf("view %+v, want Propagating", v)
	}
	// The secondary transfers; no object wrote anything, and the zone's own follow-up sees it.
	second.catchUp(t, serial)
	testrun.Eventually(t, time.Minute, "the secondary follows again", func() error {
		if v, _ := tr.View(key); v.Status != served.StatusServed || !v.Servers[1].BehindSince.IsZero() {
			return fmt.Errorf("view %+v", v)
		}
		return nil
	})
}
