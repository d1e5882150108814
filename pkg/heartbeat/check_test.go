package heartbeat_test

import (
	"slices"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/heartbeat"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

var t0 = time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)

func entry(owner, resource, name, typ string, hb time.Time) registry.Entry {
	return registry.Entry{OwnerID: owner, Resource: resource, Name: name, Type: typ, TTL: 60, Targets: []string{"192.0.2.1"}, Heartbeat: hb}
}

func TestCheck(t *testing.T) {
	const root = "app.shared.test"
	const thr = 10 * time.Second
	res := "DNSRecord/apps/app"
	for _, tc := range []struct {
		name    string
		entries []registry.Entry
		rootArg string
		now     time.Time
		want    []heartbeat.Owner
	}{
		{name: "no entries: no owners", now: t0, want: []heartbeat.Owner{}},
		{
			name:    "fresh heartbeat is healthy",
			entries: []registry.Entry{entry("a", res, root, "A", t0)},
			now:     t0.Add(2 * time.Second),
			want:    []heartbeat.Owner{{OwnerID: "a", Resource: res, LastHeartbeat: t0, Healthy: true}},
		},
		{
			name:    "age equal to the threshold is healthy (inclusive boundary)",
			entries: []registry.Entry{entry("a", res, root, "A", t0)},
			now:     t0.Add(thr),
			want:    []heartbeat.Owner{{OwnerID: "a", Resource: res, LastHeartbeat: t0, Healthy: true}},
		},
		{
			name:    "one nanosecond past the threshold is failing",
			entries: []registry.Entry{entry("a", res, root, "A", t0)},
			now:     t0.Add(thr + time.Nanosecond),
			want:    []heartbeat.Owner{{OwnerID: "a", Resource: res, LastHeartbeat: t0, Healthy: false}},
		},
		{
			name:    "no heartbeat is failing, with a zero LastHeartbeat",
			entries: []registry.Entry{entry("a", res, root, "A", time.Time{})},
			now:     t0,
			want:    []heartbeat.Owner{{OwnerID: "a", Resource: res}},
		},
		{
			name:    "a heartbeat in the future (clock skew) is healthy",
			entries: []registry.Entry{entry("a", res, root, "A", t0.Add(time.Hour))},
			now:     t0,
			want:    []heartbeat.Owner{{OwnerID: "a", Resource: res, LastHeartbeat: t0.Add(time.Hour), Healthy: true}},
		},
		{
			name: "newest heartbeat over a contributor's entries at rootHost counts",
			entries: []registry.Entry{
				entry("a", res, root, "A", t0.Add(-time.Hour)),
				entry("a", res, root, "AAAA", t0),
				entry("a", res, root, "TXT", time.Time{}),
			},
			now:  t0.Add(5 * time.Second),
			want: []heartbeat.Owner{{OwnerID: "a", Resource: res, LastHeartbeat: t0, Healthy: true}},
		},
		{
			name: "entries at other names are ignored, including below rootHost",
			entries: []registry.Entry{
				entry("a", res, root, "A", t0),
				entry("b", res, "www."+root, "A", time.Time{}),
				entry("c", res, "other.shared.test", "A", time.Time{}),
			},
			now:  t0,
			want: []heartbeat.Owner{{OwnerID: "a", Resource: res, LastHeartbeat: t0, Healthy: true}},
		},
		{
			name:    "rootHost is canonicalised",
			entries: []registry.Entry{entry("a", res, root, "A", t0)},
			rootArg: "App.Shared.Test.",
			now:     t0,
			want:    []heartbeat.Owner{{OwnerID: "a", Resource: res, LastHeartbeat: t0, Healthy: true}},
		},
		{
			name: "owners sorted by owner ID then resource; same owner ID, two objects: two owners",
			entries: []registry.Entry{
				entry("cluster-b", "DNSRecord/team-x/app", root, "A", t0.Add(-time.Minute)),
				entry("cluster-a", res, root, "A", t0),
				entry("cluster-b", "DNSRecord/apps/app", root, "A", t0),
			},
			now: t0.Add(time.Second),
			want: []heartbeat.Owner{
				{OwnerID: "cluster-a", Resource: res, LastHeartbeat: t0, Healthy: true},
				{OwnerID: "cluster-b", Resource: "DNSRecord/apps/app", LastHeartbeat: t0, Healthy: true},
				{OwnerID: "cluster-b", Resource: "DNSRecord/team-x/app", LastHeartbeat: t0.Add(-time.Minute), Healthy: false},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rootArg := tc.rootArg
			if rootArg == "" {
				rootArg = root
			}
			got := heartbeat.Check(tc.entries, rootArg, tc.now, thr)
			if !slices.EqualFunc(got, tc.want, func(a, b heartbeat.Owner) bool {
				return a.OwnerID == b.OwnerID && a.Resource == b.Resource && a.LastHeartbeat.Equal(b.LastHeartbeat) && a.Healthy == b.Healthy
			}) {
				t.Fatalf("Check =\n  %+v\nwant\n  %+v", got, tc.want)
			}
		})
	}
}

