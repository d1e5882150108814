package webhook

import (
	"strings"
	"testing"
)

// FuzzNormalize: normalize's shortcut for plain ASCII names gives what external-dns's IDNA
// profile gives (lookupProfile.ToUnicode of the name without its trailing dot), for any input.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"www.Example.com.", "_acme-challenge.a.test", "*.x.test", "xn--mnchen-3ya.de", "a.XN--MNCHEN-3YA.de",
		"münchen.de", "a b.test", "a..b", ".", "", "-a-.test", "a\x00b", "A\\.B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := lookupProfile.ToUnicode(strings.TrimSuffix(s, "."))
		if got := normalize(s); got != want {
			t.Fatalf("normalize(%q) = %q, the profile gives %q", s, got, want)
		}
	})
}
