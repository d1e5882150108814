package heartbeat_test

import (
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/heartbeat"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

var (
	stampNow  = time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	stampSelf = registry.Contributor{OwnerID: "cluster-a", Resource: "DNSRecord/apps/app"}
	stampPeer = registry.Contributor{OwnerID: "cluster-b", Resource: "DNSRecord/apps/app"}
)

func stampChange(action provider.Action, e registry.Entry) provider.Change {
	rs := registry.RecordSet("example.test", e)
	switch action {
	case provider.ActionDelete:
		return provider.Change{Action: action, Before: &rs}
	case provider.ActionUpdate:
		before := rs.Clone()
		return provider.Change{Action: action, Before: &before, After: &rs}
	}
	return provider.Change{Action: action, After: &rs}
}

func stampEntry(c registry.Contributor, name, typ string) registry.Entry {
	return registry.Entry{OwnerID: c.OwnerID, Resource: c.Resource, Name: name, Type: typ, TTL: 60, Targets: []string{"192.0.2.1"}}
}

func stampedAt(t *testing.T, c provider.Change) time.Time {
	t.Helper()
	e, err := registry.Parse(c.After.Targets[0])
	if err != nil {
		t.Fatal(err)
	}
	return e.Heartbeat
}

func TestStamp_OnlyOwnRegistryWritesAtRootHostGetTheHeartbeat(t *testing.T) {
	a := provider.RecordSet{Name: "app.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	cases := []struct {
		name    string
		change  provider.Change
		stamped bool
	}{
		{"own registry create at rootHost", stampChange(provider.ActionCreate, stampEntry(stampSelf, "app.example.test", "A")), true},
		{"own registry update at rootHost", stampChange(provider.ActionUpdate, stampEntry(stampSelf, "app.example.test", "AAAA")), true},
		{"own registry below rootHost", stampChange(provider.ActionCreate, stampEntry(stampSelf, "www.app.example.test", "A")), false},
		{"stampPeer registry at rootHost", stampChange(provider.ActionCreate, stampEntry(stampPeer, "app.example.test", "A")), false},
		{"own registry delete", stampChange(provider.ActionDelete, stampEntry(stampSelf, "app.example.test", "A")), false},
		{"the record set itstampSelf", provider.Change{Action: provider.ActionCreate, After: &a}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := []provider.Change{tc.change}
			var before string
			if tc.change.After != nil {
				before = tc.change.After.Targets[0]
			}
			out := heartbeat.Stamp(in, stampSelf, "App.Example.Test.", stampNow)
			if tc.change.After != nil && in[0].After.Targets[0] != before {
				t.Fatal("the input was modified")
			}
			if !tc.stamped {
				if out[0].After != tc.change.After {
					t.Fatalf("changed: %v", out[0].After)
				}
				return
			}
			if got := stampedAt(t, out[0]); !got.Equal(stampNow) {
				t.Fatalf("heartbeat %v, want %v", got, stampNow)
			}
			if out[0].Before != tc.change.Before {
				t.Fatal("Before must stay the exact current set (the write's precondition)")
			}
		})
	}
}
