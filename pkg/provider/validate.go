package provider

import "fmt"

// SideCheck checks one side of a change before anything is written: which is "Before" or
// "After", rs is never nil. It returns the side in the provider's canonical form, or an error
// wrapping ErrInvalidChange or ErrNotCapable. ValidateChangeSet is the common part of every
// provider's check.
type SideCheck func(action Action, which string, rs RecordSet) (RecordSet, error)

// ValidateChanges checks every change by its Action, the rule every provider shares (see Change
// and Action): a Create needs After, a Delete needs Before, an Update needs both with one key
// (RecordSetKey: name, type and set identifier), and any other action is unknown. check is
// called on each side present, Before first. It returns new Changes holding the sides check
// returned and each change's Shared, in the input's order, or the first error, wrapping
// ErrInvalidChange (a missing side, an Update that changes its key, an unknown action) or
// check's, prefixed "change i: " with i the change's index in changes.
func ValidateChanges(changes []Change, check SideCheck) ([]Change, error) {
	out := make([]Change, 0, len(changes))
	for i, ch := range changes {
		c, err := validateChange(ch, check)
		if err != nil {
			return nil, fmt.Errorf("change %d: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// validateChange is ValidateChanges for one change.
func validateChange(ch Change, check SideCheck) (Change, error) {
	side := func(which string, rs *RecordSet) (*RecordSet, error) {
		if rs == nil {
			return nil, fmt.Errorf("%w: %s change without %s", ErrInvalidChange, ch.Action, which)
		}
		c, err := check(ch.Action, which, *rs)
		if err != nil {
			return nil, err
		}
		return &c, nil
	}
	out := Change{Action: ch.Action, Shared: ch.Shared}
	var err error
	switch ch.Action {
	case ActionCreate:
		out.After, err = side("After", ch.After)
	case ActionDelete:
		out.Before, err = side("Before", ch.Before)
	case ActionUpdate:
		if out.Before, err = side("Before", ch.Before); err != nil {
			return Change{}, err
		}
		if out.After, err = side("After", ch.After); err == nil && out.Before.Key() != out.After.Key() {
			err = fmt.Errorf("%w: update must keep the key: %s -> %s", ErrInvalidChange, out.Before.Key(), out.After.Key())
		}
	default:
		err = fmt.Errorf("%w: unknown action %q", ErrInvalidChange, ch.Action)
	}
	if err != nil {
		return Change{}, err
	}
	return out, nil
}
