package zoneview_test

import (
	"slices"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
	"github.com/dnsplane/dnsplane/pkg/zoneview"
)

func TestNew_IndexesManagedSetsRegistryRecordsAndCuts(t *testing.T) {
	const zone = "example.test"
	e := registry.Entry{OwnerID: "o1", Resource: "DNSEndpoint/ns/app", Name: "www.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	reg := registry.RecordSet(zone, e)
	www := provider.RecordSet{Name: "www.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	cut := provider.RecordSet{Name: "child.example.test", Type: "NS", TTL: 60, Targets: []string{"ns1.child.example.test"}}
	apexNS := provider.RecordSet{Name: "example.test", Type: "NS", TTL: 60, Targets: []string{"ns1.example.test"}}
	dup := provider.RecordSet{Name: "www.example.test", Type: "A", TTL: 5, Targets: []string{"192.0.2.9"}}
	s := zoneview.New("Example.Test.", []provider.RecordSet{www, reg, cut, apexNS, dup})

	if s.Zone() != zone {
		t.Errorf("Zone() = %q, want %q", s.Zone(), zone)
	}
	for _, tc := range []struct {
		key               provider.RecordSetKey
		managed, listed   bool
		wantTTLWhenListed int64
	}{
		{www.Key(), true, true, 60}, // the first of two sets at one key wins
		{reg.Key(), false, true, reg.TTL},
		{cut.Key(), true, true, 60},
		{provider.RecordSetKey{Name: "none.example.test", Type: "A"}, false, false, 0},
	} {
		if _, ok := s.Managed(tc.key); ok != tc.managed {
			t.Errorf("Managed(%s) ok = %v, want %v", tc.key, ok, tc.managed)
		}
		rs, ok := s.Lookup(tc.key)
		if ok != tc.listed || (ok && rs.TTL != tc.wantTTLWhenListed) {
			t.Errorf("Lookup(%s) = %v, %v; want listed %v with TTL %d", tc.key, rs, ok, tc.listed, tc.wantTTLWhenListed)
		}
	}
	if got, want := s.Cuts(), []string{"child.example.test"}; !slices.Equal(got, want) {
		t.Errorf("Cuts() = %v, want %v (the apex NS is no cut)", got, want)
	}
	// The managed set and the registry entry for it share one key at the managed name.
	if got, want := s.KeysAt("www.example.test"), []provider.RecordSetKey{www.Key()}; !slices.Equal(got, want) {
		t.Errorf("KeysAt(www) = %v, want %v", got, want)
	}
	if got := s.Index().Entries(www.Key()); len(got) != 1 || got[0].OwnerID != "o1" {
		t.Errorf("Index().Entries(www) = %v, want the one entry of o1", got)
	}
}
