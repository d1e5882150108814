package provider

import (
	"errors"
	"reflect"
	"testing"
)

// TestPrepareChanges_ValidatesThenPreparesInOrder pins the opening of ApplyChanges that local,
// pdns and rfc2136 share: the side check canonicalises before prepare sees a change, prepare
// runs on each change in order, and each error names the zone and, for prepare's, the change.
func TestPrepareChanges_ValidatesThenPreparesInOrder(t *testing.T) {
	a := &RecordSet{Name: "a", Type: "a", Targets: []string{"192.0.2.1"}}
	b := &RecordSet{Name: "b", Type: "txt", Targets: []string{`"x"`}}
	bad := &RecordSet{Name: "bad", Type: "a"}
	errPrepare := errors.New("cannot build")
	// prepare names each change by its action and canonical After (else Before); it refuses b.
	prepare := func(ch Change) (string, error) {
		rs := ch.After
		if rs == nil {
			rs = ch.Before
		}
		if rs.Name == "b" {
			return "", errPrepare
		}
		return string(ch.Action) + " " + rs.Name + "/" + rs.Type, nil
	}
	for _, tc := range []struct {
		name    string
		changes []Change
		want    []string
		wantErr error  // nil: no error
		msg     string // the error's text
	}{
		{"no changes", nil, []string{}, nil, ""},
		{"each change prepared, canonical, in order", []Change{{Action: ActionCreate, After: a}, {Action: ActionDelete, Before: a}},
			[]string{"Create a/A", "Delete a/A"}, nil, ""},
		{"the side check's error, before any prepare", []Change{{Action: ActionCreate, After: b}, {Action: ActionCreate, After: bad}},
			nil, ErrNotCapable, "apply changes to zone.test: change 1: not supported by provider: After is bad"},
		{"an invalid change", []Change{{Action: ActionCreate, Before: a}},
			nil, ErrInvalidChange, "apply changes to zone.test: change 0: invalid change: Create change without After"},
		{"prepare's error names the change", []Change{{Action: ActionCreate, After: a}, {Action: ActionUpdate, Before: b, After: b}},
			nil, errPrepare, "apply changes to zone.test: change 1: cannot build"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PrepareChanges("zone.test", tc.changes, upper, prepare)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || err.Error() != tc.msg || got != nil {
					t.Fatalf("PrepareChanges = %v, %v; want nil, %v saying %q", got, err, tc.wantErr, tc.msg)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("PrepareChanges = %#v, %v; want %#v", got, err, tc.want)
			}
		})
	}
}
