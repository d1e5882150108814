package dnswire

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// The reference implementations below are the name helpers the two layers had before this
// package held both forms: the provider's (dotless, white space trimmed, escapes not
// understood) and this package's (dotted, for names already in canonical form, escapes
// understood). The property tests check that the one vocabulary gives what each gave on the
// names its callers pass.

func refProviderDotless(name string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
}

func refProviderIsSubdomain(name, zone string) bool {
	n, z := refProviderDotless(name), refProviderDotless(zone)
	return z == "" || n == z || strings.HasSuffix(n, "."+z)
}

func refProviderParent(name string) string {
	n := refProviderDotless(name)
	if i := strings.IndexByte(n, '.'); i >= 0 {
		return n[i+1:]
	}
	return ""
}

func refWireFqdn(name string) string { return dns.Fqdn(strings.ToLower(name)) }

func refWireParent(name string) string {
	off, end := dns.NextLabel(name, 0)
	if end {
		return ""
	}
	return name[off:]
}

// genName returns a random name: one to four labels of mixed case, sometimes with surrounding
// white space, sometimes with a trailing dot, sometimes the root; with escapes when escapes is set.
func genName(rnd *rand.Rand, escapes bool) string {
	pieces := []string{"a", "B", "test", "Example", "x-y", "_tcp", "*", "0"}
	if escapes {
		pieces = append(pieces, `\.`, `\\`, `a\.`, `\\\.`, `\065`, `\ `)
	}
	switch rnd.IntN(12) {
	case 0:
		return "."
	case 1:
		return ""
	}
	labels := make([]string, 1+rnd.IntN(4))
	for i := range labels {
		for range 1 + rnd.IntN(2) {
			labels[i] += pieces[rnd.IntN(len(pieces))]
		}
	}
	n := strings.Join(labels, ".")
	if rnd.IntN(2) == 0 {
		n += "."
	}
	if !escapes && rnd.IntN(4) == 0 {
		n = " " + n + "\t"
	}
	return n
}

// genPair returns a name and a zone, the name below the zone half of the time.
func genPair(rnd *rand.Rand, escapes bool) (string, string) {
	name, zone := genName(rnd, escapes), genName(rnd, escapes)
	switch rnd.IntN(4) {
	case 0:
		name = strings.TrimSuffix(strings.TrimSpace(genName(rnd, escapes)), ".") + "." + strings.TrimSpace(zone)
	case 1:
		name = strings.ToUpper(strings.TrimSpace(zone)) + "."
	}
	return name, zone
}

// Without escapes, the dotless form, the dotted form, IsSubdomain, IsStrictSubdomain and Parent
// give what the provider's helpers gave, for names in any case, with or without the trailing
// dot, with surrounding white space, and the root.
func TestForms_AgreeWithTheProvidersHelpersOnNamesWithoutEscapes(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 50000 {
		name, zone := genPair(rnd, false)
		if got, want := Dotless(name), refProviderDotless(name); got != want {
			t.Fatalf("Dotless(%q) = %q, want %q", name, got, want)
		}
		if got, want := Fqdn(name), refProviderDotless(name)+"."; got != want {
			t.Fatalf("Fqdn(%q) = %q, want %q", name, got, want)
		}
		if got, want := IsSubdomain(name, zone), refProviderIsSubdomain(name, zone); got != want {
			t.Fatalf("IsSubdomain(%q, %q) = %v, want %v", name, zone, got, want)
		}
		strict := refProviderIsSubdomain(name, zone) && refProviderDotless(name) != refProviderDotless(zone)
		if got := IsStrictSubdomain(name, zone); got != strict {
			t.Fatalf("IsStrictSubdomain(%q, %q) = %v, want %v", name, zone, got, strict)
		}
		if d := Dotless(name); Parent(d) != refProviderParent(name) {
			t.Fatalf("Parent(%q) = %q, want %q", d, Parent(d), refProviderParent(name))
		}
	}
}

