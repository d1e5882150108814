package provider_test

import (
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

func TestParseRegistryLabel_SplitsOnlyTheRegistrySyntax(t *testing.T) {
	for _, tc := range []struct {
		label             string
		typ, hash, suffix string
		ok                bool
	}{
		{"dp-a-ubyficdjd4-www", "a", "ubyficdjd4", "www", true},
		{"dp-ns-ubyficdjd4--apex", "ns", "ubyficdjd4", "-apex", true},
		{"dp-aaaa-ubyficdjd4--w", "aaaa", "ubyficdjd4", "-w", true},
		{"dp-a-ubyficdjd4-", "", "", "", false},    // no suffix
		{"dp-a-ubyficdjd4www", "", "", "", false},  // no separator after the hash
		{"dp-a-ubyficdjd1-www", "", "", "", false}, // '1' is not base32
		{"dp-A-ubyficdjd4-www", "", "", "", false}, // labels are canonical (lower-case) here
		{"dp--ubyficdjd4-www", "", "", "", false},  // empty type
		{"dp-a-short-www", "", "", "", false},      // hash too short
		{"xp-a-ubyficdjd4-www", "", "", "", false}, // wrong prefix
		{"", "", "", "", false},
	} {
		typ, hash, suffix, ok := provider.ParseRegistryLabel(tc.label)
		if typ != tc.typ || hash != tc.hash || suffix != tc.suffix || ok != tc.ok {
			t.Errorf("ParseRegistryLabel(%q) = %q, %q, %q, %v; want %q, %q, %q, %v",
				tc.label, typ, hash, suffix, ok, tc.typ, tc.hash, tc.suffix, tc.ok)
		}
	}
}

func TestIsRegistryName_LooksAtTheCanonicalFirstLabel(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"dp-a-ubyficdjd4-www.example.test", true},
		{"DP-A-UBYFICDJD4-www.example.test.", true},
		{"www.dp-a-ubyficdjd4-x.example.test", false},
		{"www.example.test", false},
		{"", false},
	} {
		if got := provider.IsRegistryName(tc.name); got != tc.want {
			t.Errorf("IsRegistryName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
