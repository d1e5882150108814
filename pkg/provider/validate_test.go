package provider

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// upper is a SideCheck that canonicalises by upper-casing the type and fails a set named "bad".
func upper(_ Action, which string, rs RecordSet) (RecordSet, error) {
	if rs.Name == "bad" {
		return rs, fmt.Errorf("%w: %s is bad", ErrNotCapable, which)
	}
	rs.Type = strings.ToUpper(rs.Type)
	return rs, nil
}

func TestValidateChanges_ChecksEachChangeByItsAction(t *testing.T) {
	a := &RecordSet{Name: "a", Type: "a", Targets: []string{"192.0.2.1"}}
	b := &RecordSet{Name: "b", Type: "a", Targets: []string{"192.0.2.1"}}
	bad := &RecordSet{Name: "bad", Type: "a"}
	for _, tc := range []struct {
		name    string
		changes []Change
		want    error  // nil: valid
		msg     string // in the error, or in the canonical output
	}{
		{"empty", nil, nil, ""},
		{"create, update and delete, sides canonicalised", []Change{{Action: ActionCreate, After: a},
			{Action: ActionUpdate, Before: a, After: a}, {Action: ActionDelete, Before: b}}, nil, "A A A A"},
		{"create without After", []Change{{Action: ActionCreate, Before: a}}, ErrInvalidChange, "change 0: invalid change: Create change without After"},
		{"delete without Before", []Change{{Action: ActionCreate, After: a}, {Action: ActionDelete, After: a}}, ErrInvalidChange, "change 1: invalid change: Delete change without Before"},
		{"update without Before", []Change{{Action: ActionUpdate, After: a}}, ErrInvalidChange, "without Before"},
		{"update without After", []Change{{Action: ActionUpdate, Before: a}}, ErrInvalidChange, "without After"},
		{"update changing its key", []Change{{Action: ActionUpdate, Before: a, After: b}}, ErrInvalidChange, "update must keep the key: a/A -> b/A"},
		{"unknown action", []Change{{Action: "Upsert", After: a}}, ErrInvalidChange, `unknown action "Upsert"`},
		{"the side check's error, Before first", []Change{{Action: ActionUpdate, Before: bad, After: bad}}, ErrNotCapable, "change 0: not supported by provider: Before is bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ValidateChanges(tc.changes, upper)
			if tc.want != nil {
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("error %v, want %v containing %q", err, tc.want, tc.msg)
				}
				return
			}
			if err != nil || len(got) != len(tc.changes) {
				t.Fatalf("ValidateChanges = %v, %v", got, err)
			}
			var types []string
			for i, c := range got {
				if c.Action != tc.changes[i].Action {
					t.Errorf("change %d: action %s, want %s", i, c.Action, tc.changes[i].Action)
				}
				for _, rs := range []*RecordSet{c.Before, c.After} {
					if rs != nil {
						types = append(types, rs.Type)
					}
				}
			}
			if s := strings.Join(types, " "); s != tc.msg {
				t.Errorf("canonical types %q, want %q", s, tc.msg)
			}
			if len(tc.changes) > 0 && tc.changes[0].After.Type != "a" {
				t.Error("the input was modified")
			}
		})
	}
}

func TestValidateChanges_KeepsShared(t *testing.T) {
	a := &RecordSet{Name: "a", Type: "a", Targets: []string{"192.0.2.1"}}
	out, err := ValidateChanges([]Change{{Action: ActionCreate, After: a, Shared: true}, {Action: ActionDelete, Before: a}}, upper)
	if err != nil {
		t.Fatal(err)
	}
	if !out[0].Shared || out[1].Shared {
		t.Fatalf("Shared = %v, %v; want true, false (as given)", out[0].Shared, out[1].Shared)
	}
}
