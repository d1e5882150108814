package plan

import (
	"fmt"
	"slices"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// ExternalDNS is what the planner knows of an external-dns TXT registry in the zone (the
// manager's --txt-prefix, --txt-suffix, --txt-wildcard-replacement and
// --adopt-external-dns-owner; docs/migrating-from-external-dns.md).
type ExternalDNS struct {
	// Naming is how external-dns names its registry records (registry.ExternalNaming); the zero
	// value is external-dns' default.
	Naming registry.ExternalNaming
	// AdoptOwner is the external-dns --txt-owner-id whose record sets Self takes over; "" takes
	// over none. A desired key whose only registry records are external-dns records of this
	// owner is written as if it were free: Self's registry record first (the claim group), then
	// the set only if it differs (an in-place Update, never a Delete and Create, so the set is
	// never absent and holds either external-dns' value or Self's), and the external-dns TXT
	// records last (the release group). Records of any other owner stay a conflict.
	AdoptOwner string
}

// adoptable reports whether every external-dns claim in ext is AdoptOwner's (and there is one).
func (p *planner) adoptable(ext []registry.ExternalRecord) bool {
	owner := p.in.ExternalDNS.AdoptOwner
	if owner == "" || len(ext) == 0 {
		return false
	}
	for _, r := range ext {
		for _, c := range r.Claims {
			if c.Owner != owner {
				return false
			}
		}
	}
	return true
}

// foreignClaim returns the first claim of ext whose owner is not adopt (else the first claim),
// for a conflict message.
func foreignClaim(ext []registry.ExternalRecord, adopt string) registry.ExternalClaim {
	for _, r := range ext {
		for _, c := range r.Claims {
			if adopt == "" || c.Owner != adopt {
				return c
			}
		}
	}
	return ext[0].Claims[0]
}

// doubleClaim judges a key that dnsplane's registry lets Self write (a desired one) or release
// (one Self holds and no longer desires), against the external-dns records that claim it too:
// none is no conflict; the adopted owner's only is a takeover left half done, whose external-dns
// records are removed now; any other owner's is a double claim (ReasonDoubleClaim), and nothing
// is written for the key: two controllers would fight over the set, and a release would delete
// a set that owner still wants.
func (p *planner) doubleClaim(k provider.RecordSetKey, ext []registry.ExternalRecord) (reason, msg string) {
	if len(ext) == 0 {
		return "", ""
	}
	if p.adoptable(ext) {
		p.adopt[k] = ext
		return "", ""
	}
	c := foreignClaim(ext, p.in.ExternalDNS.AdoptOwner)
	return ReasonDoubleClaim, fmt.Sprintf("%s is claimed twice: dnsplane's registry holds it, and so does external-dns %s at %s",
		k, c, c.RecordName)
}

// adoptChanges returns the removal of the adopted owner's external-dns records for the decided
// key k, in the release group: a Delete of each record set, or an Update keeping the values that
// are not external-dns registry values. A legacy (typeless) record, which claims every type at
// its name, is removed only when every other set at the name is Self's desire or dnsplane's
// already. done holds the record names already planned (two keys may share a legacy record).
func (p *planner) adoptChanges(k provider.RecordSetKey, done map[string]bool) []planned {
	var out []planned
	for _, r := range p.adopt[k] {
		if done[r.Set.Name] || (r.Legacy && !p.legacyFree(k)) {
			continue
		}
		done[r.Set.Name] = true
		before := r.Set.Clone()
		ch := provider.Change{Action: provider.ActionDelete, Before: &before}
		if r.Other > 0 {
			after := r.Set.Clone()
			after.Targets = slices.DeleteFunc(after.Targets, func(v string) bool {
				_, ok := registry.ParseExternalValue(v)
				return ok
			})
			ch = provider.Change{Action: provider.ActionUpdate, Before: &before, After: &after}
		}
		// A record-set change of the plan (status.plan shows it, so a DryRun previews the takeover).
		out = append(out, planned{group: groupRelease, key: k, regName: r.Set.Name, change: ch, isRecord: true})
	}
	return out
}

// legacyFree reports whether every set at k's name other than k and the TXT sets is desired by
// Self or held by a dnsplane registry record, so that a legacy external-dns record there claims
// nothing external-dns still needs.
// (With an affix the legacy record is elsewhere; it still claims every type at k.Name.)
func (p *planner) legacyFree(k provider.RecordSetKey) bool {
	for _, o := range p.snap.KeysAt(k.Name) {
		if o == k || o.Type == "TXT" {
			continue
		}
		if _, want := p.desired[o]; want {
			continue
		}
		if len(p.ix.Entries(o)) > 0 {
			continue
		}
		return false
	}
	return true
}
