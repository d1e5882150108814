package provider

import (
	"errors"
	"testing"
)

func TestCanonicalName_LowerCasesAndDropsTrailingDot(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"www.example.test", "www.example.test"},
		{"WWW.Example.TEST.", "www.example.test"},
		{" www.example.test. ", "www.example.test"},
		{".", ""},
		{"", ""},
	} {
		if got := CanonicalName(tc.in); got != tc.want {
			t.Errorf("CanonicalName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFqdn_AddsOneTrailingDot(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Example.test", "example.test."},
		{"example.test.", "example.test."},
		{"", "."},
	} {
		if got := Fqdn(tc.in); got != tc.want {
			t.Errorf("Fqdn(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

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

func TestIsSubdomain_ComparesWholeLabels(t *testing.T) {
	for _, tc := range []struct {
		name, zone  string
		sub, strict bool
	}{
		{"example.test", "example.test", true, false},
		{"www.example.test", "example.test", true, true},
		{"WWW.Example.Test.", "example.test.", true, true},
		{"a.b.example.test", "example.test", true, true},
		{"aexample.test", "example.test", false, false},
		{"example.test", "www.example.test", false, false},
		{"other.test", "example.test", false, false},
		{"anything.test", "", true, true},
	} {
		if got := IsSubdomain(tc.name, tc.zone); got != tc.sub {
			t.Errorf("IsSubdomain(%q, %q) = %v, want %v", tc.name, tc.zone, got, tc.sub)
		}
		if got := IsStrictSubdomain(tc.name, tc.zone); got != tc.strict {
			t.Errorf("IsStrictSubdomain(%q, %q) = %v, want %v", tc.name, tc.zone, got, tc.strict)
		}
	}
}

func TestParent_DropsTheFirstLabel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a.b.test", "b.test"},
		{"test", ""},
		{"", ""},
		{"A.B.test.", "b.test"},
	} {
		if got := Parent(tc.in); got != tc.want {
			t.Errorf("Parent(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
