package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// guardCuts applies the guest rule of Input.Guest (docs/api.md, "Tenancy"): an NS set at a name
// strictly below the apex is a zone cut, and a resolver is referred away for every name at or
// below it (RFC 1034 §4.2.1), so a delegation would hide the names there. A desired NS set whose
// cut would hide a name held outside Self's namespace (a record set without a dnsplane registry
// record, or one a contributor of another namespace claims) is an OwnershipConflict naming
// those names, and so is every other set Self desires at or below that cut (its glue, its DS):
// nothing of that delegation is written, and what Self holds there stays as it is. The NS and
// DS sets at the cut itself are not counted: they are the delegation's own, and a set there
// held by another is ownership's conflict already.
func (p *planner) guardCuts() {
	if !p.in.Guest || p.in.Release {
		return
	}
	ns := namespaceOf(p.in.Self.Resource)
	var cuts []provider.RecordSetKey
	for k := range p.desired {
		if k.Type == "NS" && dnswire.IsStrictSubdomain(k.Name, p.zone) {
			cuts = append(cuts, k)
		}
	}
	slices.SortFunc(cuts, compareKeys)
	for _, cut := range cuts {
		hidden := p.hiddenBy(cut.Name, ns)
		if len(hidden) == 0 {
			continue
		}
		p.conflict(cut, ReasonOwnershipConflict, fmt.Sprintf("%s: a delegation at %s would hide names held outside namespace %s: %s",
			cut, cut.Name, ns, strings.Join(hidden, ", ")))
		for k := range p.desired {
			if k != cut && dnswire.IsSubdomain(k.Name, cut.Name) {
				p.conflict(k, ReasonOwnershipConflict, fmt.Sprintf("%s: below the refused delegation at %s", k, cut.Name))
			}
		}
	}
}

// hiddenBy lists, sorted, the names at or below cut that a delegation there would hide from
// Self's namespace ns: each set (other than the NS and DS sets at cut) without a dnsplane
// registry record, or claimed by a contributor of another namespace, with who holds it.
func (p *planner) hiddenBy(cut, ns string) []string {
	var out []string
	for _, k := range p.snap.Keys() {
		if !dnswire.IsSubdomain(k.Name, cut) || (k.Name == cut && (k.Type == "NS" || k.Type == "DS")) {
			continue
		}
		entries := p.ix.Entries(k)
		if len(entries) == 0 {
			if _, exists := p.snap.Managed(k); exists {
				out = append(out, fmt.Sprintf("%s (no registry record)", k))
			}
			continue
		}
		for _, e := range entries {
			if namespaceOf(e.Resource) != ns {
				out = append(out, fmt.Sprintf("%s (owner %s resource %s)", k, e.OwnerID, e.Resource))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// namespaceOf returns the namespace of a contributor resource "kind/namespace/name"
// (registry.Resource), or "" when
// it is not one.
func namespaceOf(resource string) string {
	parts := strings.Split(resource, "/")
	if len(parts) != 3 {
		return ""
	}
	return parts[1]
}
