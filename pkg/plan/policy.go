package plan

import (
	"fmt"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Policy is external-dns' --policy, with its values: which record-set changes may be written.
type Policy string

const (
	// PolicySync writes every change: creates, updates and deletes (the default, "" too).
	PolicySync Policy = "sync"
	// PolicyUpsertOnly never deletes a record set: a set Self no longer desires, or holds when
	// it is deleted, stays as it is, with Self's registry record.
	PolicyUpsertOnly Policy = "upsert-only"
	// PolicyCreateOnly only creates record sets: an existing set is never updated or deleted,
	// and Self's registry record for it stays as it is (a takeover writes a claim with the set's
	// current TTL and targets).
	PolicyCreateOnly Policy = "create-only"
)

// ParsePolicy returns the Policy that s names ("sync", "upsert-only" or "create-only"); "" is
// PolicySync. Errors name the accepted values.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case "":
		return PolicySync, nil
	case PolicySync, PolicyUpsertOnly, PolicyCreateOnly:
		return p, nil
	}
	return "", fmt.Errorf("unknown policy %q: want sync, upsert-only or create-only", s)
}

// applyPolicy keeps k's current set when the decided change is one Input.Policy does not
// write, records the withheld change in p.skipped (p.kept for a release) and freezes k, so that
// its registry records stay as they are (registryChanges).
func (p *planner) applyPolicy(k provider.RecordSetKey) {
	pol := p.in.Policy
	if pol == "" || pol == PolicySync {
		return
	}
	cur, exists := p.snap.Managed(k)
	if !exists {
		return // creating is always allowed
	}
	ch, changed := diff(p.snap, k, p.after[k])
	switch {
	case !changed:
		return
	case ch.Action == provider.ActionDelete:
	case ch.Action == provider.ActionUpdate && pol == PolicyCreateOnly:
	default:
		return
	}
	c := cur.Clone()
	p.after[k] = &c
	p.frozen[k] = true
	p.skipped = append(p.skipped, ch)
	if p.in.Release {
		p.kept = append(p.kept, Conflict{Key: k, Reason: ReasonOwnershipConflict,
			Message: fmt.Sprintf("policy %s never deletes a record set; the registry record stays", pol)})
	}
}
