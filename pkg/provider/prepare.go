package provider

import "fmt"

// PrepareChanges is the opening of ApplyChanges in the providers that turn each change into a
// write of their own (local, pdns, rfc2136): it validates changes (ValidateChanges with check),
// then converts each canonical change with prepare, in order. It returns the prepared changes,
// empty for no changes, or the first error, wrapped "apply changes to <zone>: " (ValidateChanges'
// error, which names the change) or "apply changes to <zone>: change i: " (prepare's, i the
// change's index in changes); zone is how the caller names the zone in its errors.
func PrepareChanges[P any](zone string, changes []Change, check SideCheck, prepare func(Change) (P, error)) ([]P, error) {
	canon, err := ValidateChanges(changes, check)
	if err != nil {
		return nil, fmt.Errorf("apply changes to %s: %w", zone, err)
	}
	out := make([]P, 0, len(canon))
	for i, ch := range canon {
		p, err := prepare(ch)
		if err != nil {
			return nil, fmt.Errorf("apply changes to %s: change %d: %w", zone, i, err)
		}
		out = append(out, p)
	}
	return out, nil
}
