package dnswire

import (
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// Canonical returns name lower-case with the trailing dot (an FQDN), the form the zone store
// keys owners and origins by. It does not check that name is a domain name.
func Canonical(name string) string { return dns.Fqdn(strings.ToLower(name)) }

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
		return Canonical(name), nil
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
		return Canonical(name)
	}
	if c, err := CanonicalName(name); err == nil {
		return c
	}
	return Canonical(name)
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

// IsSubDomain reports whether child is parent or below it, for names in one canonical form
// (CanonicalName: lower case, FQDN), without allocating (miekg/dns's IsSubDomain splits both
// names). A dot escaped in a label ("a\.b") is no label boundary.
func IsSubDomain(parent, child string) bool {
	switch {
	case parent == "." || child == parent:
		return true
	case len(child) <= len(parent) || child[len(child)-len(parent):] != parent:
		return false
	}
	dot := len(child) - len(parent) - 1
	if child[dot] != '.' {
		return false
	}
	escapes := 0 // backslashes right before the dot: an odd count escapes it
	for i := dot - 1; i >= 0 && child[i] == '\\'; i-- {
		escapes++
	}
	return escapes%2 == 0
}

// Parent returns the FQDN one label up from name (an FQDN), "" at the root.
func Parent(name string) string {
	off, end := dns.NextLabel(name, 0)
	if end {
		return ""
	}
	return name[off:]
}

// CanonicalKey returns name's labels from the right joined by a byte below every label byte, so
// that comparing the keys of lower-case names orders the names as RFC 4034 §6.1 canonical order
// does (label by label from the right, a parent before its children).
func CanonicalKey(name string) string {
	labels := dns.SplitDomainName(name)
	slices.Reverse(labels)
	return strings.Join(labels, "\x00")
}
