package plan

import (
	"encoding/hex"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

func idChanges() []provider.Change {
	w := int64(10)
	return []provider.Change{
		create(provider.RecordSet{Name: "a.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1", "192.0.2.2"}, ProviderSpecific: map[string]string{"x": "1", "y": "2"}}),
		update(set("b.example.test", "A", 60, "192.0.2.3"), provider.RecordSet{Name: "b.example.test", Type: "A", TTL: 60, SetIdentifier: "eu", Weight: &w, Targets: []string{"192.0.2.4"}}),
		del(set("c.example.test", "CNAME", 60, "lb.example.net")),
	}
}

func TestID_IsShortLowerHex(t *testing.T) {
	id := ID(idChanges(), []byte(`{"endpoints":[]}`))
	if len(id) != IDLength {
		t.Errorf("len(%q) = %d, want %d", id, len(id), IDLength)
	}
	if _, err := hex.DecodeString(id); err != nil {
		t.Errorf("ID %q is not hex: %v", id, err)
	}
}

// TestID_IsStableAcrossReleases pins one ID: a change here invalidates every
// pending DryRun approval.
func TestID_IsStableAcrossReleases(t *testing.T) {
	if got, want := ID(nil, nil), ID([]provider.Change{}, []byte{}); got != want {
		t.Errorf("nil and empty inputs differ: %s, %s", got, want)
	}
	if got, want := ID(idChanges(), []byte(`{"endpoints":[]}`)), "598a10a36c702ed0fa9e"; got != want {
		t.Errorf("ID = %s, want %s", got, want)
	}
}

func TestID_IgnoresOrderOfChangesTargetsAndOptions(t *testing.T) {
	spec := []byte("spec")
	a := idChanges()
	b := []provider.Change{a[2], a[0], a[1]}
	b[1] = create(provider.RecordSet{Name: "a.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.2", "192.0.2.1"}, ProviderSpecific: map[string]string{"y": "2", "x": "1"}})
	if ID(a, spec) != ID(b, spec) {
		t.Error("reordering changed the ID")
	}
}

func TestID_ChangesWithEveryPlannedDifferenceAndTheSpec(t *testing.T) {
	spec := []byte("spec")
	base := ID(idChanges(), spec)
	seen := map[string]string{base: "base"}
	for name, mutate := range map[string]func([]provider.Change) ([]provider.Change, []byte){
		"spec":          func(c []provider.Change) ([]provider.Change, []byte) { return c, []byte("spec2") },
		"no spec":       func(c []provider.Change) ([]provider.Change, []byte) { return c, nil },
		"fewer changes": func(c []provider.Change) ([]provider.Change, []byte) { return c[:2], spec },
		"no changes":    func(c []provider.Change) ([]provider.Change, []byte) { return nil, spec },
		"target": func(c []provider.Change) ([]provider.Change, []byte) {
			c[0].After.Targets = []string{"192.0.2.9"}
			return c, spec
		},
		"ttl": func(c []provider.Change) ([]provider.Change, []byte) { c[0].After.TTL = 61; return c, spec },
		"weight": func(c []provider.Change) ([]provider.Change, []byte) {
			w := int64(11)
			c[1].After.Weight = &w
			return c, spec
		},
		"option": func(c []provider.Change) ([]provider.Change, []byte) {
			c[0].After.ProviderSpecific["x"] = "2"
			return c, spec
		},
		"before": func(c []provider.Change) ([]provider.Change, []byte) { c[1].Before.TTL = 5; return c, spec },
		"action": func(c []provider.Change) ([]provider.Change, []byte) {
			c[2].Action = provider.ActionUpdate
			return c, spec
		},
		"set identifier": func(c []provider.Change) ([]provider.Change, []byte) { c[1].After.SetIdentifier = "us"; return c, spec },
		"spec moved into changes": func(c []provider.Change) ([]provider.Change, []byte) {
			return c, append([]byte("spec"), 0)
		},
	} {
		id := ID(mutate(idChanges()))
		if prev, dup := seen[id]; dup {
			t.Errorf("%s: same ID as %s", name, prev)
		}
		seen[id] = name
	}
}
