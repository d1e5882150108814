package heartbeat

import (
	"slices"
	"time"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// Stamp returns changes with self's registry records at rootHost carrying heartbeat now
// (registry.WithHeartbeat: whole seconds): a successful write of a contributor's records is a
// heartbeat (API contract: "a heartbeat means this contributor is alive and its records are in
// sync"), so that a new contributor is healthy from its first write, and a registry record a
// self-heal writes carries its heartbeat in that same change. Only Creates and Updates whose
// After is a single-valued TXT set at a registry name (registry.IsRegistryName) holding an entry
// of self for rootHost (canonicalised) are stamped; Before is kept as it is (the write's
// precondition). Other changes are returned unchanged, and the input is not modified.
func Stamp(changes []provider.Change, self registry.Contributor, rootHost string, now time.Time) []provider.Change {
	rootHost = dnswire.Dotless(rootHost)
	out, cloned := changes, false
	for i, c := range changes {
		if c.After == nil || c.After.Type != "TXT" || !registry.IsRegistryName(c.After.Name) || len(c.After.Targets) != 1 {
			continue
		}
		e, err := registry.Parse(c.After.Targets[0])
		if err != nil || e.Contributor() != self || e.Name != rootHost {
			continue
		}
		if !cloned {
			out, cloned = slices.Clone(changes), true
		}
		after := c.After.Clone()
		after.Targets = []string{registry.WithHeartbeat(e, now).Encode()}
		out[i].After = &after
	}
	return out
}
