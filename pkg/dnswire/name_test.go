package dnswire

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func TestCanonicalName_ResolvesEscapesOfOrdinaryCharacters(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"escaped.test", "escaped.test."},
		{`esc\097ped.Test.`, "escaped.test."},
		{`\069SC\aPED.test.`, "escaped.test."},
		{`a\.b.test.`, `a\.b.test.`},
		{`a\046b.test.`, `a\.b.test.`},
		{`\@0.test.`, `\@0.test.`},
		{`x\000y.test.`, `x\000y.test.`},
	} {
		got, err := CanonicalName(c.in)
		if err != nil || got != c.want {
			t.Errorf("CanonicalName(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := CanonicalName(`\097` + strings.Repeat("a", 63) + ".test."); err == nil {
		t.Error("a 64-octet label is a name")
	}
}

// IsSubdomain agrees with miekg/dns's on canonical names, escaped dots and backslashes included.
func TestIsSubdomain_AgreesWithMiekg(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "b", "test", `\.`, `\\`, `a\.`, `\\\.`, "x"}
	name := func() string {
		labels := make([]string, 1+rnd.IntN(3))
		for i := range labels {
			for range 1 + rnd.IntN(3) {
				labels[i] += pieces[rnd.IntN(len(pieces))]
			}
		}
		return strings.Join(labels, ".") + "."
	}
	for range 20000 {
		parent, child := name(), name()
		if rnd.IntN(2) == 0 {
			child = strings.TrimSuffix(name(), ".") + "." + parent
		}
		if got, want := IsSubdomain(child, parent), dns.IsSubDomain(parent, child); got != want {
			t.Fatalf("IsSubdomain(%q, %q) = %v, miekg/dns %v", child, parent, got, want)
		}
	}
	if !IsSubdomain("a.test.", ".") || !IsSubdomain("test.", "test.") || IsSubdomain("test.", "a.test.") {
		t.Error("the root, a name itself or a parent")
	}
}