func TestFailingMessage(t *testing.T) {
	res := "DNSRecord/apps/app"
	now := t0.Add(42 * time.Second)
	for _, tc := range []struct {
		name   string
		owners []heartbeat.Owner
		want   string
	}{
		{"no owners", nil, ""},
		{"all healthy", []heartbeat.Owner{{OwnerID: "a", Resource: res, LastHeartbeat: t0, Healthy: true}}, ""},
		{"stale owner with time and age", []heartbeat.Owner{
			{OwnerID: "cluster-a", Resource: res, LastHeartbeat: now, Healthy: true},
			{OwnerID: "cluster-b", Resource: res, LastHeartbeat: t0},
		}, "owner cluster-b (DNSRecord/apps/app) last heartbeat 2026-11-30T01:00:00Z, 42s ago"},
		{"never", []heartbeat.Owner{{OwnerID: "x", Resource: res}}, "owner x (DNSRecord/apps/app) never"},
		{"several, in the owners' order", []heartbeat.Owner{
			{OwnerID: "cluster-b", Resource: res, LastHeartbeat: t0},
			{OwnerID: "x", Resource: "DNSRecord/other/app"},
		}, "owner cluster-b (DNSRecord/apps/app) last heartbeat 2026-11-30T01:00:00Z, 42s ago; owner x (DNSRecord/other/app) never"},
		{"age truncated to seconds, in minutes past 60s", []heartbeat.Owner{
			{OwnerID: "b", Resource: res, LastHeartbeat: now.Add(-5*time.Minute - 12*time.Second - 900*time.Millisecond)},
		}, "owner b (DNSRecord/apps/app) last heartbeat 2026-11-30T00:55:29Z, 5m12s ago"},
		{"a non-UTC time is printed in UTC", []heartbeat.Owner{
			{OwnerID: "b", Resource: res, LastHeartbeat: t0.In(time.FixedZone("X", 3600))},
		}, "owner b (DNSRecord/apps/app) last heartbeat 2026-11-30T01:00:00Z, 42s ago"},
		{"a failing owner with a future heartbeat shows 0s", []heartbeat.Owner{
			{OwnerID: "b", Resource: res, LastHeartbeat: now.Add(time.Hour)},
		}, "owner b (DNSRecord/apps/app) last heartbeat 2026-11-30T02:00:42Z, 0s ago"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := heartbeat.FailingMessage(tc.owners, now); got != tc.want {
				t.Fatalf("FailingMessage =\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}

func TestEntriesAt_SelectsRootHostAndKind(t *testing.T) {
	const zone = "shared.test"
	var sets []provider.RecordSet
	add := func(e registry.Entry) { sets = append(sets, registry.RecordSet(zone, e)) }
	add(entry("a", "DNSRecord/apps/app", "app.shared.test", "A", t0))
	add(entry("a", "DNSRecord/apps/app", "app.shared.test", "AAAA", t0))
	add(entry("b", "DNSRecord/apps/app", "app.shared.test", "A", time.Time{}))
	add(entry("c", "DNSEndpoint/apps/app", "app.shared.test", "TXT", time.Time{}))
	add(entry("d", "DNSRecord/apps/www", "www.app.shared.test", "A", t0))
	ix := registry.NewIndex(zone, sets)

	got := heartbeat.EntriesAt(ix, "APP.shared.test.", "DNSRecord")
	var ids []string
	for _, e := range got {
		ids = append(ids, e.OwnerID+"/"+e.Type)
	}
	if want := []string{"a/A", "b/A", "a/AAAA"}; !slices.Equal(ids, want) {
		t.Fatalf("EntriesAt(DNSRecord) = %q, want %q", ids, want)
	}
	if n := len(heartbeat.EntriesAt(ix, "app.shared.test", "")); n != 4 {
		t.Fatalf("EntriesAt(every kind) has %d entries, want 4", n)
	}
	if got := heartbeat.EntriesAt(nil, "app.shared.test", ""); got != nil {
		t.Fatalf("EntriesAt(nil index) = %v", got)
	}
}