// On names in the form the wire gives (escapes included, no surrounding white space), Fqdn is
// what the wire helper gave, and on names in dotted canonical form IsSubdomain is miekg/dns's
// IsSubDomain and Parent is the wire helper's.
func TestForms_AgreeWithTheWireHelpersOnNamesWithEscapes(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	for range 50000 {
		name, zone := genPair(rnd, true)
		if got, want := Fqdn(name), refWireFqdn(name); got != want {
			t.Fatalf("Fqdn(%q) = %q, want %q", name, got, want)
		}
		if got := Dotless(name) + "."; got != refWireFqdn(name) && Dotless(name) != "" {
			t.Fatalf("Dotless(%q) = %q, not the dotted form %q without its dot", name, got, refWireFqdn(name))
		}
		n, z := refWireFqdn(name), refWireFqdn(zone)
		if got, want := IsSubdomain(n, z), dns.IsSubDomain(z, n); got != want {
			t.Fatalf("IsSubdomain(%q, %q) = %v, miekg/dns %v", n, z, got, want)
		}
		if got, want := Parent(n), refWireParent(n); got != want {
			t.Fatalf("Parent(%q) = %q, want %q", n, got, want)
		}
	}
}

// The two forms of a name hold the same name: each converts to the other and back.
func TestForms_RoundTrip(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		name := genName(rnd, rnd.IntN(2) == 0)
		d, f := Dotless(name), Fqdn(name)
		if Fqdn(d) != f || Dotless(f) != d || Fqdn(f) != f || Dotless(d) != d {
			t.Fatalf("%q: Dotless %q and Fqdn %q do not convert into each other", name, d, f)
		}
		if !IsSubdomain(d, f) || !IsSubdomain(f, d) || IsStrictSubdomain(d, f) {
			t.Fatalf("%q: its forms %q and %q are not the same name", name, d, f)
		}
	}
}

func TestForms_Examples(t *testing.T) {
	for _, c := range []struct{ in, dotless, fqdn, parent string }{
		{"WWW.Example.TEST.", "www.example.test", "www.example.test.", "example.test."},
		{" www.example.test ", "www.example.test", "www.example.test.", "example.test"},
		{".", "", ".", ""},
		{"", "", ".", ""},
		{"test.", "test", "test.", ""},
		{`a\.b.test.`, `a\.b.test`, `a\.b.test.`, "test."},
		{`a\.`, `a\.`, `a\..`, ""},
		{`a\ `, `a\ `, `a\ .`, ""},
	} {
		if d, f, p := Dotless(c.in), Fqdn(c.in), Parent(c.in); d != c.dotless || f != c.fqdn || p != c.parent {
			t.Errorf("%q: Dotless %q, Fqdn %q, Parent %q; want %q, %q, %q", c.in, d, f, p, c.dotless, c.fqdn, c.parent)
		}
	}
	for _, c := range []struct {
		name, zone  string
		sub, strict bool
	}{
		{"www.example.test", "Example.Test.", true, true},
		{"aexample.test", "example.test", false, false},
		{`a\.example.test.`, "example.test.", false, false},
		{"example.test.", "example.test", true, false},
		{"anything.test", "", true, true},
		{"anything.test", ".", true, true},
		{"", ".", true, false},
	} {
		if IsSubdomain(c.name, c.zone) != c.sub || IsStrictSubdomain(c.name, c.zone) != c.strict {
			t.Errorf("IsSubdomain/IsStrictSubdomain(%q, %q) = %v/%v, want %v/%v", c.name, c.zone,
				IsSubdomain(c.name, c.zone), IsStrictSubdomain(c.name, c.zone), c.sub, c.strict)
		}
	}
}

func TestForms_DoNotAllocateOnCanonicalNames(t *testing.T) {
	n, z := "www.example.test.", "example.test."
	if a := testing.AllocsPerRun(100, func() {
		_ = Fqdn(n)
		_ = Dotless(n)
		_ = IsSubdomain(n, z)
		_ = Parent(n)
	}); a != 0 {
		t.Errorf("%v allocations per run, want 0", a)
	}
}
