package dnswire

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/miekg/dns"
)

// Fqdn returns name in the dotted canonical form: lower case, without surrounding white space,
// with one trailing dot. The root is ".". It is the form of names on the wire: the server, the
// zone store and the zone-transfer unit key and compare names in it. A name already in that form
// comes back as it is, without allocating. It does not check that name is a domain name.
func Fqdn(name string) string {
	n := strings.ToLower(trimSpace(name))
	if dns.IsFqdn(n) {
		return n
	}
	return n + "."
}

// Dotless returns name in the dotless canonical form: lower case, without surrounding white
// space, without the trailing dot. The root is "". It is the form of names in the API, in status
// and in the provider interface (provider.RecordSet names, zone names, plans, the registry). Only
// a dot that ends a label is dropped: `a\.` keeps its escaped dot. It does not check that name
// is a domain name; provider.ValidateName does.
func Dotless(name string) string {
	n := strings.ToLower(trimSpace(name))
	if dns.IsFqdn(n) {
		return n[:len(n)-1]
	}
	return n
}

// trimSpace is strings.TrimSpace, except that a trailing space escaped by a backslash (`a\ `,
// the presentation form of a label ending in a space) stays.
func trimSpace(name string) string {
	left := strings.TrimLeftFunc(name, unicode.IsSpace)
	t := strings.TrimRightFunc(left, unicode.IsSpace)
	if len(t) < len(left) && left[len(t)] < utf8.RuneSelf && escaped(t, len(t)) {
		return left[:len(t)+1]
	}
	return t
}

// escaped reports whether the byte at i in name follows an odd number of backslashes.
func escaped(name string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && name[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// CanonicalName returns name in the one form the zone store keys owner names by and the server
// looks names up in: lower case, with the trailing dot, and in the presentation form miekg/dns
// gives a name read off the wire, the form query names arrive in. A master file or an API may
// write one label more than one way (RFC 1035 §5.1: "esc\097ped" and "escaped", "\@0" and "@0",
// "'" and "\'" are the same labels); they all give the same result. A name of letters, digits,
// '-', '_', '*' and dots only is the fast path: lower-cased, without the wire round trip nor its
// checks (callers check such names with dns.IsDomainName). Errors are the names of the round trip
// that do not pack (a label over 63 octets, a name over 255, an empty label).
func CanonicalName(name string) (string, error) {
	if plainName(name) {
		return Fqdn(name), nil
	}
	var buf [256]byte
	off, err := dns.PackDomainName(dns.Fqdn(name), buf[:], 0, nil, false)
	if err != nil {
		return "", fmt.Errorf("name %q: %w", name, err)
	}
	out, _, err := dns.UnpackDomainName(buf[:off], 0)
	if err != nil {
		return "", fmt.Errorf("name %q: %w", name, err)
	}
	return strings.ToLower(out), nil
}

// LookupName is CanonicalName for a name the server follows (a CNAME, NS, MX or SRV target):
// a name that does not pack is returned lower-cased, as the key of no node.
func LookupName(name string) string {
	if plainName(name) {
		return Fqdn(name)
	}
	if c, err := CanonicalName(name); err == nil {
		return c
	}
	return Fqdn(name)
}

// plainName reports whether name holds only letters, digits, '-', '_', '*' and dots: bytes that
// a name read off the wire writes as themselves, so that lower-casing alone makes it canonical.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '*' || c == '.') {
			return false
		}
	}
	return true
}

// IsSubdomain reports whether name is zone or below it. Names are compared in either canonical
// form: case-insensitively, with or without the trailing dot, label by label (an escaped dot,
// `a\.b`, is no label boundary). Every name is in the root zone ("." or ""). It does not
// allocate for ASCII names (the server calls it per answer).
func IsSubdomain(name, zone string) bool {
	sub, _ := subdomain(name, zone)
	return sub
}

// IsStrictSubdomain reports whether name is below zone and not zone itself (a delegation point,
// for example).
func IsStrictSubdomain(name, zone string) bool {
	sub, same := subdomain(name, zone)
	return sub && !same
}

// subdomain reports whether name is zone or below it, and whether it is zone.
func subdomain(name, zone string) (sub, same bool) {
	n, z := bare(name), bare(zone)
	if !isASCII(n) || !isASCII(z) {
		n, z = strings.ToLower(n), strings.ToLower(z)
	}
	switch {
	case len(n) == len(z) && equalFoldASCII(n, z):
		return true, true
	case z == "":
		return true, false
	case len(n) <= len(z):
		return false, false
	}
	dot := len(n) - len(z) - 1
	return n[dot] == '.' && !escaped(n, dot) && equalFoldASCII(n[dot+1:], z), false
}

// bare is name without surrounding white space and without its trailing dot, not lower-cased.
func bare(name string) string {
	n := trimSpace(name)
	if dns.IsFqdn(n) {
		return n[:len(n)-1]
	}
	return n
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// equalFoldASCII reports whether a and b are equal with ASCII letters folded to lower case.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Parent returns the name one label up from name, lower-cased, in name's form: "a.b.test." gives
// "b.test.", "a.b.test" gives "b.test". A single-label name and the root give "" (the root is
// never returned, so a loop "for p := Parent(n); p != ""; p = Parent(p)" stops below it). An
// escaped dot (`a\.b`) is no label boundary.
func Parent(name string) string {
	n := strings.ToLower(trimSpace(name))
	for i := 0; i < len(n); i++ {
		switch n[i] {
		case '\\':
			i++
		case '.':
			return n[i+1:]
		}
	}
	return ""
}

// CanonicalKey returns name's labels from the right joined by a byte below every label byte, so
// that comparing the keys of lower-case names orders the names as RFC 4034 §6.1 canonical order
// does (label by label from the right, a parent before its children).
func CanonicalKey(name string) string {
	labels := dns.SplitDomainName(name)
	slices.Reverse(labels)
	return strings.Join(labels, "\x00")
}
