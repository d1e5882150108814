package provider

import (
	"errors"
	"testing"
)

func TestValidateName_AcceptsHostnamesUnderscoresAndLeadingWildcard(t *testing.T) {
	long63 := "a123456789012345678901234567890123456789012345678901234567890bc"
	for _, tc := range []struct {
		in    string
		want  string
		valid bool
	}{
		{"www.example.test", "www.example.test", true},
		{"_acme-challenge.Example.test.", "_acme-challenge.example.test", true},
		{"*.example.test", "*.example.test", true},
		{long63 + ".test", long63 + ".test", true},
		{"a.*.example.test", "", false},
		{"*x.example.test", "", false},
		{"a..example.test", "", false},
		{"", "", false},
		{"a b.example.test", "", false},
		{"a/b.example.test", "", false},
		{`a\.b.example.test`, "", false},
		{long63 + "x.test", "", false},
	} {
		got, err := ValidateName(tc.in)
		if tc.valid {
			if err != nil || got != tc.want {
				t.Errorf("ValidateName(%q) = %q, %v; want %q, nil", tc.in, got, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidChange) {
			t.Errorf("ValidateName(%q) error = %v, want ErrInvalidChange", tc.in, err)
		}
	}
}
